// label_reward: the AssemblyScript SDK's example reward hook (plugins/sdk/assemblyscript/README.md). At
// episode_end it sets the trajectory's reward: reward_correct if the last assistant message contains the
// episode's label (a string), reward_wrong otherwise (ASCII case and surrounding white space ignored unless
// case_sensitive); no reward without a string label. Metrics: turns, tool_calls and, with a label, correct.
import { Event, Hook, HookResponse, Manifest, Result, Value, register } from "agentrt/assembly/index";

class LabelReward extends Hook {
  correct: f64 = 1;
  wrong: f64 = 0;
  caseSensitive: bool = false;

  manifest(): Manifest {
    return new Manifest("label_reward", "1.0.0", "Label-match reward at episode end (AssemblyScript SDK example).")
      .event("episode_end")
      .config('{"type":"object","properties":{"reward_correct":{"type":"number"},"reward_wrong":{"type":"number"},"case_sensitive":{"type":"boolean"}},"additionalProperties":false}');
  }

  init(config: Value): Result {
    if (config.isNull) return Result.ok();
    if (!config.isObject) return Result.error("bad_config", "config must be a table");
    for (let i = 0; i < config.keys.length; i++) {
      const key = config.keys[i];
      const v = config.items[i];
      if (key == "reward_correct" || key == "reward_wrong") {
        if (!v.isNumber) return Result.error("bad_config", key + " must be a number");
        if (key == "reward_correct") this.correct = v.n;
        else this.wrong = v.n;
      } else if (key == "case_sensitive") {
        if (!v.isBool) return Result.error("bad_config", "case_sensitive must be a boolean");
        this.caseSensitive = v.b;
      } else {
        return Result.error("bad_config", 'unknown key "' + key + '" (known: reward_correct, reward_wrong, case_sensitive)');
      }
    }
    return Result.ok();
  }

  // normalize trims ASCII white space and, unless caseSensitive, lower-cases ASCII letters.
  normalize(s: string): string {
    let lo = 0;
    let hi = s.length;
    while (lo < hi && isSpace(s.charCodeAt(lo))) lo++;
    while (hi > lo && isSpace(s.charCodeAt(hi - 1))) hi--;
    const parts = new Array<string>();
    for (let i = lo; i < hi; i++) {
      const c = s.charCodeAt(i);
      parts.push(!this.caseSensitive && c >= 65 && c <= 90 ? String.fromCharCode(c + 32) : s.charAt(i));
    }
    return parts.join("");
  }

  onEvent(ev: Event): HookResponse {
    const r = new HookResponse().metric("turns", <f64>ev.turn).metric("tool_calls", <f64>ev.count("tool_calls"));
    const label = ev.get("label");
    if (label == null || !label.isString) return r; // no string label: no reward
    let answer = "";
    const msgs = ev.get("messages");
    if (msgs != null) {
      for (let i = msgs.items.length - 1; i >= 0; i--) {
        const role = msgs.items[i].get("role");
        if (role != null && role.isString && role.s == "assistant") {
          const c = msgs.items[i].get("content");
          if (c != null && c.isString) answer = c.s;
          break;
        }
      }
    }
    const want = this.normalize(label.s);
    const hit = want != "" && this.normalize(answer).includes(want);
    return r.reward(hit ? this.correct : this.wrong).metric("correct", hit ? 1 : 0);
  }
}

function isSpace(c: i32): bool {
  return c == 32 || c == 9 || c == 10 || c == 13;
}

register(new LabelReward());
export * from "agentrt/assembly/exports";
