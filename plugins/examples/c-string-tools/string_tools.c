/* string_tools: an example tool plugin written with agentrt's C SDK (plugins/sdk/c).
 * Tools: reverse (reverses a string by Unicode code point) and upper (upper-cases ASCII letters).
 * Built by scripts/wasm.d/30-sdk-examples.sh into string_tools.wasm next to this file. */
#include <stdlib.h>
#include <string.h>

#include "agentrt.h"

static const char schema[] =
    "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\",\"description\":\"The input string.\"}},"
    "\"required\":[\"text\"]}";

/* text_arg returns the string argument "text", or sets a bad_input error and returns NULL. */
static const char *text_arg(const agentrt_tool_call *call, agentrt_result *r, size_t *n) {
  const char *s = agentrt_json_str(agentrt_json_get(call->arguments, "text"), n);
  if (!s) agentrt_result_error(r, "bad_input", "%s: argument \"text\" must be a string", call->name);
  return s;
}

static void reverse(const agentrt_tool_call *call, agentrt_result *r) {
  size_t n;
  const char *s = text_arg(call, r, &n);
  if (!s) return;
  char *out = malloc(n + 1);
  if (!out) {
    agentrt_result_error(r, "internal", "out of memory");
    return;
  }
  /* Copy each UTF-8 sequence (a lead byte and its continuation bytes) to the mirrored position. */
  size_t i = 0;
  while (i < n) {
    size_t j = i + 1;
    while (j < n && ((unsigned char)s[j] & 0xC0) == 0x80) j++;
    memcpy(out + n - j, s + i, j - i);
    i = j;
  }
  agentrt_result_text(r, out, n);
  free(out);
}

static void upper(const agentrt_tool_call *call, agentrt_result *r) {
  size_t n;
  const char *s = text_arg(call, r, &n);
  if (!s) return;
  char *out = malloc(n + 1);
  if (!out) {
    agentrt_result_error(r, "internal", "out of memory");
    return;
  }
  size_t changed = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c >= 'a' && c <= 'z') {
      c = (char)(c - 'a' + 'A');
      changed++;
    }
    out[i] = c;
  }
  agentrt_writer *w = agentrt_result_json(r);
  agentrt_w_object(w);
  agentrt_w_key(w, "text");
  agentrt_w_stringn(w, out, n);
  agentrt_w_key(w, "changed");
  agentrt_w_int(w, (int64_t)changed);
  agentrt_w_object_end(w);
  free(out);
}

void agentrt_plugin(void) {
  agentrt_declare("tool", "string_tools", "1.0.0", "String utilities (C SDK example).");
  agentrt_tool("reverse", "Reverse a string (by Unicode code point).", schema, reverse);
  agentrt_tool("upper", "Upper-case the ASCII letters of a string; returns the text and how many letters changed.",
               schema, upper);
}
