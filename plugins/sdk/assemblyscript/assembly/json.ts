// A small JSON value type for agentrt's AssemblyScript SDK: parse, build, encode. No exceptions: parse returns
// null and leaves the reason in lastError (AssemblyScript has no try/catch).

export const enum Kind {
  Null = 0,
  Bool = 1,
  Number = 2,
  String = 3,
  Array = 4,
  Object = 5,
}

/** Value is one JSON value. Objects keep their members in order. */
export class Value {
  kind: Kind = Kind.Null;
  b: bool = false;
  n: f64 = 0;
  s: string = "";
  items: Array<Value> = [];
  keys: Array<string> = [];

  static nul(): Value {
    return new Value();
  }
  static boolean(b: bool): Value {
    const v = new Value();
    v.kind = Kind.Bool;
    v.b = b;
    return v;
  }
  static number(n: f64): Value {
    const v = new Value();
    v.kind = Kind.Number;
    v.n = n;
    return v;
  }
  static string(s: string): Value {
    const v = new Value();
    v.kind = Kind.String;
    v.s = s;
    return v;
  }
  static array(): Value {
    const v = new Value();
    v.kind = Kind.Array;
    return v;
  }
  static object(): Value {
    const v = new Value();
    v.kind = Kind.Object;
    return v;
  }

  /** push appends an element to an array and returns the array. */
  push(v: Value): Value {
    this.items.push(v);
    return this;
  }

  /** set adds (or replaces) a member of an object and returns the object. */
  set(key: string, v: Value): Value {
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] == key) {
        this.items[i] = v;
        return this;
      }
    }
    this.keys.push(key);
    this.items.push(v);
    return this;
  }

  /** get returns the member key of an object, or null. */
  get(key: string): Value | null {
    if (this.kind != Kind.Object) return null;
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] == key) return this.items[i];
    }
    return null;
  }

  get isNull(): bool {
    return this.kind == Kind.Null;
  }
  get isBool(): bool {
    return this.kind == Kind.Bool;
  }
  get isString(): bool {
    return this.kind == Kind.String;
  }
  get isNumber(): bool {
    return this.kind == Kind.Number;
  }
  get isObject(): bool {
    return this.kind == Kind.Object;
  }
  get isArray(): bool {
    return this.kind == Kind.Array;
  }

  /** toJSON encodes the value as compact JSON; NaN and infinities become null. */
  toJSON(): string {
    const parts = new Array<string>();
    this.write(parts);
    return parts.join("");
  }

  private write(out: Array<string>): void {
    switch (this.kind) {
      case Kind.Null:
        out.push("null");
        break;
      case Kind.Bool:
        out.push(this.b ? "true" : "false");
        break;
      case Kind.Number:
        out.push(formatNumber(this.n));
        break;
      case Kind.String:
        out.push(quote(this.s));
        break;
      case Kind.Array:
        out.push("[");
        for (let i = 0; i < this.items.length; i++) {
          if (i > 0) out.push(",");
          this.items[i].write(out);
        }
        out.push("]");
        break;
      default:
        out.push("{");
        for (let i = 0; i < this.keys.length; i++) {
          if (i > 0) out.push(",");
          out.push(quote(this.keys[i]));
          out.push(":");
          this.items[i].write(out);
        }
        out.push("}");
    }
  }
}

/** formatNumber writes integers without a fraction (AssemblyScript prints 1.0 for 1). */
export function formatNumber(n: f64): string {
  if (!isFinite(n)) return "null";
  if (n == Math.trunc(n) && Math.abs(n) < 9007199254740992) return (<i64>n).toString();
  return n.toString();
}

const HEX = "0123456789abcdef";

/** quote returns s as a JSON string literal. */
export function quote(s: string): string {
  let plain = true;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c == 0x22 || c == 0x5c) {
      plain = false;
      break;
    }
  }
  if (plain) return '"' + s + '"';
  let out = "";
  let run = 0;
  const parts = new Array<string>();
  parts.push('"');
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c != 0x22 && c != 0x5c) continue;
    parts.push(s.substring(run, i));
    run = i + 1;
    if (c == 0x22) parts.push('\\"');
    else if (c == 0x5c) parts.push("\\\\");
    else if (c == 0x0a) parts.push("\\n");
    else if (c == 0x0d) parts.push("\\r");
    else if (c == 0x09) parts.push("\\t");
    else parts.push("\\u00" + HEX.charAt(c >> 4) + HEX.charAt(c & 15));
  }
  parts.push(s.substring(run));
  parts.push('"');
  out = parts.join("");
  return out;
}

/** lastError is why the last parse returned null ("" after a successful parse). */
export let lastError = "";

/** parse parses exactly one JSON value; null if text is not well-formed (see lastError). */
export function parse(text: string): Value | null {
  const p = new JSONParser(text);
  p.ws();
  const v = p.value(0);
  if (v == null) {
    lastError = p.err;
    return null;
  }
  p.ws();
  if (p.i != text.length) {
    lastError = "invalid JSON at offset " + p.i.toString() + ": unexpected data after the value";
    return null;
  }
  lastError = "";
  return v;
}

class JSONParser {
  i: i32 = 0;
  err: string = "";
  constructor(public s: string) {}

  fail(what: string): Value | null {
    if (this.err == "") this.err = "invalid JSON at offset " + this.i.toString() + ": " + what;
    return null;
  }

  ws(): void {
    while (this.i < this.s.length) {
      const c = this.s.charCodeAt(this.i);
      if (c != 0x20 && c != 0x09 && c != 0x0a && c != 0x0d) break;
      this.i++;
    }
  }

