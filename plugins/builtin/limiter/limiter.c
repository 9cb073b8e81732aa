/*
 * limiter.c: agentrt's built-in loop limiter, a hook plugin (C, plugins/sdk/c) with the semantics of strands-sglang's
 * LoopLimiter (plugins/ABI.md section 5.4):
 *
 *   - max_tool_iters: at most N assistant responses with tool calls; checked when a tool result is added, so the
 *     trajectory ends cleanly on the model's tool-calling response and that turn's results are never rendered;
 *   - max_tool_calls: at most N tool calls in total, checked at the same boundary;
 *   - max_parallel_tool_calls: at most N calls of one response run; the extra ones are cancelled with a message
 *     to the model;
 *   - max_messages: at most N conversation messages, checked when a user or tool message lands (and on the
 *     initial conversation).
 *
 * Each limit is optional (absent or 0 = none). The limiter keeps no state: the runtime's counts suffice.
 *
 * It runs on every user or tool message_added (message_roles: the host skips the others) and before_tool_call, so it
 * is written in C: a call through the host costs ~3.5 us,
 * where the Go SDK guest it replaced took ~12 us (bench/results/plugin-host.md). It reads its input the way that
 * guest did: numbers as the Go SDK's fastjson.Int (integral floats count, beyond int64 saturates), keys and strings
 * decoded as fastjson.Unquote, the last of duplicate keys wins (but for "event", which the C SDK dispatches on), and
 * an unknown config key is quoted as Go's %q. Its answers and error messages are the Go guest's, byte for byte;
 * runtime/plugin/limiter_test.go pins them.
 *
 * Built by scripts/wasm.d/15-c-builtins.sh into limiter.wasm, embedded by plugins/builtin/embed.go.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrt.h"
#include "isprint.h"

/* ---- reading JSON the SDK has already validated ---- */

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static const char *skip_ws(const char *p, const char *e) {
  while (p < e && is_ws(*p)) p++;
  return p;
}

/* skip_string returns the end of the string literal at p, and sets *esc if it has an escape. It looks for a quote
 * or backslash 8 bytes at a time: message contents are the longest strings of an event. */
static const char *skip_string(const char *p, const char *e, int *esc) {
  const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
  p++;
  for (;;) {
    while (e - p >= 8) {
      uint64_t w, q, b;
      memcpy(&w, p, 8);
      q = w ^ (ones * '"');
      b = w ^ (ones * '\\');
      /* a zero byte of q or b; the lowest flagged byte is always a true one */
      uint64_t hit = ((q - ones) & ~q & highs) | ((b - ones) & ~b & highs);
      if (hit) {
        p += __builtin_ctzll(hit) / 8;
        break;
      }
      p += 8;
    }
    while (p < e && *p != '"' && *p != '\\') p++;
    if (p >= e) return e;
    if (*p == '"') return p + 1;
    *esc = 1;
    p += 2; /* an escape: the escaped byte cannot end the string */
  }
}

/* skip_value returns the end of the value at p. */
static const char *skip_value(const char *p, const char *e) {
  int esc;
  if (p >= e) return e;
  if (*p == '"') return skip_string(p, e, &esc);
  if (*p == '{' || *p == '[') {
    int depth = 0;
    while (p < e) {
      char c = *p;
      if (c == '"') {
        p = skip_string(p, e, &esc);
        continue;
      }
      p++;
      if (c == '{' || c == '[') {
        depth++;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        break;
      }
    }
    return p;
  }
  while (p < e && *p != ',' && *p != '}' && *p != ']' && !is_ws(*p)) p++;
  return p;
}

/* members walks the members of an object in order: next_key, then take_value or a nested walk of the value. */
typedef struct {
  const char *p, *e; /* the next byte to read; the end of the enclosing input */
} members;

/* key is a member's key: its string literal, and whether that has escapes. */
typedef struct {
  agentrt_json lit;
  int esc;
} key;

/* members_of starts a walk of the object v (none if v is not an object). */
static members members_of(agentrt_json v) {
  members m = {NULL, NULL};
  if (agentrt_json_kind(v) == AGENTRT_JSON_OBJECT) {
    m.p = v.ptr + 1;
    m.e = v.ptr + v.len;
  }
  return m;
}

