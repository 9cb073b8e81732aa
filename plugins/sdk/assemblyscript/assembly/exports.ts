// The exports of agentrt's plugin ABI version 1, implemented over the plugin registered with register().
// Re-export them from your entry file: export * from "<sdk>/assembly/exports";

import { plugin, ABI_VERSION, Result, Plugin } from "./index";
import { Value, quote } from "./json";

// The last output; it stays valid until the next export call (ABI.md section 2.2). Unmanaged memory.
let outPtr: usize = 0;
let outCap: usize = 0;

function output(s: string): i64 {
  const n = <usize>String.UTF8.byteLength(s);
  if (n > outCap) {
    if (outPtr != 0) heap.free(outPtr);
    outCap = n < 256 ? 256 : n;
    outPtr = heap.alloc(outCap);
  }
  String.UTF8.encodeUnsafe(changetype<usize>(s), s.length, outPtr);
  return (<i64>outPtr << 32) | <i64>n;
}

function takeInput(ptr: usize, len: i32): string {
  const s = len > 0 ? String.UTF8.decodeUnsafe(ptr, <usize>len) : "";
  if (ptr != 0) heap.free(ptr);
  return s;
}

function envelope(p: Plugin, r: Result): i64 {
  if (r.isError) {
    return output('{"error":{"code":' + quote(r.code) + ',"message":' + quote(r.message) + "}}");
  }
  let ok = "{}";
  if (p.kind() == "tool") {
    const j = r.json;
    const t = r.text;
    if (j != null) ok = '{"json":' + j.toJSON() + "}";
    else ok = '{"text":' + quote(t != null ? t : "") + "}";
  } else {
    const j = r.json;
    if (j != null) ok = j.toJSON();
  }
  return output('{"ok":' + ok + "}");
}

export function agentrt_abi_version(): i32 {
  return ABI_VERSION;
}

export function agentrt_alloc(size: i32): usize {
  return heap.alloc(size > 0 ? <usize>size : 1);
}

export function agentrt_free(ptr: usize): void {
  if (ptr != 0) heap.free(ptr);
}

export function agentrt_describe(): i64 {
  const p = plugin();
  const m = p.manifest();
  const o = Value.object()
    .set("abi_version", Value.number(ABI_VERSION))
    .set("kind", Value.string(p.kind()))
    .set("name", Value.string(m.name));
  if (m.version != "") o.set("version", Value.string(m.version));
  if (m.description != "") o.set("description", Value.string(m.description));
  if (m.tools.length > 0) {
    const tools = Value.array();
    for (let i = 0; i < m.tools.length; i++) {
      const t = m.tools[i];
      tools.push(
        Value.object()
          .set("name", Value.string(t.name))
          .set("description", Value.string(t.description))
          .set("parameters", t.parameters),
      );
    }
    o.set("tools", tools);
  }
  if (m.events.length > 0) {
    const evs = Value.array();
    for (let i = 0; i < m.events.length; i++) evs.push(Value.string(m.events[i]));
    o.set("events", evs);
  }
  if (m.messageRoles.length > 0) {
    const roles = Value.array();
    for (let i = 0; i < m.messageRoles.length; i++) roles.push(Value.string(m.messageRoles[i]));
    o.set("message_roles", roles);
  }
  const cs = m.configSchema;
  if (cs != null) o.set("config_schema", cs);
  return output(o.toJSON());
}

export function agentrt_init(ptr: usize, len: i32): i64 {
  const p = plugin();
  const v = parse(takeInput(ptr, len));
  if (v == null || !v.isObject) return envelope(p, Result.badInput("init input is not a JSON object"));
  const c = v.get("config");
  const t = v.get("tools");
  const r = p.setup(c != null ? c : Value.nul(), t != null && t.isArray ? t : Value.array());
  if (r.isError) return envelope(p, r);
  return output('{"ok":{}}');
}

export function agentrt_call(ptr: usize, len: i32): i64 {
  const p = plugin();
  return envelope(p, p.handle(takeInput(ptr, len)));
}

import { parse } from "./json";
