/* agentrt.c: the C guest SDK of agentrt's plugin ABI version 1. See agentrt.h and plugins/ABI.md. */
#include "agentrt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AGENTRT_ABI_VERSION 1
#define MAX_TOOLS 32
#define MAX_EVENTS 16
#define MAX_METRICS 32

/* ---- per-call arena: strings handed to handlers, freed when the call returns ---- */

typedef struct arena_block {
  struct arena_block *next;
  char data[];
} arena_block;

static arena_block *arena;

static char *arena_alloc(size_t n) {
  arena_block *b = malloc(sizeof(arena_block) + n);
  if (!b) return NULL;
  b->next = arena;
  arena = b;
  return b->data;
}

static void arena_reset(void) {
  while (arena) {
    arena_block *n = arena->next;
    free(arena);
    arena = n;
  }
}

/* ---- JSON reading ---- */

static const char *skip_ws(const char *p, const char *e) {
  while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

static const char *skip_string(const char *p, const char *e) {
  if (p >= e || *p != '"') return NULL;
  for (p++; p < e; p++) {
    unsigned char c = (unsigned char)*p;
    if (c == '"') return p + 1;
    if (c < 0x20) return NULL;
    if (c == '\\') {
      if (++p >= e) return NULL;
      if (*p == 'u') {
        for (int i = 0; i < 4; i++) {
          if (++p >= e) return NULL;
          char h = *p;
          if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F'))) return NULL;
        }
      } else if (!strchr("\"\\/bfnrt", *p)) {
        return NULL;
      }
    }
  }
  return NULL;
}

static const char *skip_digits(const char *p, const char *e) {
  const char *s = p;
  while (p < e && *p >= '0' && *p <= '9') p++;
  return p > s ? p : NULL;
}

static const char *skip_number(const char *p, const char *e) {
  if (p < e && *p == '-') p++;
  if (p < e && *p == '0') {
    p++;
  } else if (!(p = skip_digits(p, e))) {
    return NULL;
  }
  if (p < e && *p == '.' && !(p = skip_digits(p + 1, e))) return NULL;
  if (p < e && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < e && (*p == '+' || *p == '-')) p++;
    if (!(p = skip_digits(p, e))) return NULL;
  }
  return p;
}

static const char *skip_lit(const char *p, const char *e, const char *lit) {
  size_t n = strlen(lit);
  return (size_t)(e - p) >= n && memcmp(p, lit, n) == 0 ? p + n : NULL;
}

/* skip_value returns the end of the value starting at p (no leading whitespace), or NULL if it is malformed. */
static const char *skip_value(const char *p, const char *e, int depth) {
  if (p >= e || depth > 128) return NULL;
  switch (*p) {
  case '"': return skip_string(p, e);
  case 't': return skip_lit(p, e, "true");
  case 'f': return skip_lit(p, e, "false");
  case 'n': return skip_lit(p, e, "null");
  case '{':
  case '[': {
    char close = *p == '{' ? '}' : ']';
    int obj = *p == '{';
    p = skip_ws(p + 1, e);
    if (p < e && *p == close) return p + 1;
    for (;;) {
      if (obj) {
        if (!(p = skip_string(p, e))) return NULL;
        p = skip_ws(p, e);
        if (p >= e || *p != ':') return NULL;
        p = skip_ws(p + 1, e);
      }
      if (!(p = skip_value(p, e, depth + 1))) return NULL;
      p = skip_ws(p, e);
      if (p >= e) return NULL;
      if (*p == close) return p + 1;
      if (*p != ',') return NULL;
      p = skip_ws(p + 1, e);
    }
  }
  default: return skip_number(p, e);
  }
}

agentrt_json agentrt_json_parse(const char *text, size_t len) {
  agentrt_json z = {0};
  if (!text) return z;
  const char *e = text + len, *p = skip_ws(text, e), *end = skip_value(p, e, 0);
  if (!end || skip_ws(end, e) != e) return z;
  agentrt_json v = {p, (size_t)(end - p)};
  return v;
}

