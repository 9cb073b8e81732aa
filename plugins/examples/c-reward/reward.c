/* label_reward: the C SDK's example reward hook (plugins/sdk/c/README.md). At episode_end it sets the trajectory's
 * reward: reward_correct if the last assistant message contains the episode's label (a string), reward_wrong
 * otherwise (ASCII case and surrounding white space ignored unless case_sensitive); no reward without a string
 * label. Metrics: turns, tool_calls and, with a label, correct (1 or 0). */
#include <stdlib.h>
#include <string.h>

#include "agentrt.h"

static double reward_correct = 1, reward_wrong = 0;
static int case_sensitive = 0;

static void init(agentrt_json cfg, agentrt_result *r) {
  agentrt_json_type k = agentrt_json_kind(cfg);
  if (k == AGENTRT_JSON_NULL) return;
  if (k != AGENTRT_JSON_OBJECT) {
    agentrt_result_error(r, "bad_config", "config must be a table");
    return;
  }
  for (size_t i = 0; i < agentrt_json_count(cfg); i++) {
    const char *key = agentrt_json_key(cfg, i, NULL);
    agentrt_json v = agentrt_json_at(cfg, i);
    if (strcmp(key, "reward_correct") == 0 || strcmp(key, "reward_wrong") == 0) {
      if (!agentrt_json_num(v, strcmp(key, "reward_correct") == 0 ? &reward_correct : &reward_wrong)) {
        agentrt_result_error(r, "bad_config", "%s must be a number", key);
        return;
      }
    } else if (strcmp(key, "case_sensitive") == 0) {
      if (!agentrt_json_bool(v, &case_sensitive)) {
        agentrt_result_error(r, "bad_config", "case_sensitive must be a boolean");
        return;
      }
    } else {
      agentrt_result_error(r, "bad_config", "unknown key \"%s\" (known: reward_correct, reward_wrong, case_sensitive)", key);
      return;
    }
  }
}

/* normalize trims ASCII white space and, unless case_sensitive, lower-cases ASCII letters, in place. */
static char *normalize(char *s) {
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = 0;
  for (size_t i = 0; !case_sensitive && i < n; i++) {
    if (s[i] >= 'A' && s[i] <= 'Z') s[i] = (char)(s[i] - 'A' + 'a');
  }
  return s;
}

static void episode_end(const agentrt_event *ev, agentrt_result *r) {
  double tool_calls = 0;
  agentrt_json_num(agentrt_json_get(agentrt_json_get(ev->raw, "counts"), "tool_calls"), &tool_calls);
  agentrt_hook_metric(r, "turns", (double)ev->turn);
  agentrt_hook_metric(r, "tool_calls", tool_calls);
  const char *label = agentrt_json_str(agentrt_json_get(ev->raw, "label"), NULL);
  if (!label) return; /* no string label: no reward */
  const char *answer = "";
  agentrt_json msgs = agentrt_json_get(ev->raw, "messages");
  for (size_t i = agentrt_json_count(msgs); i-- > 0;) {
    agentrt_json m = agentrt_json_at(msgs, i);
    const char *role = agentrt_json_str(agentrt_json_get(m, "role"), NULL);
    if (role && strcmp(role, "assistant") == 0) {
      const char *c = agentrt_json_str(agentrt_json_get(m, "content"), NULL);
      answer = c ? c : "";
      break;
    }
  }
  char *want = strdup(label), *got = strdup(answer);
  if (!want || !got) {
    agentrt_result_error(r, "internal", "out of memory");
  } else {
    const char *w = normalize(want);
    int hit = *w && strstr(normalize(got), w) != NULL;
    agentrt_hook_reward(r, hit ? reward_correct : reward_wrong);
    agentrt_hook_metric(r, "correct", hit ? 1 : 0);
  }
  free(want);
  free(got);
}

void agentrt_plugin(void) {
  agentrt_declare("hook", "label_reward", "1.0.0", "Label-match reward at episode end (C SDK example).");
  agentrt_on("episode_end", episode_end);
  agentrt_config_schema("{\"type\":\"object\",\"properties\":{\"reward_correct\":{\"type\":\"number\"},"
                        "\"reward_wrong\":{\"type\":\"number\"},\"case_sensitive\":{\"type\":\"boolean\"}},"
                        "\"additionalProperties\":false}");
  agentrt_on_init(init);
}
