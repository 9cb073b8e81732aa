// agentrt: the AssemblyScript guest SDK of agentrt's plugin ABI version 1 (plugins/ABI.md).
//
// Subclass Tool (or Hook, or Parser), register an instance at the top level of your entry file, and re-export the
// ABI from "exports":
//
//   import { Tool, ToolCall, Result, Manifest, ToolSpec, register } from "<sdk>/assembly/index";
//   class Echo extends Tool { ... }
//   register(new Echo());
//   export * from "<sdk>/assembly/exports";
//
// The host pools instances and may replace one at any time: keep no per-episode state in globals (hooks get a
// per-episode state value instead: Event.state, HookResponse.state).

import { Value, parse, lastError } from "./json";
export { Value, Kind, parse, lastError, quote, formatNumber } from "./json";

export const ABI_VERSION: i32 = 1;

/** ToolSpec is one tool: name, a description for the model, and the JSON Schema of its arguments object. */
export class ToolSpec {
  parameters: Value;
  /** parameters is the JSON Schema as JSON text; text that does not parse becomes {"type":"object"}. */
  constructor(public name: string, public description: string, parameters: string) {
    const p = parse(parameters);
    this.parameters = p != null ? p : Value.object().set("type", Value.string("object"));
  }
}

/** Manifest is what a plugin says about itself; kind comes from its class (Tool, Hook, Parser). */
export class Manifest {
  tools: Array<ToolSpec> = [];
  events: Array<string> = [];
  messageRoles: Array<string> = [];
  configSchema: Value | null = null;
  constructor(public name: string, public version: string = "", public description: string = "") {}

  tool(spec: ToolSpec): Manifest {
    this.tools.push(spec);
    return this;
  }
  event(name: string): Manifest {
    this.events.push(name);
    return this;
  }
  /** Limits message_added to messages of this role ("system", "user", "assistant", "tool"); once per role. Without
   * it every message reaches the hook; with it the host skips the others without a call. */
  messageRole(role: string): Manifest {
    this.messageRoles.push(role);
    return this;
  }
  config(schema: string): Manifest {
    this.configSchema = parse(schema);
    return this;
  }
}

/** Result is a handler's outcome: a value (tools: text or JSON) or an error with a snake_case code. */
export class Result {
  text: string | null = null;
  json: Value | null = null;
  code: string = "";
  message: string = "";

  get isError(): bool {
    return this.code != "";
  }
  /** text is a tool's text result. */
  static text(s: string): Result {
    const r = new Result();
    r.text = s;
    return r;
  }
  /** json is a tool's JSON result (or a parser's ParseResult object). */
  static json(v: Value): Result {
    const r = new Result();
    r.json = v;
    return r;
  }
  static error(code: string, message: string): Result {
    const r = new Result();
    r.code = code;
    r.message = message;
    return r;
  }
  static badInput(message: string): Result {
    return Result.error("bad_input", message);
  }
  static ok(): Result {
    return new Result();
  }
}

/** ToolCall is a tool's input: name is one of the module's tools, arguments a JSON object. */
export class ToolCall {
  constructor(public id: string, public name: string, public arguments: Value) {}

  /** str returns the string argument key, or null. */
  str(key: string): string | null {
    const v = this.arguments.get(key);
    return v != null && v.isString ? v.s : null;
  }
  /** num returns the number argument key, or NaN. */
  num(key: string): f64 {
    const v = this.arguments.get(key);
    return v != null && v.isNumber ? v.n : NaN;
  }
  /** arg returns the argument key as given, or null when it is absent or JSON null (optional arguments). */
  arg(key: string): Value | null {
    const v = this.arguments.get(key);
    return v != null && !v.isNull ? v : null;
  }
}

/** Event is a hook's input; raw is the whole event object (counts, message, tool_call, state, ...). */
export class Event {
  constructor(public event: string, public episodeID: string, public turn: i64, public raw: Value) {}

  get(key: string): Value | null {
    return this.raw.get(key);
  }
  /** count returns a running counter such as "tool_calls"; 0 when absent. */
  count(name: string): i64 {
    const c = this.raw.get("counts");
    if (c == null) return 0;
    const v = c.get(name);
    return v != null && v.isNumber ? <i64>v.n : 0;
  }
  get state(): Value | null {
    return this.raw.get("state");
  }
}

/** HookResponse is a hook's answer; a fresh one means "carry on". */
export class HookResponse {
  value: Value = Value.object();
  stop(reason: string, message: string): HookResponse {
    this.value.set("stop", Value.object().set("reason", Value.string(reason)).set("message", Value.string(message)));
    return this;
  }
  cancelTool(message: string): HookResponse {
    this.value.set("cancel_tool", Value.string(message));
    return this;
  }
  toolArguments(args: Value): HookResponse {
    this.value.set("tool_arguments", args);
    return this;
  }
  reward(r: f64): HookResponse {
    this.value.set("reward", Value.number(r));
    return this;
  }
  metric(name: string, v: f64): HookResponse {
    let m = this.value.get("metrics");
    if (m == null) {
      m = Value.object();
      this.value.set("metrics", m);
    }
    m.set(name, Value.number(v));
    return this;
  }
  state(v: Value): HookResponse {
    this.value.set("state", v);
    return this;
  }
}

