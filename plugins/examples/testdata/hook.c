/* hook: a test plugin (C SDK) for plugins/examples TestSDKHooks. episode_end: reward 1 if status is "completed"
 * (else 0.25), metric turns, state {"n": counts.tool_calls}. before_tool_call: cancel from index 1, stop from index 5,
 * an error from index 9. Config must be an object or null. */
#include <string.h>

#include "agentrt.h"

static void end(const agentrt_event *ev, agentrt_result *r) {
  const char *st = agentrt_json_str(agentrt_json_get(ev->raw, "status"), NULL);
  agentrt_hook_reward(r, st && strcmp(st, "completed") == 0 ? 1.0 : 0.25);
  agentrt_hook_metric(r, "turns", (double)ev->turn);
  agentrt_writer *w = agentrt_hook_state(r);
  agentrt_w_object(w);
  agentrt_w_key(w, "n");
  agentrt_w_raw(w, agentrt_json_get(agentrt_json_get(ev->raw, "counts"), "tool_calls"));
  agentrt_w_object_end(w);
}

static void before_tool(const agentrt_event *ev, agentrt_result *r) {
  double idx = 0;
  agentrt_json_num(agentrt_json_get(agentrt_json_get(ev->raw, "tool_call"), "index"), &idx);
  if (idx >= 9) {
    agentrt_result_error(r, "too_far", "tool call index %g", idx);
    return;
  }
  if (idx >= 1) agentrt_hook_cancel_tool(r, "one call per turn");
  if (idx >= 5) agentrt_hook_stop(r, "too_many", "stop now");
}

static void init(agentrt_json cfg, agentrt_result *r) {
  agentrt_json_type k = agentrt_json_kind(cfg);
  if (k != AGENTRT_JSON_OBJECT && k != AGENTRT_JSON_NULL) agentrt_result_error(r, "bad_config", "config must be a table");
}

void agentrt_plugin(void) {
  agentrt_declare("hook", "hook_c", "1.0.0", "SDK hook test plugin.");
  agentrt_on("episode_end", end);
  agentrt_on("before_tool_call", before_tool);
  agentrt_on_init(init);
}
