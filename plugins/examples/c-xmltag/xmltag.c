/* xmltag: the C SDK's example parser (plugins/sdk/c/README.md), the same as ../go-xmltag: tool calls written as JSON
 * between two tags, by default Hermes-style <tool_call>{"name": ..., "arguments": {...}}</tool_call>. Strict: a
 * malformed call is an error with a reason and its raw text, never repaired. Config (optional): {"open": "...",
 * "close": "..."}. Spans are byte offsets into the completion. */
#include <stdlib.h>
#include <string.h>

#include "agentrt.h"

static char *open_tag = "<tool_call>", *close_tag = "</tool_call>";
static agentrt_json tools_copy; /* the agent's tool specs, kept for name checks (count 0: every name is accepted) */
static char *tools_buf;

static void init(agentrt_json cfg, agentrt_result *r) {
  const char *names[] = {"open", "close"};
  char **dst[] = {&open_tag, &close_tag};
  for (int i = 0; i < 2; i++) {
    agentrt_json v = agentrt_json_get(cfg, names[i]);
    if (agentrt_json_kind(v) == AGENTRT_JSON_INVALID) continue;
    size_t n = 0;
    const char *s = agentrt_json_str(v, &n);
    if (!s || n == 0) {
      agentrt_result_error(r, "bad_config", "open and close must be non-empty strings");
      return;
    }
    *dst[i] = strdup(s);
  }
  agentrt_json tools = agentrt_init_tools(); /* a view into the init input: keep a copy */
  tools_buf = malloc(tools.len);
  if (!tools_buf) {
    agentrt_result_error(r, "internal", "out of memory");
    return;
  }
  memcpy(tools_buf, tools.ptr, tools.len);
  tools_copy = agentrt_json_parse(tools_buf, tools.len);
}

/* find returns the first occurrence of the NUL-terminated s in [p, e) (the completion is not NUL-terminated). */
static const char *find(const char *p, const char *e, const char *s) {
  size_t n = strlen(s);
  for (; (size_t)(e - p) >= n; p++) {
    if (memcmp(p, s, n) == 0) return p;
  }
  return NULL;
}

static int known_tool(const char *name) {
  size_t n = agentrt_json_count(tools_copy);
  if (n == 0) return 1;
  for (size_t i = 0; i < n; i++) {
    const char *t = agentrt_json_str(agentrt_json_get(agentrt_json_at(tools_copy, i), "name"), NULL);
    if (t && strcmp(t, name) == 0) return 1;
  }
  return 0;
}

/* error writes one element of "errors". */
static void error(agentrt_writer *w, const char *reason, const char *message, const char *raw, size_t start, size_t end) {
  agentrt_w_object(w);
  agentrt_w_key(w, "reason");
  agentrt_w_string(w, reason);
  agentrt_w_key(w, "message");
  agentrt_w_string(w, message);
  agentrt_w_key(w, "raw");
  agentrt_w_stringn(w, raw + start, end - start);
  agentrt_w_key(w, "span");
  agentrt_w_array(w);
  agentrt_w_int(w, (int64_t)start);
  agentrt_w_int(w, (int64_t)end);
  agentrt_w_array_end(w);
  agentrt_w_object_end(w);
}

static void parse(const char *text, size_t len, agentrt_result *r) {
  /* Calls and errors are written in two passes over the text, normal text collected in between. */
  agentrt_writer *w = agentrt_result_json(r);
  size_t ol = strlen(open_tag), cl = strlen(close_tag);
  char *normal = malloc(len + 1);
  size_t nn = 0;
  if (!normal) {
    agentrt_result_error(r, "internal", "out of memory");
    return;
  }
  agentrt_w_object(w);
  for (int pass = 0; pass < 2; pass++) {
    agentrt_w_key(w, pass == 0 ? "calls" : "errors");
    agentrt_w_array(w);
    size_t pos = 0;
    for (;;) {
      const char *o = find(text + pos, text + len, open_tag);
      size_t start = o ? (size_t)(o - text) : len;
      if (pass == 0) {
        memcpy(normal + nn, text + pos, start - pos);
        nn += start - pos;
      }
      if (!o) break;
      const char *c = find(o + ol, text + len, close_tag);
      if (!c) {
        if (pass == 1) error(w, "unclosed_tag", "no closing tag after the opening one", text, start, len);
        break;
      }
      size_t end = (size_t)(c - text) + cl;
      agentrt_json body = agentrt_json_parse(o + ol, (size_t)(c - o) - ol);
      const char *name = agentrt_json_str(agentrt_json_get(body, "name"), NULL);
      agentrt_json args = agentrt_json_get(body, "arguments");
      const char *reason = NULL, *msg = NULL;
      if (agentrt_json_kind(body) == AGENTRT_JSON_INVALID) {
        reason = "malformed_json";
        msg = "the call is not one JSON value";
      } else if (!name || !*name) {
        reason = "missing_name";
        msg = "the call has no \"name\" string";
      } else if (!known_tool(name)) {
        reason = "unknown_tool";
        msg = "the agent has no such tool";
      } else if (agentrt_json_kind(args) != AGENTRT_JSON_INVALID && agentrt_json_kind(args) != AGENTRT_JSON_OBJECT) {
        reason = "bad_arguments";
        msg = "\"arguments\" is not a JSON object";
      }
      if (pass == 1 && reason) error(w, reason, msg, text, start, end);
      if (pass == 0 && !reason) {
        agentrt_w_object(w);
        agentrt_w_key(w, "name");
        agentrt_w_string(w, name);
        agentrt_w_key(w, "arguments");
        if (agentrt_json_kind(args) == AGENTRT_JSON_OBJECT) {
          agentrt_w_raw(w, args);
        } else { /* no "arguments": none */
          agentrt_w_object(w);
          agentrt_w_object_end(w);
        }
        agentrt_w_key(w, "span");
        agentrt_w_array(w);
        agentrt_w_int(w, (int64_t)start);
        agentrt_w_int(w, (int64_t)end);
        agentrt_w_array_end(w);
        agentrt_w_object_end(w);
      }
      pos = end;
    }
    agentrt_w_array_end(w);
  }
  agentrt_w_key(w, "normal_text");
  agentrt_w_stringn(w, normal, nn);
  agentrt_w_object_end(w);
  free(normal);
}

void agentrt_plugin(void) {
  agentrt_declare("parser", "xmltag", "1.0.0", "Tool calls as JSON between two tags (C SDK example).");
  agentrt_parser(parse);
  agentrt_config_schema("{\"type\":\"object\",\"properties\":{\"open\":{\"type\":\"string\"},\"close\":{\"type\":\"string\"}}}");
  agentrt_on_init(init);
}