/* next_key stores the next key (a string literal, quotes included) and leaves m at its value; 0 at the end of the
 * object, with m just past its closing brace. */
static int next_key(members *m, key *k) {
  const char *p = skip_ws(m->p, m->e);
  if (p < m->e && *p == ',') p = skip_ws(p + 1, m->e);
  if (p >= m->e || *p != '"') {
    m->p = p < m->e ? p + 1 : m->e; /* past '}' */
    return 0;
  }
  k->esc = 0;
  const char *ke = skip_string(p, m->e, &k->esc);
  k->lit.ptr = p;
  k->lit.len = (size_t)(ke - p);
  p = skip_ws(ke, m->e);
  m->p = skip_ws(p + 1, m->e); /* past ':' */
  return 1;
}

/* take_value returns the value m is at and moves past it. */
static agentrt_json take_value(members *m) {
  const char *ve = skip_value(m->p, m->e);
  agentrt_json v = {m->p, (size_t)(ve - m->p)};
  m->p = ve;
  return v;
}

/* nested starts a walk of the value m is at, in the same pass, if it is an object: walk it with next_key to its
 * end, then carry on with m = the nested walk's m. Otherwise it skips the value and returns 0. */
static int nested(members *m, members *in) {
  if (m->p < m->e && *m->p == '{') {
    in->p = m->p + 1;
    in->e = m->e;
    return 1;
  }
  take_value(m);
  return 0;
}

/* ---- strings, as Go's fastjson.Unquote decodes them and %q quotes them ---- */

static void put_utf8(char **o, uint32_t r) {
  unsigned char *d = (unsigned char *)*o;
  if (r < 0x80) {
    *d++ = (unsigned char)r;
  } else if (r < 0x800) {
    *d++ = (unsigned char)(0xC0 | r >> 6);
    *d++ = (unsigned char)(0x80 | (r & 0x3F));
  } else if (r < 0x10000) {
    *d++ = (unsigned char)(0xE0 | r >> 12);
    *d++ = (unsigned char)(0x80 | (r >> 6 & 0x3F));
    *d++ = (unsigned char)(0x80 | (r & 0x3F));
  } else {
    *d++ = (unsigned char)(0xF0 | r >> 18);
    *d++ = (unsigned char)(0x80 | (r >> 12 & 0x3F));
    *d++ = (unsigned char)(0x80 | (r >> 6 & 0x3F));
    *d++ = (unsigned char)(0x80 | (r & 0x3F));
  }
  *o = (char *)d;
}

/* decode_utf8 decodes the rune at [p, e) as Go's utf8.DecodeRune: an invalid or short sequence is U+FFFD of
 * width 1. */
static uint32_t decode_utf8(const unsigned char *p, const unsigned char *e, int *width) {
  unsigned char c = p[0];
  *width = 1;
  if (c < 0x80) return c;
  int n;
  uint32_t r;
  unsigned char lo = 0x80, hi = 0xBF; /* the range of the second byte */
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, r = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, r = c & 0x0F;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F; /* no surrogates */
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, r = c & 0x07;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0xFFFD;
  }
  if (e - p < n || p[1] < lo || p[1] > hi) return 0xFFFD;
  for (int i = 1; i < n; i++) {
    if (i > 1 && (p[i] < 0x80 || p[i] > 0xBF)) return 0xFFFD;
    r = r << 6 | (p[i] & 0x3F);
  }
  *width = n;
  return r;
}

static int hex4(const char *p, const char *e, uint32_t *out) {
  if (e - p < 4) return 0;
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    if (c >= '0' && c <= '9') {
      v = v * 16 + (uint32_t)(c - '0');
    } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
      v = v * 16 + (uint32_t)((c | 0x20) - 'a' + 10);
    } else {
      return 0;
    }
  }
  *out = v;
  return 1;
}

/* unquote decodes the string literal lit into dst (room for 3 * lit.len bytes) and returns the length: a lone
 * surrogate escape and each byte of invalid UTF-8 become U+FFFD. */