agentrt_json_type agentrt_json_kind(agentrt_json v) {
  if (!v.ptr || v.len == 0) return AGENTRT_JSON_INVALID;
  switch (v.ptr[0]) {
  case '"': return AGENTRT_JSON_STRING;
  case '{': return AGENTRT_JSON_OBJECT;
  case '[': return AGENTRT_JSON_ARRAY;
  case 't':
  case 'f': return AGENTRT_JSON_BOOL;
  case 'n': return AGENTRT_JSON_NULL;
  default: return AGENTRT_JSON_NUMBER;
  }
}

static void put_utf8(char **o, unsigned cp) {
  char *d = *o;
  if (cp < 0x80) {
    *d++ = (char)cp;
  } else if (cp < 0x800) {
    *d++ = (char)(0xC0 | cp >> 6);
    *d++ = (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *d++ = (char)(0xE0 | cp >> 12);
    *d++ = (char)(0x80 | (cp >> 6 & 0x3F));
    *d++ = (char)(0x80 | (cp & 0x3F));
  } else {
    *d++ = (char)(0xF0 | cp >> 18);
    *d++ = (char)(0x80 | (cp >> 12 & 0x3F));
    *d++ = (char)(0x80 | (cp >> 6 & 0x3F));
    *d++ = (char)(0x80 | (cp & 0x3F));
  }
  *o = d;
}

static unsigned hex4(const char *p) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    v = v * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return v;
}

/* unescape decodes the well-formed string literal [p, e) (quotes included) into dst, which has room for e-p bytes;
 * returns the decoded length. */
static size_t unescape(const char *p, const char *e, char *dst) {
  char *o = dst;
  for (p++, e--; p < e; p++) {
    if (*p != '\\') {
      *o++ = *p;
      continue;
    }
    p++;
    switch (*p) {
    case 'b': *o++ = '\b'; break;
    case 'f': *o++ = '\f'; break;
    case 'n': *o++ = '\n'; break;
    case 'r': *o++ = '\r'; break;
    case 't': *o++ = '\t'; break;
    case 'u': {
      unsigned cp = hex4(p + 1);
      p += 4;
      if (cp >= 0xD800 && cp < 0xDC00 && e - p > 6 && p[1] == '\\' && p[2] == 'u') {
        unsigned lo = hex4(p + 3);
        if (lo >= 0xDC00 && lo < 0xE000) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          p += 6;
        }
      }
      if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD; /* a lone surrogate */
      put_utf8(&o, cp);
      break;
    }
    default: *o++ = *p; /* " \ / */
    }
  }
  return (size_t)(o - dst);
}

const char *agentrt_json_str(agentrt_json v, size_t *len) {
  if (agentrt_json_kind(v) != AGENTRT_JSON_STRING) return NULL;
  char *s = arena_alloc(v.len + 1);
  if (!s) return NULL;
  size_t n = unescape(v.ptr, v.ptr + v.len, s);
  s[n] = 0;
  if (len) *len = n;
  return s;
}

/* key_equals reports whether the string literal [p, e) decodes to key. */
static int key_equals(const char *p, const char *e, const char *key) {
  size_t n = strlen(key);
  if (!memchr(p, '\\', (size_t)(e - p))) return (size_t)(e - p) == n + 2 && memcmp(p + 1, key, n) == 0;
  char *tmp = malloc((size_t)(e - p));
  if (!tmp) return 0;
  size_t m = unescape(p, e, tmp);
  int eq = m == n && memcmp(tmp, key, n) == 0;
  free(tmp);
  return eq;
}

/* walk visits the elements (members) of v; for objects it calls back with key range too. Stops when fn returns 1. */
typedef int (*walk_fn)(void *ctx, const char *ks, const char *ke, agentrt_json val);