  peek(): i32 {
    return this.i < this.s.length ? this.s.charCodeAt(this.i) : -1;
  }

  lit(word: string, v: Value): Value | null {
    for (let k = 0; k < word.length; k++) {
      if (this.i + k >= this.s.length || this.s.charCodeAt(this.i + k) != word.charCodeAt(k)) {
        return this.fail("unknown literal");
      }
    }
    this.i += word.length;
    return v;
  }

  value(depth: i32): Value | null {
    if (depth > 128) return this.fail("nested too deeply");
    const c = this.peek();
    if (c == 0x6e) return this.lit("null", Value.nul());
    if (c == 0x74) return this.lit("true", Value.boolean(true));
    if (c == 0x66) return this.lit("false", Value.boolean(false));
    if (c == 0x22) {
      const s = this.str();
      return s == null ? null : Value.string(s);
    }
    if (c == 0x5b) return this.array(depth);
    if (c == 0x7b) return this.object(depth);
    if (c == 0x2d || (c >= 0x30 && c <= 0x39)) return this.number();
    return this.fail(c < 0 ? "unexpected end of input" : "unexpected character");
  }

  array(depth: i32): Value | null {
    this.i++;
    const a = Value.array();
    this.ws();
    if (this.peek() == 0x5d) {
      this.i++;
      return a;
    }
    while (true) {
      this.ws();
      const v = this.value(depth + 1);
      if (v == null) return null;
      a.items.push(v);
      this.ws();
      const c = this.peek();
      this.i++;
      if (c == 0x5d) return a;
      if (c != 0x2c) {
        this.i--;
        return this.fail("expected ',' or ']'");
      }
    }
    return null;
  }

  object(depth: i32): Value | null {
    this.i++;
    const o = Value.object();
    this.ws();
    if (this.peek() == 0x7d) {
      this.i++;
      return o;
    }
    while (true) {
      this.ws();
      if (this.peek() != 0x22) return this.fail("expected a string key");
      const k = this.str();
      if (k == null) return null;
      this.ws();
      if (this.peek() != 0x3a) return this.fail("expected ':'");
      this.i++;
      this.ws();
      const v = this.value(depth + 1);
      if (v == null) return null;
      o.keys.push(k);
      o.items.push(v);
      this.ws();
      const c = this.peek();
      this.i++;
      if (c == 0x7d) return o;
      if (c != 0x2c) {
        this.i--;
        return this.fail("expected ',' or '}'");
      }
    }
    return null;
  }

  str(): string | null {
    this.i++;
    // Fast path: no escapes before the closing quote.
    for (let j = this.i; j < this.s.length; j++) {
      const c = this.s.charCodeAt(j);
      if (c == 0x22) {
        const out = this.s.substring(this.i, j);
        this.i = j + 1;
        return out;
      }
      if (c == 0x5c || c < 0x20) break;
    }
    const parts = new Array<string>();
    let run = this.i;
    while (true) {
      if (this.i >= this.s.length) {
        this.fail("unterminated string");
        return null;
      }
      const c = this.s.charCodeAt(this.i);
      if (c == 0x22) break;
      if (c < 0x20) {
        this.fail("control character in string");
        return null;
      }
      if (c != 0x5c) {
        this.i++;
        continue;
      }
      parts.push(this.s.substring(run, this.i));
      this.i++;
      const e = this.peek();
      this.i++;
      if (e == 0x22) parts.push('"');
      else if (e == 0x5c) parts.push("\\");
      else if (e == 0x2f) parts.push("/");
      else if (e == 0x62) parts.push("\b");
      else if (e == 0x66) parts.push("\f");
      else if (e == 0x6e) parts.push("\n");
      else if (e == 0x72) parts.push("\r");
      else if (e == 0x74) parts.push("\t");
      else if (e == 0x75) {
        if (this.i + 4 > this.s.length) {
          this.fail("short \\u escape");
          return null;
        }
        let cp = 0;
        for (let k = 0; k < 4; k++) {
          const h = this.s.charCodeAt(this.i + k);
          let d = -1;
          if (h >= 0x30 && h <= 0x39) d = h - 0x30;
          else if (h >= 0x61 && h <= 0x66) d = h - 0x61 + 10;
          else if (h >= 0x41 && h <= 0x46) d = h - 0x41 + 10;
          if (d < 0) {
            this.fail("bad \\u escape");
            return null;
          }
          cp = cp * 16 + d;
        }
        this.i += 4;
        parts.push(String.fromCharCode(cp)); // UTF-16: a surrogate pair arrives as two escapes
      } else {
        this.i--;
        this.fail("bad escape");
        return null;
      }
      run = this.i;
    }
    parts.push(this.s.substring(run, this.i));
    this.i++;
    return parts.join("");
  }

  digits(): bool {
    const start = this.i;
    while (this.i < this.s.length) {
      const c = this.s.charCodeAt(this.i);
      if (c < 0x30 || c > 0x39) break;
      this.i++;
    }
    return this.i > start;
  }

  number(): Value | null {
    const start = this.i;
    if (this.peek() == 0x2d) this.i++;
    if (this.peek() == 0x30) this.i++;
    else if (!this.digits()) return this.fail("bad number");
    if (this.peek() == 0x2e) {
      this.i++;
      if (!this.digits()) return this.fail("bad number");
    }
    if (this.peek() == 0x65 || this.peek() == 0x45) {
      this.i++;
      if (this.peek() == 0x2b || this.peek() == 0x2d) this.i++;
      if (!this.digits()) return this.fail("bad number");
    }
    return Value.number(parseFloat(this.s.substring(start, this.i)));
  }
}