static size_t unquote(agentrt_json lit, char *dst) {
  const char *s = lit.ptr + 1, *e = lit.ptr + lit.len - 1;
  char *o = dst;
  while (s < e) {
    unsigned char c = (unsigned char)*s;
    if (c == '\\') {
      char x = s[1];
      s += 2;
      switch (x) {
      case 'b': *o++ = '\b'; break;
      case 'f': *o++ = '\f'; break;
      case 'n': *o++ = '\n'; break;
      case 'r': *o++ = '\r'; break;
      case 't': *o++ = '\t'; break;
      case 'u': {
        uint32_t r = 0, r2;
        hex4(s, e, &r);
        s += 4;
        if (r >= 0xD800 && r < 0xE000) {
          if (r < 0xDC00 && e - s >= 6 && s[0] == '\\' && s[1] == 'u' && hex4(s + 2, e, &r2) && r2 >= 0xDC00 &&
              r2 < 0xE000) {
            put_utf8(&o, 0x10000 + ((r - 0xD800) << 10) + (r2 - 0xDC00));
            s += 6;
            break;
          }
          r = 0xFFFD;
        }
        put_utf8(&o, r);
        break;
      }
      default: *o++ = x; /* " \ / */
      }
    } else if (c < 0x80) {
      *o++ = (char)c;
      s++;
    } else {
      int w;
      decode_utf8((const unsigned char *)s, (const unsigned char *)e, &w);
      if (w == 1) { /* invalid */
        put_utf8(&o, 0xFFFD);
      } else {
        memcpy(o, s, (size_t)w);
        o += w;
      }
      s += w;
    }
  }
  return (size_t)(o - dst);
}

/* string_is reports whether the JSON value lit is a string that decodes to the ASCII want (Go's fastjson.KeyEquals);
 * esc: whether lit may have escapes. Escapes only shorten a literal (and invalid UTF-8 never decodes to ASCII), so a
 * literal as long as want's must match byte for byte, and only a longer one with escapes needs decoding. */
#define string_is(lit, want) string_is_n(lit, 1, want, sizeof(want) - 1)
#define key_is(k, want) string_is_n((k).lit, (k).esc, want, sizeof(want) - 1)

static int string_is_n(agentrt_json lit, int esc, const char *want, size_t n) {
  if (lit.len < n + 2 || lit.ptr[0] != '"') return 0;
  if (lit.len == n + 2) return memcmp(lit.ptr + 1, want, n) == 0;
  if (!esc || !memchr(lit.ptr, '\\', lit.len)) return 0;
  char small[64], *buf = lit.len * 3 <= sizeof small ? small : malloc(lit.len * 3);
  if (!buf) return 0;
  size_t m = unquote(lit, buf);
  int eq = m == n && memcmp(buf, want, n) == 0;
  if (buf != small) free(buf);
  return eq;
}

static int is_print(uint32_t r) {
  if (r < 0x80) return r >= 0x20 && r < 0x7F;
  size_t lo = 0, hi = sizeof print_ranges / sizeof print_ranges[0];
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r < print_ranges[mid][0]) {
      hi = mid;
    } else if (r > print_ranges[mid][1]) {
      lo = mid + 1;
    } else {
      return 1;
    }
  }
  return 0;
}

/* quote writes the valid UTF-8 s[0:n] as Go's strconv.Quote does into dst (room for 4 * n + 2 bytes: \xHH is the
 * longest escape per byte) and returns the length. */
static size_t quote(const char *s, size_t n, char *dst) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s, *e = p + n;
  char *o = dst;
  *o++ = '"';
  while (p < e) {
    int w;
    uint32_t r = decode_utf8(p, e, &w);
    if (r == '"' || r == '\\') {
      *o++ = '\\';
      *o++ = (char)r;
    } else if (is_print(r)) {
      memcpy(o, p, (size_t)w);
      o += w;
    } else {
      const char *esc = NULL;
      switch (r) {
      case '\a': esc = "\\a"; break;
      case '\b': esc = "\\b"; break;
      case '\f': esc = "\\f"; break;
      case '\n': esc = "\\n"; break;
      case '\r': esc = "\\r"; break;
      case '\t': esc = "\\t"; break;
      case '\v': esc = "\\v"; break;
      }
      if (esc) {
        memcpy(o, esc, 2);
        o += 2;
      } else {
        int digits = r < 0x80 ? 2 : r < 0x10000 ? 4 : 8;
        *o++ = '\\';
        *o++ = digits == 2 ? 'x' : digits == 4 ? 'u' : 'U';
        for (int sh = (digits - 1) * 4; sh >= 0; sh -= 4) *o++ = hex[r >> sh & 0xF];
      }
    }
    p += w;
  }
  *o++ = '"';
  return (size_t)(o - dst);
}