static void walk(agentrt_json v, walk_fn fn, void *ctx) {
  agentrt_json_type t = agentrt_json_kind(v);
  if (t != AGENTRT_JSON_OBJECT && t != AGENTRT_JSON_ARRAY) return;
  const char *e = v.ptr + v.len - 1, *p = skip_ws(v.ptr + 1, e);
  while (p < e) {
    const char *ks = NULL, *ke = NULL;
    if (t == AGENTRT_JSON_OBJECT) {
      ks = p;
      ke = p = skip_string(p, e);
      p = skip_ws(skip_ws(p, e) + 1, e); /* past ':' */
    }
    const char *ve = skip_value(p, e, 0);
    agentrt_json val = {p, (size_t)(ve - p)};
    if (fn(ctx, ks, ke, val)) return;
    p = skip_ws(ve, e);
    if (p < e && *p == ',') p = skip_ws(p + 1, e);
  }
}

struct get_ctx {
  const char *key;
  agentrt_json out;
};

static int get_cb(void *c, const char *ks, const char *ke, agentrt_json val) {
  struct get_ctx *g = c;
  if (!key_equals(ks, ke, g->key)) return 0;
  g->out = val;
  return 1;
}

agentrt_json agentrt_json_get(agentrt_json v, const char *key) {
  struct get_ctx g = {key, {0}};
  if (agentrt_json_kind(v) == AGENTRT_JSON_OBJECT) walk(v, get_cb, &g);
  return g.out;
}

struct at_ctx {
  size_t i, n;
  agentrt_json out;
};

static int at_cb(void *c, const char *ks, const char *ke, agentrt_json val) {
  (void)ks, (void)ke;
  struct at_ctx *a = c;
  if (a->n++ == a->i) {
    a->out = val;
    return 1;
  }
  return 0;
}

size_t agentrt_json_count(agentrt_json v) {
  struct at_ctx a = {(size_t)-1, 0, {0}};
  walk(v, at_cb, &a);
  return a.n;
}

agentrt_json agentrt_json_at(agentrt_json v, size_t i) {
  struct at_ctx a = {i, 0, {0}};
  walk(v, at_cb, &a);
  return a.out;
}

struct key_ctx {
  size_t i, n;
  const char *ks, *ke;
};

static int key_cb(void *c, const char *ks, const char *ke, agentrt_json val) {
  (void)val;
  struct key_ctx *k = c;
  if (k->n++ == k->i) {
    k->ks = ks;
    k->ke = ke;
    return 1;
  }
  return 0;
}

const char *agentrt_json_key(agentrt_json v, size_t i, size_t *len) {
  struct key_ctx k = {i, 0, NULL, NULL};
  if (agentrt_json_kind(v) != AGENTRT_JSON_OBJECT) return NULL;
  walk(v, key_cb, &k);
  if (!k.ks) return NULL;
  return agentrt_json_str((agentrt_json){k.ks, (size_t)(k.ke - k.ks)}, len);
}

int agentrt_json_num(agentrt_json v, double *out) {
  if (agentrt_json_kind(v) != AGENTRT_JSON_NUMBER) return 0;
  char buf[64];
  if (v.len >= sizeof buf) {
    char *s = arena_alloc(v.len + 1);
    if (!s) return 0;
    memcpy(s, v.ptr, v.len);
    s[v.len] = 0;
    *out = strtod(s, NULL);
    return 1;
  }
  memcpy(buf, v.ptr, v.len);
  buf[v.len] = 0;
  *out = strtod(buf, NULL);
  return 1;
}

int agentrt_json_bool(agentrt_json v, int *out) {
  if (agentrt_json_kind(v) != AGENTRT_JSON_BOOL) return 0;
  *out = v.ptr[0] == 't';
  return 1;
}

/* ---- JSON writing ---- */

static void w_put(agentrt_writer *w, const char *s, size_t n) {
  if (w->bad) return;
  if (w->len + n > w->cap) {
    size_t cap = w->cap ? w->cap : 256;
    while (cap < w->len + n) cap *= 2;
    char *b = realloc(w->buf, cap);
    if (!b) {
      w->bad = 1;
      return;
    }
    w->buf = b;
    w->cap = cap;
  }
  memcpy(w->buf + w->len, s, n);
  w->len += n;
}

