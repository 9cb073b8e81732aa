// stop_phrase: the AssemblyScript SDK's example hook (plugins/sdk/assemblyscript/README.md): stops the episode once
// the model has written a configured phrase `after` times, counting in the hook's per-episode state.
import { Event, Hook, HookResponse, Manifest, Result, Value, register } from "agentrt/assembly/index";

class StopPhrase extends Hook {
  phrase: string = ""; // config "phrase", required
  after: i64 = 1; // config "after", default 1

  manifest(): Manifest {
    return new Manifest("stop_phrase", "1.0.0", "Stops an episode once the model writes a phrase (AssemblyScript SDK example).")
      .event("message_added")
      .messageRole("assistant") // only the model's messages: the host skips the others
      .config('{"type":"object","properties":{"phrase":{"type":"string"},"after":{"type":"integer","minimum":1}},"required":["phrase"]}');
  }

  init(config: Value): Result {
    if (!config.isNull && !config.isObject) return Result.error("bad_config", "config must be a table");
    for (let i = 0; i < config.keys.length; i++) {
      const key = config.keys[i];
      if (key != "phrase" && key != "after") return Result.error("bad_config", 'unknown key "' + key + '" (known: phrase, after)');
    }
    const p = config.get("phrase");
    if (p == null || !p.isString || p.s == "") return Result.error("bad_config", "phrase must be a non-empty string");
    this.phrase = p.s;
    const a = config.get("after");
    if (a != null) {
      if (!a.isNumber || a.n < 1 || a.n != Math.floor(a.n)) return Result.error("bad_config", "after must be an integer >= 1");
      this.after = <i64>a.n;
    }
    return Result.ok();
  }

  onEvent(ev: Event): HookResponse {
    const msg = ev.get("message");
    if (msg == null) return new HookResponse();
    const role = msg.get("role");
    const content = msg.get("content");
    if (role == null || !role.isString || role.s != "assistant" || content == null || !content.isString || !content.s.includes(this.phrase)) {
      return new HookResponse(); // {}: carry on
    }
    let hits: i64 = 1;
    const state = ev.state;
    if (state != null) {
      const h = state.get("hits");
      if (h != null && h.isNumber) hits = <i64>h.n + 1;
    }
    // The state comes back as "state" on this episode's next event.
    const r = new HookResponse().state(Value.object().set("hits", Value.number(<f64>hits)));
    if (hits >= this.after) {
      r.stop("stop_phrase", 'the model wrote "' + this.phrase + '" (' + hits.toString() + " of " + this.after.toString() + ")");
    }
    return r;
  }
}

register(new StopPhrase());
export * from "agentrt/assembly/exports";
