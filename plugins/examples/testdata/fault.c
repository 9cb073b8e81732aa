/* fault: a test plugin (C SDK) for plugins/examples TestSDKFaults: mode "log" logs through agentrt_v1.log and
 * returns "logged"; mode "trap" crashes the guest. */
#include <string.h>

#include "agentrt.h"

static void fault(const agentrt_tool_call *call, agentrt_result *r) {
  const char *mode = agentrt_json_str(agentrt_json_get(call->arguments, "mode"), NULL);
  if (mode && strcmp(mode, "trap") == 0) __builtin_trap();
  agentrt_log(AGENTRT_LOG_WARN, "fault: log from %s", "c");
  agentrt_result_text(r, "logged", 6);
}

void agentrt_plugin(void) {
  agentrt_declare("tool", "fault_c", NULL, "SDK fault test plugin.");
  agentrt_tool("fault", "Log or crash.", "{\"type\":\"object\"}", fault);
}