static void w_reset(agentrt_writer *w) {
  w->len = 0;
  w->depth = 0;
  w->first[0] = 1;
  w->after_key = 0;
  w->bad = 0;
}

/* w_sep writes the comma before a value or key, if one is due. */
static void w_sep(agentrt_writer *w) {
  if (w->after_key) {
    w->after_key = 0;
    return;
  }
  if (!w->first[w->depth]) w_put(w, ",", 1);
  w->first[w->depth] = 0;
}

static void w_open(agentrt_writer *w, char c) {
  w_sep(w);
  w_put(w, &c, 1);
  if (w->depth >= AGENTRT_MAX_DEPTH) {
    w->bad = 1;
    return;
  }
  w->first[++w->depth] = 1;
}

static void w_close(agentrt_writer *w, char c) {
  if (w->depth == 0) {
    w->bad = 1;
    return;
  }
  w->depth--;
  w_put(w, &c, 1);
}

void agentrt_w_object(agentrt_writer *w) { w_open(w, '{'); }
void agentrt_w_object_end(agentrt_writer *w) { w_close(w, '}'); }
void agentrt_w_array(agentrt_writer *w) { w_open(w, '['); }
void agentrt_w_array_end(agentrt_writer *w) { w_close(w, ']'); }

static void w_quoted(agentrt_writer *w, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  w_put(w, "\"", 1);
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    w_put(w, s + run, i - run);
    run = i + 1;
    switch (c) {
    case '"': w_put(w, "\\\"", 2); break;
    case '\\': w_put(w, "\\\\", 2); break;
    case '\n': w_put(w, "\\n", 2); break;
    case '\r': w_put(w, "\\r", 2); break;
    case '\t': w_put(w, "\\t", 2); break;
    default: {
      char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
      w_put(w, u, 6);
    }
    }
  }
  w_put(w, s + run, n - run);
  w_put(w, "\"", 1);
}

void agentrt_w_key(agentrt_writer *w, const char *key) {
  w_sep(w);
  w_quoted(w, key, strlen(key));
  w_put(w, ":", 1);
  w->after_key = 1;
}

void agentrt_w_stringn(agentrt_writer *w, const char *s, size_t n) {
  w_sep(w);
  w_quoted(w, s, n);
}

void agentrt_w_string(agentrt_writer *w, const char *s) { agentrt_w_stringn(w, s, strlen(s)); }

void agentrt_w_number(agentrt_writer *w, double v) {
  char buf[32];
  if (v != v || v > 1.7976931348623157e308 || v < -1.7976931348623157e308) {
    agentrt_w_null(w);
    return;
  }
  if (v == (double)(int64_t)v && v > -9007199254740992.0 && v < 9007199254740992.0) {
    agentrt_w_int(w, (int64_t)v);
    return;
  }
  int n = snprintf(buf, sizeof buf, "%.15g", v);
  if (strtod(buf, NULL) != v) n = snprintf(buf, sizeof buf, "%.17g", v);
  w_sep(w);
  w_put(w, buf, (size_t)n);
}

void agentrt_w_int(agentrt_writer *w, int64_t v) {
  char buf[24];
  int n = snprintf(buf, sizeof buf, "%lld", (long long)v);
  w_sep(w);
  w_put(w, buf, (size_t)n);
}

void agentrt_w_bool(agentrt_writer *w, int v) {
  w_sep(w);
  w_put(w, v ? "true" : "false", v ? 4 : 5);
}

void agentrt_w_null(agentrt_writer *w) {
  w_sep(w);
  w_put(w, "null", 4);
}

void agentrt_w_raw(agentrt_writer *w, agentrt_json v) {
  if (agentrt_json_kind(v) == AGENTRT_JSON_INVALID) {
    agentrt_w_null(w);
    return;
  }
  w_sep(w);
  w_put(w, v.ptr, v.len);
}

/* ---- the plugin's declaration ---- */

typedef struct {
  const char *name, *description, *schema;
  agentrt_tool_fn fn;
} tool_decl;

