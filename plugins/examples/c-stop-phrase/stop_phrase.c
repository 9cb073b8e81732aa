/* stop_phrase: the C SDK's example hook (plugins/sdk/c/README.md): stops the episode once the model has written a
 * configured phrase `after` times, counting in the hook's per-episode state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrt.h"

static char *phrase;      /* config "phrase", required */
static double after = 1; /* config "after", default 1 */

static void init(agentrt_json cfg, agentrt_result *r) {
  agentrt_json_type k = agentrt_json_kind(cfg);
  if (k != AGENTRT_JSON_OBJECT && k != AGENTRT_JSON_NULL) {
    agentrt_result_error(r, "bad_config", "config must be a table");
    return;
  }
  for (size_t i = 0; i < agentrt_json_count(cfg); i++) {
    const char *key = agentrt_json_key(cfg, i, NULL);
    if (strcmp(key, "phrase") != 0 && strcmp(key, "after") != 0) {
      agentrt_result_error(r, "bad_config", "unknown key \"%s\" (known: phrase, after)", key);
      return;
    }
  }
  size_t n = 0;
  const char *p = agentrt_json_str(agentrt_json_get(cfg, "phrase"), &n);
  if (!p || n == 0) {
    agentrt_result_error(r, "bad_config", "phrase must be a non-empty string");
    return;
  }
  phrase = strdup(p);
  agentrt_json a = agentrt_json_get(cfg, "after");
  if (agentrt_json_kind(a) != AGENTRT_JSON_INVALID &&
      (!agentrt_json_num(a, &after) || after < 1 || after != (double)(long long)after)) {
    agentrt_result_error(r, "bad_config", "after must be an integer >= 1");
  }
}

static void message_added(const agentrt_event *ev, agentrt_result *r) {
  agentrt_json msg = agentrt_json_get(ev->raw, "message");
  const char *role = agentrt_json_str(agentrt_json_get(msg, "role"), NULL);
  const char *content = agentrt_json_str(agentrt_json_get(msg, "content"), NULL);
  if (!role || strcmp(role, "assistant") != 0 || !content || !strstr(content, phrase)) return; /* {}: carry on */
  double hits = 0;
  agentrt_json_num(agentrt_json_get(agentrt_json_get(ev->raw, "state"), "hits"), &hits);
  hits++;
  agentrt_writer *w = agentrt_hook_state(r); /* handed back as "state" on this episode's next event */
  agentrt_w_object(w);
  agentrt_w_key(w, "hits");
  agentrt_w_int(w, (int64_t)hits);
  agentrt_w_object_end(w);
  if (hits >= after) {
    size_t size = strlen(phrase) + 64;
    char *m = malloc(size);
    if (!m) {
      agentrt_result_error(r, "internal", "out of memory");
      return;
    }
    snprintf(m, size, "the model wrote \"%s\" (%lld of %lld)", phrase, (long long)hits, (long long)after);
    agentrt_hook_stop(r, "stop_phrase", m); /* copies m */
    free(m);
  }
}

void agentrt_plugin(void) {
  agentrt_declare("hook", "stop_phrase", "1.0.0", "Stops an episode once the model writes a phrase (C SDK example).");
  agentrt_on("message_added", message_added);
  agentrt_message_role("assistant"); /* only the model's messages: the host skips the others */
  agentrt_config_schema("{\"type\":\"object\",\"properties\":{\"phrase\":{\"type\":\"string\"},"
                        "\"after\":{\"type\":\"integer\",\"minimum\":1}},\"required\":[\"phrase\"]}");
  agentrt_on_init(init);
}