/* ---- numbers, as Go's fastjson.Int reads them ---- */

/* json_int stores the integer v in *out and returns 1; 0 if v is not a number or not integral. As in Go, a float
 * spelling of an integer counts (2.0, 1e1), and a float beyond int64 saturates before the integral check. */
static int json_int(agentrt_json v, int64_t *out) {
  if (agentrt_json_kind(v) != AGENTRT_JSON_NUMBER) return 0;
  const char *p = v.ptr, *e = v.ptr + v.len;
  int neg = *p == '-';
  uint64_t n = 0, max = neg ? (uint64_t)1 << 63 : ((uint64_t)1 << 63) - 1;
  const char *d = p + neg;
  while (d < e && *d >= '0' && *d <= '9' && n <= (max - (uint64_t)(*d - '0')) / 10) n = n * 10 + (uint64_t)(*d++ - '0');
  if (d == e) {
    *out = neg ? (int64_t)(0 - n) : (int64_t)n;
    return 1;
  }
  char small[64], *buf = v.len < sizeof small ? small : malloc(v.len + 1);
  if (!buf) return 0;
  memcpy(buf, p, v.len);
  buf[v.len] = 0;
  double f = strtod(buf, NULL);
  if (buf != small) free(buf);
  if (isinf(f)) return 0; /* strconv.ParseFloat: out of range */
  int64_t i;
  if (f >= 9223372036854775808.0) {
    i = INT64_MAX;
  } else if (f < -9223372036854775808.0) {
    i = INT64_MIN;
  } else {
    i = (int64_t)f;
  }
  if ((double)i != f) return 0;
  *out = i;
  return 1;
}

/* ---- the limiter ---- */

/* limits is the config, set once per instance by configure (configuration, not per-episode state); 0 = no limit. */
static struct {
  int64_t max_tool_iters, max_tool_calls, max_parallel_tool_calls, max_messages;
} cfg;

static void configure(agentrt_json config, agentrt_result *r) {
  memset(&cfg, 0, sizeof cfg);
  agentrt_json_type t = agentrt_json_kind(config);
  if (t == AGENTRT_JSON_NULL || t == AGENTRT_JSON_INVALID) return;
  if (t != AGENTRT_JSON_OBJECT) {
    /* the Go guest's message, fastjson's error included */
    agentrt_result_error(r, "bad_config", "config must be a JSON object: fastjson: expected an object at offset 0");
    return;
  }
  static const char *const names[] = {"max_tool_iters", "max_tool_calls", "max_parallel_tool_calls", "max_messages"};
  int64_t *const dsts[] = {&cfg.max_tool_iters, &cfg.max_tool_calls, &cfg.max_parallel_tool_calls, &cfg.max_messages};
  members m = members_of(config);
  key k;
  while (next_key(&m, &k)) {
    agentrt_json v = take_value(&m);
    int i = 0;
    while (i < 4 && !string_is_n(k.lit, k.esc, names[i], strlen(names[i]))) i++;
    if (i == 4) {
      char *dec = malloc(k.lit.len * 3), *q = dec ? malloc(k.lit.len * 12 + 2) : NULL;
      if (!q) {
        free(dec);
        agentrt_result_error(r, "bad_config", "unknown config key (out of memory quoting it)");
        return;
      }
      size_t qn = quote(dec, unquote(k.lit, dec), q);
      agentrt_result_error(r, "bad_config",
                           "unknown key %.*s (want max_tool_iters, max_tool_calls, max_parallel_tool_calls, "
                           "max_messages)",
                           (int)qn, q);
      free(dec);
      free(q);
      return;
    }
    if (agentrt_json_kind(v) == AGENTRT_JSON_NULL) continue;
    int64_t n;
    if (!json_int(v, &n) || n < 0) {
      agentrt_result_error(r, "bad_config", "%s must be a non-negative integer, got %.*s", names[i], (int)v.len, v.ptr);
      return;
    }
    *dsts[i] = n;
  }
}

/* int_or decodes v as an integer, or returns def (Go's Value.IntOr). */
static int64_t int_or(agentrt_json v, int64_t def) {
  int64_t n;
  return json_int(v, &n) ? n : def;
}