typedef struct {
  const char *event;
  agentrt_hook_fn fn;
} hook_decl;

static struct {
  int declared;
  const char *kind, *name, *version, *description, *config_schema;
  tool_decl tools[MAX_TOOLS];
  int ntools;
  hook_decl hooks[MAX_EVENTS];
  int nhooks;
  const char *roles[4];
  int nroles;
  agentrt_parser_fn parser;
  agentrt_init_fn init;
} plugin;

void agentrt_declare(const char *kind, const char *name, const char *version, const char *description) {
  plugin.kind = kind;
  plugin.name = name;
  plugin.version = version;
  plugin.description = description;
}

void agentrt_tool(const char *name, const char *description, const char *schema, agentrt_tool_fn fn) {
  if (plugin.ntools < MAX_TOOLS) plugin.tools[plugin.ntools++] = (tool_decl){name, description, schema, fn};
}

void agentrt_on(const char *event, agentrt_hook_fn fn) {
  if (plugin.nhooks < MAX_EVENTS) plugin.hooks[plugin.nhooks++] = (hook_decl){event, fn};
}

void agentrt_message_role(const char *role) {
  if (plugin.nroles < 4) plugin.roles[plugin.nroles++] = role;
}

void agentrt_parser(agentrt_parser_fn fn) { plugin.parser = fn; }
void agentrt_on_init(agentrt_init_fn fn) { plugin.init = fn; }
void agentrt_config_schema(const char *schema) { plugin.config_schema = schema; }

static void ensure_declared(void) {
  if (plugin.declared) return;
  plugin.declared = 1;
  agentrt_plugin();
}

/* ---- results ---- */

enum { R_NONE, R_TEXT, R_JSON, R_ERROR };

struct agentrt_result {
  int mode;
  agentrt_writer *out;          /* the envelope being built */
  size_t value_start;           /* R_JSON: where the value begins in out */
  const char *text;             /* R_TEXT */
  size_t text_len;
  const char *code, *message;   /* R_ERROR */
  /* hook fields */
  const char *stop_reason, *stop_message, *cancel;
  int has_reward;
  double reward;
  const char *metric_names[MAX_METRICS];
  double metric_values[MAX_METRICS];
  int nmetrics;
  agentrt_writer state;
  int has_state;
};

static agentrt_writer envelope; /* the output buffer: valid until the next export call */

static char *arena_strdup(const char *s) {
  size_t n = strlen(s);
  char *d = arena_alloc(n + 1);
  if (d) memcpy(d, s, n + 1);
  return d;
}

void agentrt_result_text(agentrt_result *r, const char *s, size_t n) {
  char *d = arena_alloc(n + 1);
  if (!d) {
    r->out->bad = 1;
    return;
  }
  memcpy(d, s, n);
  d[n] = 0;
  r->mode = R_TEXT;
  r->text = d;
  r->text_len = n;
}

agentrt_writer *agentrt_result_json(agentrt_result *r) {
  /* The value is written straight after {"ok":{"json": (tools) or {"ok": (others); closed in finish(). */
  w_reset(r->out);
  w_put(r->out, "{\"ok\":", 6);
  if (plugin.kind && strcmp(plugin.kind, "tool") == 0) w_put(r->out, "{\"json\":", 8);
  r->value_start = r->out->len;
  r->mode = R_JSON;
  return r->out;
}