/** Plugin is the common base; subclass Tool, Hook or Parser instead. */
export class Plugin {
  kind(): string {
    return "";
  }
  manifest(): Manifest {
    return new Manifest("");
  }
  /** init receives the plugin's config (a null Value when there is none); return Result.error to refuse it. */
  init(config: Value): Result {
    return Result.ok();
  }
  /** setup is what the SDK calls at initialisation: config, and for a parser the agent's tool specs (an array of
   * {"name", "description", "parameters"}; [] for other kinds). It calls init; a parser that checks tool names
   * overrides setup instead. */
  setup(config: Value, tools: Value): Result {
    return this.init(config);
  }
  /** handle gets the raw input of agentrt_call; the subclasses decode it. */
  handle(input: string): Result {
    return Result.error("internal", "plugin does not implement handle");
  }
}

export class Tool extends Plugin {
  private toolNames: Array<string> | null = null;
  kind(): string {
    return "tool";
  }
  call(call: ToolCall): Result {
    return Result.error("internal", "tool does not implement call");
  }
  handle(input: string): Result {
    const v = parse(input);
    if (v == null || !v.isObject) return Result.badInput(v == null ? lastError : "input is not a JSON object");
    const n = v.get("name");
    const name = n != null && n.isString ? n.s : "";
    let names = this.toolNames;
    if (names == null) {
      // Read the manifest once: building it parses every schema.
      const tools = this.manifest().tools;
      names = new Array<string>();
      for (let i = 0; i < tools.length; i++) names.push(tools[i].name);
      this.toolNames = names;
    }
    if (!names.includes(name)) return Result.error("unknown_tool", "unknown tool " + quote(name));
    const a = v.get("arguments");
    if (a == null || !a.isObject) return Result.badInput("tool " + name + ": arguments must be a JSON object");
    const id = v.get("id");
    const r = this.call(new ToolCall(id != null && id.isString ? id.s : "", name, a));
    if (!r.isError && r.json == null && r.text == null) r.text = "";
    return r;
  }
}

export class Hook extends Plugin {
  kind(): string {
    return "hook";
  }
  onEvent(ev: Event): HookResponse {
    return new HookResponse();
  }
  /** fail lets onEvent report an error: return hook.fail(code, message). */
  private failure: Result | null = null;
  fail(code: string, message: string): HookResponse {
    this.failure = Result.error(code, message);
    return new HookResponse();
  }
  handle(input: string): Result {
    const v = parse(input);
    if (v == null || !v.isObject) return Result.badInput(v == null ? lastError : "input is not a JSON object");
    const e = v.get("event");
    const ep = v.get("episode_id");
    const t = v.get("turn");
    const ev = new Event(
      e != null && e.isString ? e.s : "",
      ep != null && ep.isString ? ep.s : "",
      t != null && t.isNumber ? <i64>t.n : 0,
      v,
    );
    this.failure = null;
    const r = this.onEvent(ev);
    const f = this.failure;
    if (f != null) return f;
    return Result.json(r.value);
  }
}

/** byteOffset converts an index into text (UTF-16 code units, as AssemblyScript strings count) into the UTF-8
 * byte offset that parser spans use (ABI.md section 5.1). */
export function byteOffset(text: string, index: i32): i32 {
  let n = 0;
  for (let i = 0; i < index && i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if ((c & 0xfc00) == 0xd800 && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) == 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** Parser is a parser plugin: parse gets the completion text; spans in the result are UTF-8 byte offsets (see
 * byteOffset). */
export class Parser extends Plugin {
  kind(): string {
    return "parser";
  }
  /** parse turns the completion text into a ParseResult object: {"calls", "normal_text", "errors"}. */
  parse(text: string): Result {
    return Result.json(Value.object());
  }
  handle(input: string): Result {
    return this.parse(input);
  }
}

import { quote } from "./json";

let registered: Plugin | null = null;

/** register makes p the module's plugin; call it once at the top level of the entry file. */
export function register(p: Plugin): void {
  registered = p;
}

/** plugin returns the registered plugin (aborts if there is none: a build mistake). */
export function plugin(): Plugin {
  const p = registered;
  if (p == null) {
    log(3, "agentrt: no plugin registered: call register(new MyPlugin()) at the top level of the entry file");
    unreachable();
  }
  return changetype<Plugin>(p);
}

// @ts-ignore: decorator
@external("agentrt_v1", "log")
declare function hostLog(level: i32, ptr: usize, len: i32): void;

/** log writes message to the runtime's structured log: level 0 debug, 1 info, 2 warn, 3 error. */
export function log(level: i32, message: string): void {
  const buf = String.UTF8.encode(message);
  hostLog(level, changetype<usize>(buf), buf.byteLength);
}

/** agentrtAbort replaces AssemblyScript's abort (asc --use abort=...): it logs the message, then traps. */
export function agentrtAbort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  log(3, "abort: " + (message != null ? message : "") + " at " + (fileName != null ? fileName : "") + ":" +
    line.toString() + ":" + column.toString());
  unreachable();
}
