/* repeat: the C SDK's example tool (plugins/sdk/c/README.md): typed arguments, a config, error results.
 * repeat(text, times, upper?) writes text `times` times, joined by the configured separator. */
#include <stdlib.h>
#include <string.h>

#include "agentrt.h"

/* Set by init from the plugin's config (the same on every call: not per-episode state). */
static char *separator = " ";
static double max_bytes = 1000;

static void init(agentrt_json cfg, agentrt_result *r) {
  agentrt_json_type k = agentrt_json_kind(cfg);
  if (k == AGENTRT_JSON_NULL) return; /* no config: the defaults */
  if (k != AGENTRT_JSON_OBJECT) {
    agentrt_result_error(r, "bad_config", "config must be a table");
    return;
  }
  for (size_t i = 0; i < agentrt_json_count(cfg); i++) {
    const char *key = agentrt_json_key(cfg, i, NULL);
    agentrt_json v = agentrt_json_at(cfg, i);
    if (strcmp(key, "separator") == 0) {
      const char *s = agentrt_json_str(v, NULL);
      if (!s) {
        agentrt_result_error(r, "bad_config", "separator must be a string");
        return;
      }
      separator = strdup(s); /* SDK strings live until the handler returns: keep a copy */
    } else if (strcmp(key, "max_bytes") == 0) {
      double n;
      if (!agentrt_json_num(v, &n) || n < 1 || n != (double)(long long)n) {
        agentrt_result_error(r, "bad_config", "max_bytes must be an integer >= 1");
        return;
      }
      max_bytes = n;
    } else {
      agentrt_result_error(r, "bad_config", "unknown key \"%s\" (known: separator, max_bytes)", key);
      return;
    }
  }
}

static void repeat(const agentrt_tool_call *call, agentrt_result *r) {
  size_t n;
  const char *text = agentrt_json_str(agentrt_json_get(call->arguments, "text"), &n);
  if (!text) {
    agentrt_result_error(r, "bad_input", "repeat: argument \"text\" must be a string");
    return;
  }
  double times;
  if (!agentrt_json_num(agentrt_json_get(call->arguments, "times"), &times) || times < 1 || times > 10 ||
      times != (double)(int)times) {
    agentrt_result_error(r, "bad_input", "repeat: argument \"times\" must be an integer from 1 to 10");
    return;
  }
  int upper = 0;
  agentrt_json u = agentrt_json_get(call->arguments, "upper");
  if (agentrt_json_kind(u) != AGENTRT_JSON_INVALID && agentrt_json_kind(u) != AGENTRT_JSON_NULL &&
      !agentrt_json_bool(u, &upper)) {
    agentrt_result_error(r, "bad_input", "repeat: argument \"upper\" must be a boolean");
    return;
  }
  size_t sep = strlen(separator), size = (size_t)times * n + ((size_t)times - 1) * sep;
  if ((double)size > max_bytes) {
    agentrt_result_error(r, "too_long", "the result would be %zu bytes, more than max_bytes (%.0f)", size, max_bytes);
    return;
  }
  char *out = malloc(size + 1), *o = out;
  if (!out) {
    agentrt_result_error(r, "internal", "out of memory");
    return;
  }
  for (int i = 0; i < (int)times; i++) {
    if (i > 0) {
      memcpy(o, separator, sep);
      o += sep;
    }
    memcpy(o, text, n);
    o += n;
  }
  for (size_t i = 0; upper && i < size; i++) {
    if (out[i] >= 'a' && out[i] <= 'z') out[i] = (char)(out[i] - 'a' + 'A');
  }
  agentrt_result_text(r, out, size); /* copies: out can go */
  free(out);
}

void agentrt_plugin(void) {
  agentrt_declare("tool", "repeat", "1.0.0", "Repeats a text (C SDK example).");
  agentrt_tool("repeat", "Repeat a text a number of times.",
               "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"},"
               "\"times\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10},\"upper\":{\"type\":\"boolean\"}},"
               "\"required\":[\"text\",\"times\"]}",
               repeat);
  agentrt_config_schema("{\"type\":\"object\",\"properties\":{\"separator\":{\"type\":\"string\"},"
                        "\"max_bytes\":{\"type\":\"integer\",\"minimum\":1}},\"additionalProperties\":false}");
  agentrt_on_init(init);
}
