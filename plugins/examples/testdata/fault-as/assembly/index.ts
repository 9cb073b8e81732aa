// fault: a test plugin (AssemblyScript SDK) for plugins/examples TestSDKFaults: mode "log" logs through
// agentrt_v1.log and returns "logged"; mode "trap" reads past an array (abort -> logged, then a trap).

import { Manifest, Result, Tool, ToolCall, ToolSpec, log, register } from "agentrt/assembly/index";

class Fault extends Tool {
  manifest(): Manifest {
    return new Manifest("fault_as", "", "SDK fault test plugin.").tool(new ToolSpec("fault", "Log or crash.", '{"type":"object"}'));
  }
  call(call: ToolCall): Result {
    const mode = call.str("mode");
    if (mode != null && mode == "trap") {
      const a = new Array<i32>(2);
      return Result.text(a[5].toString());
    }
    log(2, "fault: log from as");
    return Result.text("logged");
  }
}

register(new Fault());

export * from "agentrt/assembly/exports";