void agentrt_result_error(agentrt_result *r, const char *code, const char *fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  char *msg = arena_alloc((size_t)(n < 0 ? 0 : n) + 1);
  if (!msg) {
    r->out->bad = 1;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(msg, (size_t)(n < 0 ? 0 : n) + 1, fmt, ap);
  va_end(ap);
  r->mode = R_ERROR;
  r->code = arena_strdup(code);
  r->message = msg;
}

void agentrt_hook_stop(agentrt_result *r, const char *reason, const char *message) {
  r->stop_reason = arena_strdup(reason);
  r->stop_message = message ? arena_strdup(message) : NULL;
}

void agentrt_hook_cancel_tool(agentrt_result *r, const char *message) { r->cancel = arena_strdup(message); }

void agentrt_hook_reward(agentrt_result *r, double reward) {
  r->has_reward = 1;
  r->reward = reward;
}

void agentrt_hook_metric(agentrt_result *r, const char *name, double value) {
  if (r->nmetrics >= MAX_METRICS) return;
  r->metric_names[r->nmetrics] = arena_strdup(name);
  r->metric_values[r->nmetrics++] = value;
}

agentrt_writer *agentrt_hook_state(agentrt_result *r) {
  w_reset(&r->state);
  r->has_state = 1;
  return &r->state;
}

static void write_error(agentrt_writer *w, const char *code, const char *message) {
  w_reset(w);
  agentrt_w_object(w);
  agentrt_w_key(w, "error");
  agentrt_w_object(w);
  agentrt_w_key(w, "code");
  agentrt_w_string(w, code);
  agentrt_w_key(w, "message");
  agentrt_w_string(w, message);
  agentrt_w_object_end(w);
  agentrt_w_object_end(w);
}

/* finish turns the handler's result into the envelope in r->out. */
static void finish(agentrt_result *r, int is_hook) {
  agentrt_writer *w = r->out;
  if (r->mode == R_ERROR) {
    write_error(w, r->code, r->message);
  } else if (r->mode == R_JSON) {
    if (w->bad || w->depth != 0 || w->len == r->value_start) {
      write_error(w, "internal", "plugin wrote an incomplete JSON value");
    } else {
      if (plugin.kind && strcmp(plugin.kind, "tool") == 0) w_put(w, "}", 1);
      w_put(w, "}", 1);
    }
  } else if (!is_hook) {
    w_reset(w);
    w_put(w, "{\"ok\":{\"text\":", 14);
    w->first[0] = 1;
    w_quoted(w, r->mode == R_TEXT ? r->text : "", r->mode == R_TEXT ? r->text_len : 0);
    w_put(w, "}}", 2);
  } else {
    w_reset(w);
    w_put(w, "{\"ok\":", 6);
    w->first[0] = 1;
    agentrt_w_object(w);
    if (r->stop_reason) {
      agentrt_w_key(w, "stop");
      agentrt_w_object(w);
      agentrt_w_key(w, "reason");
      agentrt_w_string(w, r->stop_reason);
      if (r->stop_message) {
        agentrt_w_key(w, "message");
        agentrt_w_string(w, r->stop_message);
      }
      agentrt_w_object_end(w);
    }
    if (r->cancel) {
      agentrt_w_key(w, "cancel_tool");
      agentrt_w_string(w, r->cancel);
    }
    if (r->has_reward) {
      agentrt_w_key(w, "reward");
      agentrt_w_number(w, r->reward);
    }
    if (r->nmetrics) {
      agentrt_w_key(w, "metrics");
      agentrt_w_object(w);
      for (int i = 0; i < r->nmetrics; i++) {
        agentrt_w_key(w, r->metric_names[i]);
        agentrt_w_number(w, r->metric_values[i]);
      }
      agentrt_w_object_end(w);
    }
    if (r->has_state) {
      if (r->state.bad || r->state.depth != 0 || r->state.len == 0) {
        write_error(w, "internal", "plugin wrote an incomplete state value");
        goto out;
      }
      agentrt_w_key(w, "state");
      w_sep(w);
      w_put(w, r->state.buf, r->state.len);
    }
    agentrt_w_object_end(w);
    w_put(w, "}", 1);
  }
out:
  if (w->bad) { /* out of memory while writing: report that, in a buffer that surely fits */
    static const char oom[] = "{\"error\":{\"code\":\"internal\",\"message\":\"plugin out of memory\"}}";
    if (w->cap) free(w->buf);
    w->buf = (char *)oom;
    w->len = sizeof oom - 1;
    w->cap = 0;
  }
  free(r->state.buf);
}

static uint64_t packed(agentrt_writer *w) {
  return (uint64_t)(uintptr_t)w->buf << 32 | (uint64_t)(uint32_t)w->len;
}

/* ---- exports ---- */

__attribute__((import_module("agentrt_v1"), import_name("log"))) extern void agentrt_host_log(int32_t level,
                                                                                               const char *ptr,
                                                                                               int32_t len);

void agentrt_log(int level, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  agentrt_host_log(level, buf, n < (int)sizeof buf ? n : (int)sizeof buf - 1);
}

__attribute__((export_name("agentrt_abi_version"))) int32_t agentrt_abi_version(void) { return AGENTRT_ABI_VERSION; }

__attribute__((export_name("agentrt_alloc"))) void *agentrt_alloc(int32_t size) {
  return malloc(size > 0 ? (size_t)size : 1);
}

__attribute__((export_name("agentrt_free"))) void agentrt_free(void *ptr) { free(ptr); }

static void begin_output(void) {
  if (envelope.cap == 0) envelope.buf = NULL; /* drop the static out-of-memory message */
  w_reset(&envelope);
}

__attribute__((export_name("agentrt_describe"))) uint64_t agentrt_describe(void) {
  ensure_declared();
  begin_output();
  agentrt_writer *w = &envelope;
  agentrt_w_object(w);
  agentrt_w_key(w, "abi_version");
  agentrt_w_int(w, AGENTRT_ABI_VERSION);
  agentrt_w_key(w, "kind");
  agentrt_w_string(w, plugin.kind ? plugin.kind : "");
  agentrt_w_key(w, "name");
  agentrt_w_string(w, plugin.name ? plugin.name : "");
  if (plugin.version) {
    agentrt_w_key(w, "version");
    agentrt_w_string(w, plugin.version);
  }
  if (plugin.description) {
    agentrt_w_key(w, "description");
    agentrt_w_string(w, plugin.description);
  }
  if (plugin.ntools) {
    agentrt_w_key(w, "tools");
    agentrt_w_array(w);
    for (int i = 0; i < plugin.ntools; i++) {
      tool_decl *t = &plugin.tools[i];
      agentrt_w_object(w);
      agentrt_w_key(w, "name");
      agentrt_w_string(w, t->name);
      agentrt_w_key(w, "description");
      agentrt_w_string(w, t->description ? t->description : "");
      agentrt_w_key(w, "parameters");
      agentrt_json schema = agentrt_json_parse(t->schema, t->schema ? strlen(t->schema) : 0);
      if (agentrt_json_kind(schema) == AGENTRT_JSON_INVALID) {
        agentrt_w_object(w);
        agentrt_w_key(w, "type");
        agentrt_w_string(w, "object");
        agentrt_w_object_end(w);
      } else {
        agentrt_w_raw(w, schema);
      }
      agentrt_w_object_end(w);
    }
    agentrt_w_array_end(w);
  }
  if (plugin.nhooks) {
    agentrt_w_key(w, "events");
    agentrt_w_array(w);
    for (int i = 0; i < plugin.nhooks; i++) agentrt_w_string(w, plugin.hooks[i].event);
    agentrt_w_array_end(w);
  }
  if (plugin.nroles) {
    agentrt_w_key(w, "message_roles");
    agentrt_w_array(w);
    for (int i = 0; i < plugin.nroles; i++) agentrt_w_string(w, plugin.roles[i]);
    agentrt_w_array_end(w);
  }
  if (plugin.config_schema) {
    agentrt_json schema = agentrt_json_parse(plugin.config_schema, strlen(plugin.config_schema));
    if (agentrt_json_kind(schema) != AGENTRT_JSON_INVALID) {
      agentrt_w_key(w, "config_schema");
      agentrt_w_raw(w, schema);
    }
  }
  agentrt_w_object_end(w);
  arena_reset();
  return packed(w);
}

/* The init input while the init handler runs (agentrt_init_tools). */
static agentrt_json init_input;

agentrt_json agentrt_init_tools(void) {
  agentrt_json t = agentrt_json_get(init_input, "tools");
  return agentrt_json_kind(t) == AGENTRT_JSON_ARRAY ? t : agentrt_json_parse("[]", 2);
}

__attribute__((export_name("agentrt_init"))) uint64_t agentrt_init(char *ptr, int32_t len) {
  ensure_declared();
  begin_output();
  agentrt_result r = {.out = &envelope};
  agentrt_json in = agentrt_json_parse(ptr, (size_t)len);
  if (agentrt_json_kind(in) != AGENTRT_JSON_OBJECT) {
    write_error(&envelope, "bad_input", "init input is not a JSON object");
  } else {
    if (plugin.init) {
      agentrt_json cfg = agentrt_json_get(in, "config");
      if (agentrt_json_kind(cfg) == AGENTRT_JSON_INVALID) cfg = agentrt_json_parse("null", 4);
      init_input = in;
      plugin.init(cfg, &r);
      init_input = (agentrt_json){0};
    }
    if (r.mode == R_ERROR) {
      write_error(&envelope, r.code, r.message);
    } else {
      w_reset(&envelope);
      w_put(&envelope, "{\"ok\":{}}", 9);
    }
  }
  free(r.state.buf);
  arena_reset();
  free(ptr);
  return packed(&envelope);
}

__attribute__((export_name("agentrt_call"))) uint64_t agentrt_call(char *ptr, int32_t len) {
  ensure_declared();
  begin_output();
  agentrt_result r = {.out = &envelope};
  const char *kind = plugin.kind ? plugin.kind : "";
  if (strcmp(kind, "parser") == 0) {
    if (plugin.parser) {
      plugin.parser(ptr, (size_t)len, &r);
      if (r.mode == R_NONE || r.mode == R_TEXT) {
        agentrt_result_json(&r);
        agentrt_w_object(r.out);
        agentrt_w_object_end(r.out);
      }
      finish(&r, 0);
    } else {
      write_error(&envelope, "internal", "parser plugin declared no parser function");
    }
  } else {
    agentrt_json in = agentrt_json_parse(ptr, (size_t)len);
    if (agentrt_json_kind(in) != AGENTRT_JSON_OBJECT) {
      write_error(&envelope, "bad_input", "call input is not a JSON object");
    } else if (strcmp(kind, "tool") == 0) {
      const char *name = agentrt_json_str(agentrt_json_get(in, "name"), NULL);
      const char *id = agentrt_json_str(agentrt_json_get(in, "id"), NULL);
      agentrt_tool_call call = {id ? id : "", name ? name : "", agentrt_json_get(in, "arguments")};
      tool_decl *t = NULL;
      for (int i = 0; i < plugin.ntools && name; i++)
        if (strcmp(plugin.tools[i].name, name) == 0) t = &plugin.tools[i];
      if (!t) {
        agentrt_result_error(&r, "unknown_tool", "unknown tool %s", name ? name : "(no name)");
      } else if (agentrt_json_kind(call.arguments) != AGENTRT_JSON_OBJECT) {
        agentrt_result_error(&r, "bad_input", "tool %s: arguments must be a JSON object", name);
      } else {
        t->fn(&call, &r);
      }
      finish(&r, 0);
    } else if (strcmp(kind, "hook") == 0) {
      const char *event = agentrt_json_str(agentrt_json_get(in, "event"), NULL);
      const char *episode = agentrt_json_str(agentrt_json_get(in, "episode_id"), NULL);
      double turn = 0;
      agentrt_json_num(agentrt_json_get(in, "turn"), &turn);
      agentrt_event ev = {event ? event : "", episode ? episode : "", (int64_t)turn, in};
      for (int i = 0; i < plugin.nhooks && event; i++)
        if (strcmp(plugin.hooks[i].event, event) == 0) {
          plugin.hooks[i].fn(&ev, &r);
          break;
        }
      finish(&r, 1);
    } else {
      write_error(&envelope, "internal", "plugin declared no valid kind (want tool, hook or parser)");
    }
  }
  arena_reset();
  free(ptr);
  return packed(&envelope);
}
