// xmltag: the AssemblyScript SDK's example parser (plugins/sdk/assemblyscript/README.md), the same as ../go-xmltag:
// tool calls written as JSON between two tags, by default Hermes-style <tool_call>{"name": ..., "arguments": {...}}
// </tool_call>. Strict: a malformed call is an error with a reason and its raw text, never repaired. Config
// (optional): {"open": "...", "close": "..."}. Spans are UTF-8 byte offsets (byteOffset converts string indices).
import { Manifest, Parser, Result, Value, byteOffset, lastError, parse, register } from "agentrt/assembly/index";

class XmlTag extends Parser {
  open: string = "<tool_call>";
  close: string = "</tool_call>";
  known: Array<string> = []; // the agent's tool names; empty: every name is accepted

  manifest(): Manifest {
    return new Manifest("xmltag", "1.0.0", "Tool calls as JSON between two tags (AssemblyScript SDK example).").config(
      '{"type":"object","properties":{"open":{"type":"string"},"close":{"type":"string"}}}',
    );
  }

  // setup, not init: a parser that checks tool names needs the agent's tools too.
  setup(config: Value, tools: Value): Result {
    const o = config.get("open");
    const c = config.get("close");
    if ((o != null && (!o.isString || o.s == "")) || (c != null && (!c.isString || c.s == ""))) {
      return Result.error("bad_config", "open and close must be non-empty strings");
    }
    if (o != null) this.open = o.s;
    if (c != null) this.close = c.s;
    for (let i = 0; i < tools.items.length; i++) {
      const n = tools.items[i].get("name");
      if (n != null && n.isString) this.known.push(n.s);
    }
    return Result.ok();
  }

  parse(text: string): Result {
    const calls = Value.array();
    const errors = Value.array();
    const normal = new Array<string>();
    let pos = 0;
    while (true) {
      const start = text.indexOf(this.open, pos);
      if (start < 0) break;
      normal.push(text.substring(pos, start));
      const bodyStart = start + this.open.length;
      const j = text.indexOf(this.close, bodyStart);
      if (j < 0) {
        errors.push(error("unclosed_tag", "no closing tag after the opening one", text, start, text.length));
        pos = text.length;
        break;
      }
      const end = j + this.close.length;
      pos = end;
      const body = parse(text.substring(bodyStart, j));
      if (body == null) {
        errors.push(error("malformed_json", lastError, text, start, end));
        continue;
      }
      const name = body.get("name");
      if (name == null || !name.isString || name.s == "") {
        errors.push(error("missing_name", 'the call has no "name" string', text, start, end));
        continue;
      }
      if (this.known.length > 0 && !this.known.includes(name.s)) {
        errors.push(error("unknown_tool", "the agent has no such tool", text, start, end));
        continue;
      }
      let args = body.get("arguments");
      if (args == null) args = Value.object();
      if (!args.isObject) {
        errors.push(error("bad_arguments", '"arguments" is not a JSON object', text, start, end));
        continue;
      }
      calls.push(Value.object().set("name", Value.string(name.s)).set("arguments", args).set("span", span(text, start, end)));
    }
    normal.push(text.substring(pos));
    return Result.json(
      Value.object().set("calls", calls).set("normal_text", Value.string(normal.join(""))).set("errors", errors),
    );
  }
}

// span is [start, end) in UTF-8 bytes for string indices start and end.
function span(text: string, start: i32, end: i32): Value {
  return Value.array().push(Value.number(byteOffset(text, start))).push(Value.number(byteOffset(text, end)));
}

function error(reason: string, message: string, text: string, start: i32, end: i32): Value {
  return Value.object()
    .set("reason", Value.string(reason))
    .set("message", Value.string(message))
    .set("raw", Value.string(text.substring(start, end)))
    .set("span", span(text, start, end));
}

register(new XmlTag());
export * from "agentrt/assembly/exports";
