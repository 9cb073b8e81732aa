// hook: a test plugin (AssemblyScript SDK) for plugins/examples TestSDKHooks; same behaviour as ../../hook.c.

import { Event, Hook, HookResponse, Manifest, Result, Value, register } from "agentrt/assembly/index";

class TestHook extends Hook {
  manifest(): Manifest {
    return new Manifest("hook_as", "1.0.0", "SDK hook test plugin.").event("episode_end").event("before_tool_call");
  }
  init(config: Value): Result {
    if (!config.isObject && !config.isNull) return Result.error("bad_config", "config must be a table");
    return Result.ok();
  }
  onEvent(ev: Event): HookResponse {
    if (ev.event == "episode_end") {
      const s = ev.get("status");
      return new HookResponse()
        .reward(s != null && s.isString && s.s == "completed" ? 1.0 : 0.25)
        .metric("turns", <f64>ev.turn)
        .state(Value.object().set("n", Value.number(<f64>ev.count("tool_calls"))));
    }
    const tc = ev.get("tool_call");
    const iv = tc != null ? tc.get("index") : null;
    const idx = iv != null && iv.isNumber ? iv.n : 0;
    if (idx >= 9) return this.fail("too_far", "tool call index " + idx.toString());
    const r = new HookResponse();
    if (idx >= 1) r.cancelTool("one call per turn");
    if (idx >= 5) r.stop("too_many", "stop now");
    return r;
  }
}

register(new TestHook());

export * from "agentrt/assembly/exports";