static void stop(agentrt_result *r, const char *reason, const char *format, int64_t n) {
  char msg[96];
  snprintf(msg, sizeof msg, format, (long long)n);
  agentrt_hook_stop(r, reason, msg);
}

static void handle(const agentrt_event *ev, agentrt_result *r) {
  /* One pass over the event, into counts, message and tool_call. As in the Go SDK, the last of duplicate keys
   * wins, and a member of the wrong type reads as absent. */
  int64_t messages = 0, tool_iters = 0, tool_calls = 0, index = -1;
  agentrt_json role = {0};
  key k;
  members m = members_of(ev->raw), in;
  while (next_key(&m, &k)) {
    if (key_is(k, "counts")) {
      messages = tool_iters = tool_calls = 0;
      if (!nested(&m, &in)) continue;
      while (next_key(&in, &k)) {
        agentrt_json v = take_value(&in);
        if (key_is(k, "messages")) {
          messages = int_or(v, 0);
        } else if (key_is(k, "tool_iters")) {
          tool_iters = int_or(v, 0);
        } else if (key_is(k, "tool_calls")) {
          tool_calls = int_or(v, 0);
        }
      }
      m.p = in.p;
    } else if (key_is(k, "message")) {
      role = (agentrt_json){0};
      if (!nested(&m, &in)) continue;
      while (next_key(&in, &k)) {
        agentrt_json v = take_value(&in);
        if (key_is(k, "role")) role = v;
      }
      m.p = in.p;
    } else if (key_is(k, "tool_call")) {
      index = -1;
      if (!nested(&m, &in)) continue;
      while (next_key(&in, &k)) {
        agentrt_json v = take_value(&in);
        if (key_is(k, "index")) index = int_or(v, -1);
      }
      m.p = in.p;
    } else {
      take_value(&m);
    }
  }

  if (strcmp(ev->event, "before_invocation") == 0) {
    if (cfg.max_messages > 0 && messages >= cfg.max_messages)
      stop(r, "max_messages", "Max messages (%lld) reached.", cfg.max_messages);
  } else if (strcmp(ev->event, "message_added") == 0) {
    int tool = string_is(role, "tool");
    if (!tool && !string_is(role, "user")) return;
    if (cfg.max_messages > 0 && messages >= cfg.max_messages) {
      stop(r, "max_messages", "Max messages (%lld) reached.", cfg.max_messages);
    } else if (!tool) {
      return;
    } else if (cfg.max_tool_iters > 0 && tool_iters >= cfg.max_tool_iters) {
      stop(r, "max_tool_iters", "Max tool iterations (%lld) reached.", cfg.max_tool_iters);
    } else if (cfg.max_tool_calls > 0 && tool_calls >= cfg.max_tool_calls) {
      stop(r, "max_tool_calls", "Max tool calls (%lld) reached.", cfg.max_tool_calls);
    }
  } else if (strcmp(ev->event, "before_tool_call") == 0) {
    if (cfg.max_parallel_tool_calls > 0 && index >= cfg.max_parallel_tool_calls) {
      char msg[128];
      snprintf(msg, sizeof msg, "Max parallel tool calls (%lld) reached. This tool call was not executed.",
               (long long)cfg.max_parallel_tool_calls);
      agentrt_hook_cancel_tool(r, msg);
    }
  }
}

void agentrt_plugin(void) {
  agentrt_declare("hook", "loop_limiter", "1.0.0",
                  "Stops the agent loop at tool-iteration, tool-call and message limits; cancels extra parallel tool "
                  "calls.");
  agentrt_config_schema("{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
                        "\"max_tool_iters\":{\"type\":\"integer\",\"minimum\":0},"
                        "\"max_tool_calls\":{\"type\":\"integer\",\"minimum\":0},"
                        "\"max_parallel_tool_calls\":{\"type\":\"integer\",\"minimum\":0},"
                        "\"max_messages\":{\"type\":\"integer\",\"minimum\":0}}}");
  agentrt_on("before_invocation", handle);
  agentrt_on("message_added", handle);
  agentrt_message_role("user"); /* handle ignores the others: the host need not call it for them */
  agentrt_message_role("tool");
  agentrt_on("before_tool_call", handle);
  agentrt_on_init(configure);
}
