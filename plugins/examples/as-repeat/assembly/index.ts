// repeat: the AssemblyScript SDK's example tool (plugins/sdk/assemblyscript/README.md): typed arguments, a config,
// error results. repeat(text, times, upper?) writes text `times` times, joined by the configured separator.
import { Manifest, Result, Tool, ToolCall, ToolSpec, Value, register } from "agentrt/assembly/index";

class Repeat extends Tool {
  // Set by init from the plugin's config (the same on every call: not per-episode state).
  separator: string = " ";
  maxBytes: i64 = 1000;

  manifest(): Manifest {
    return new Manifest("repeat", "1.0.0", "Repeats a text (AssemblyScript SDK example).")
      .tool(
        new ToolSpec(
          "repeat",
          "Repeat a text a number of times.",
          '{"type":"object","properties":{"text":{"type":"string"},"times":{"type":"integer","minimum":1,"maximum":10},"upper":{"type":"boolean"}},"required":["text","times"]}',
        ),
      )
      .config('{"type":"object","properties":{"separator":{"type":"string"},"max_bytes":{"type":"integer","minimum":1}},"additionalProperties":false}');
  }

  init(config: Value): Result {
    if (config.isNull) return Result.ok(); // no config: the defaults
    if (!config.isObject) return Result.error("bad_config", "config must be a table");
    for (let i = 0; i < config.keys.length; i++) {
      const key = config.keys[i];
      const v = config.items[i];
      if (key == "separator") {
        if (!v.isString) return Result.error("bad_config", "separator must be a string");
        this.separator = v.s;
      } else if (key == "max_bytes") {
        if (!v.isNumber || v.n < 1 || v.n != Math.floor(v.n)) return Result.error("bad_config", "max_bytes must be an integer >= 1");
        this.maxBytes = <i64>v.n;
      } else {
        return Result.error("bad_config", 'unknown key "' + key + '" (known: separator, max_bytes)');
      }
    }
    return Result.ok();
  }

  call(call: ToolCall): Result {
    const text = call.str("text");
    if (text == null) return Result.badInput('repeat: argument "text" must be a string');
    const times = call.num("times"); // NaN when absent or not a number
    if (!(times >= 1 && times <= 10) || times != Math.floor(times)) {
      return Result.badInput('repeat: argument "times" must be an integer from 1 to 10');
    }
    let upper = false;
    const u = call.arg("upper");
    if (u != null) {
      if (!u.isBool) return Result.badInput('repeat: argument "upper" must be a boolean');
      upper = u.b;
    }
    const n = <i64>times;
    const size = n * String.UTF8.byteLength(text) + (n - 1) * String.UTF8.byteLength(this.separator);
    if (size > this.maxBytes) {
      return Result.error("too_long", "the result would be " + size.toString() + " bytes, more than max_bytes (" + this.maxBytes.toString() + ")");
    }
    const parts = new Array<string>();
    for (let i: i64 = 0; i < n; i++) parts.push(text);
    const out = parts.join(this.separator);
    return Result.text(upper ? asciiUpper(out) : out);
  }
}

// asciiUpper upper-cases the ASCII letters of s (String.toUpperCase would change other letters too).
function asciiUpper(s: string): string {
  const parts = new Array<string>();
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    parts.push(c >= 97 && c <= 122 ? String.fromCharCode(c - 32) : s.charAt(i));
  }
  return parts.join("");
}

register(new Repeat()); // top-level code runs in _initialize
export * from "agentrt/assembly/exports";
