//! agentrt: the Rust guest SDK of agentrt's plugin ABI version 1 (`plugins/ABI.md`).
//!
//! Implement [`Tool`] (or [`Hook`], or [`Parser`]) on a `Default` type and invoke [`export_tool!`] (or
//! [`export_hook!`], [`export_parser!`]) once: the macro defines every export of the ABI (`agentrt_abi_version`,
//! `agentrt_alloc`, `agentrt_free`, `agentrt_describe`, `agentrt_init`, `agentrt_call`), and the SDK builds the
//! manifest and the envelopes. JSON comes as [`Value`], a small self-contained JSON type, so the crate needs no
//! dependencies and builds with Debian's rustc 1.63 (`--target wasm32-wasi`) as well as with a current rustup
//! toolchain (`--target wasm32-wasip1`).
//!
//! The host pools instances and may replace one at any time: keep no per-episode state in the plugin value (hooks
//! get a per-episode `state` instead, see [`Event::state`] and [`HookResponse::state`]).

use std::alloc::{alloc, dealloc, Layout};
use std::cell::RefCell;
use std::fmt;

/// ABI_VERSION is the plugin ABI version this SDK speaks.
pub const ABI_VERSION: i32 = 1;

// ---------------------------------------------------------------------------------------------------------------
// JSON

/// A JSON value. Objects keep their members in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Array(Vec<Value>),
    Object(Vec<(String, Value)>),
}

impl Value {
    /// Parses exactly one JSON value (RFC 8259); the error names the byte offset.
    pub fn parse(text: &str) -> Result<Value, String> {
        let mut p = JsonParser { s: text.as_bytes(), i: 0, depth: 0 };
        p.ws();
        let v = p.value()?;
        p.ws();
        if p.i != p.s.len() {
            return Err(p.err("unexpected data after the JSON value"));
        }
        Ok(v)
    }

    /// Builds an object from (key, value) pairs.
    pub fn object<K: Into<String>>(members: Vec<(K, Value)>) -> Value {
        Value::Object(members.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// Returns the member `key` of an object; `None` for a missing key or a non-object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }

    /// The number as an integer, when it has no fractional part (3 and 3.0, not 3.5) and fits an i64.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(n) if n.fract() == 0.0 && n.abs() < 9.2e18 => Some(*n as i64),
            _ => None,
        }
    }

    /// The members of an object, in order.
    pub fn as_object(&self) -> Option<&Vec<(String, Value)>> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Encodes the value as compact JSON. NaN and infinities become null.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => {
                if n.is_finite() {
                    out.push_str(&format!("{}", n));
                } else {
                    out.push_str("null");
                }
            }
            Value::String(s) => quote(s, out),
            Value::Array(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write(out);
                }
                out.push(']');
            }
            Value::Object(m) => {
                out.push('{');
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    quote(k, out);
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_string())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s)
    }
}
impl From<f64> for Value {
    fn from(n: f64) -> Value {
        Value::Number(n)
    }
}
impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Number(n as f64)
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

fn quote(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

struct JsonParser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl<'a> JsonParser<'a> {
    fn err(&self, what: &str) -> String {
        format!("invalid JSON at byte {}: {}", self.i, what)
    }

    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn lit(&mut self, word: &str, v: Value) -> Result<Value, String> {
        if self.s[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.err("unknown literal"))
        }
    }

    fn value(&mut self) -> Result<Value, String> {
        if self.i >= self.s.len() {
            return Err(self.err("unexpected end of input"));
        }
        match self.s[self.i] {
            b'n' => self.lit("null", Value::Null),
            b't' => self.lit("true", Value::Bool(true)),
            b'f' => self.lit("false", Value::Bool(false)),
            b'"' => self.string().map(Value::String),
            b'[' | b'{' => {
                self.depth += 1;
                if self.depth > 128 {
                    return Err(self.err("nested too deeply"));
                }
                let v = if self.s[self.i] == b'[' { self.array() } else { self.object() };
                self.depth -= 1;
                v
            }
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(self.err("unexpected character")),
        }
    }

    fn array(&mut self) -> Result<Value, String> {
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.i < self.s.len() && self.s[self.i] == b']' {
            self.i += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.ws();
            items.push(self.value()?);
            self.ws();
            match self.s.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.err("expected ',' or ']'")),
            }
        }
    }

    fn object(&mut self) -> Result<Value, String> {
        self.i += 1;
        let mut members = Vec::new();
        self.ws();
        if self.i < self.s.len() && self.s[self.i] == b'}' {
            self.i += 1;
            return Ok(Value::Object(members));
        }
        loop {
            self.ws();
            if self.s.get(self.i) != Some(&b'"') {
                return Err(self.err("expected a string key"));
            }
            let k = self.string()?;
            self.ws();
            if self.s.get(self.i) != Some(&b':') {
                return Err(self.err("expected ':'"));
            }
            self.i += 1;
            self.ws();
            let v = self.value()?;
            members.push((k, v));
            self.ws();
            match self.s.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Value::Object(members));
                }
                _ => return Err(self.err("expected ',' or '}'")),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        if self.i + 4 > self.s.len() {
            return Err(self.err("short \\u escape"));
        }
        let h = std::str::from_utf8(&self.s[self.i..self.i + 4]).map_err(|_| self.err("bad \\u escape"))?;
        let v = u32::from_str_radix(h, 16).map_err(|_| self.err("bad \\u escape"))?;
        self.i += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, String> {
        self.i += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let c = match self.s.get(self.i) {
                Some(c) => *c,
                None => return Err(self.err("unterminated string")),
            };
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let e = match self.s.get(self.i) {
                        Some(e) => *e,
                        None => return Err(self.err("unterminated string")),
                    };
                    self.i += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xD800..0xDC00).contains(&cp) && self.s[self.i..].starts_with(b"\\u") {
                                let save = self.i;
                                self.i += 2;
                                let lo = self.hex4()?;
                                if (0xDC00..0xE000).contains(&lo) {
                                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                                } else {
                                    self.i = save;
                                }
                            }
                            char::from_u32(cp).unwrap_or('\u{FFFD}')
                        }
                        _ => return Err(self.err("bad escape")),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                c if c < 0x20 => return Err(self.err("control character in string")),
                c => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| self.err("invalid UTF-8 in string"))
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.i;
        let digits = |p: &mut Self| {
            let s = p.i;
            while p.i < p.s.len() && p.s[p.i].is_ascii_digit() {
                p.i += 1;
            }
            p.i > s
        };
        if self.s[self.i] == b'-' {
            self.i += 1;
        }
        if self.s.get(self.i) == Some(&b'0') {
            self.i += 1;
        } else if !digits(self) {
            return Err(self.err("bad number"));
        }
        if self.s.get(self.i) == Some(&b'.') {
            self.i += 1;
            if !digits(self) {
                return Err(self.err("bad number"));
            }
        }
        if matches!(self.s.get(self.i), Some(b'e') | Some(b'E')) {
            self.i += 1;
            if matches!(self.s.get(self.i), Some(b'+') | Some(b'-')) {
                self.i += 1;
            }
            if !digits(self) {
                return Err(self.err("bad number"));
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
        text.parse::<f64>().map(Value::Number).map_err(|_| self.err("bad number"))
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Plugin types

/// An error result: a short snake_case code and a message. For a tool it is the error result the model sees; for
/// a hook or parser it is a plugin failure.
#[derive(Clone, Debug, PartialEq)]
pub struct Error {
    pub code: String,
    pub message: String,
}

impl Error {
    pub fn new(code: &str, message: impl Into<String>) -> Error {
        Error { code: code.to_string(), message: message.into() }
    }
    /// A `bad_input` error.
    pub fn bad_input(message: impl Into<String>) -> Error {
        Error::new("bad_input", message)
    }
    /// A `bad_config` error.
    pub fn bad_config(message: impl Into<String>) -> Error {
        Error::new("bad_config", message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// One tool: its name, a description for the model, and the JSON Schema of its arguments object.
#[derive(Clone, Debug)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

impl ToolSpec {
    /// Builds a spec; `parameters` is the JSON Schema as JSON text and must parse (a bug otherwise).
    pub fn new(name: &str, description: &str, parameters: &str) -> ToolSpec {
        let parameters = Value::parse(parameters).expect("agentrt: ToolSpec parameters must be valid JSON");
        ToolSpec { name: name.to_string(), description: description.to_string(), parameters }
    }
}

/// What a plugin says about itself. `kind`, `tools` (tools) and `events` (hooks) are filled in from the trait.
#[derive(Clone, Debug, Default)]
pub struct Manifest {
    pub name: String,
    pub version: String,
    pub description: String,
    pub tools: Vec<ToolSpec>,
    pub events: Vec<String>,
    pub message_roles: Vec<String>,
    pub config_schema: Option<Value>,
}

impl Manifest {
    pub fn new(name: &str, version: &str, description: &str) -> Manifest {
        Manifest {
            name: name.to_string(),
            version: version.to_string(),
            description: description.to_string(),
            ..Manifest::default()
        }
    }
    /// Adds a tool (tool plugins).
    pub fn tool(mut self, spec: ToolSpec) -> Manifest {
        self.tools.push(spec);
        self
    }
    /// Subscribes to a hook event such as "episode_end" (hook plugins).
    pub fn event(mut self, name: &str) -> Manifest {
        self.events.push(name.to_string());
        self
    }
    /// Limits message_added to messages of this role ("system", "user", "assistant", "tool"); call once per role.
    /// Without it every message reaches the hook; with it the host skips the others without a call.
    pub fn message_role(mut self, role: &str) -> Manifest {
        self.message_roles.push(role.to_string());
        self
    }
    /// Documents the accepted config (JSON Schema text).
    pub fn config_schema(mut self, schema: &str) -> Manifest {
        self.config_schema = Value::parse(schema).ok();
        self
    }
}

/// A tool call: `name` is one of the module's tools, `arguments` a JSON object.
#[derive(Clone, Debug)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

impl ToolCall {
    /// The string argument `key`, or a `bad_input` error naming it.
    pub fn str_arg(&self, key: &str) -> Result<&str, Error> {
        self.arguments
            .get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| Error::bad_input(format!("{}: argument \"{}\" must be a string", self.name, key)))
    }
    /// The number argument `key`, or a `bad_input` error naming it.
    pub fn num_arg(&self, key: &str) -> Result<f64, Error> {
        self.arguments
            .get(key)
            .and_then(Value::as_f64)
            .ok_or_else(|| Error::bad_input(format!("{}: argument \"{}\" must be a number", self.name, key)))
    }
    /// The integer argument `key` (a number without fractional part), or a `bad_input` error naming it.
    pub fn int_arg(&self, key: &str) -> Result<i64, Error> {
        self.arguments
            .get(key)
            .and_then(Value::as_i64)
            .ok_or_else(|| Error::bad_input(format!("{}: argument \"{}\" must be an integer", self.name, key)))
    }
    /// The boolean argument `key`, or a `bad_input` error naming it.
    pub fn bool_arg(&self, key: &str) -> Result<bool, Error> {
        self.arguments
            .get(key)
            .and_then(Value::as_bool)
            .ok_or_else(|| Error::bad_input(format!("{}: argument \"{}\" must be a boolean", self.name, key)))
    }
    /// The argument `key` as given, `None` when it is absent or null (optional arguments).
    pub fn arg(&self, key: &str) -> Option<&Value> {
        self.arguments.get(key).filter(|v| !v.is_null())
    }
}

/// A tool's successful result: text, or a JSON value.
#[derive(Clone, Debug)]
pub enum ToolResult {
    Text(String),
    Json(Value),
}

/// A tool plugin.
pub trait Tool {
    fn manifest(&self) -> Manifest;
    /// Receives the plugin's config (`Value::Null` when there is none); an error refuses it.
    fn init(&mut self, _config: &Value) -> Result<(), Error> {
        Ok(())
    }
    fn call(&mut self, call: &ToolCall) -> Result<ToolResult, Error>;
}

/// A hook event. `raw` is the whole event object (counts, message, tool_call, messages, ...).
#[derive(Clone, Debug)]
pub struct Event {
    pub event: String,
    pub episode_id: String,
    pub turn: i64,
    pub raw: Value,
}

impl Event {
    /// A field of the event, e.g. `ev.get("status")`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.raw.get(key)
    }
    /// A running counter, e.g. `ev.count("tool_calls")`; 0 when absent.
    pub fn count(&self, name: &str) -> i64 {
        self.raw.get("counts").and_then(|c| c.get(name)).and_then(Value::as_f64).unwrap_or(0.0) as i64
    }
    /// What this hook returned as `state` on its previous call in this episode.
    pub fn state(&self) -> Option<&Value> {
        self.raw.get("state")
    }
}

/// A hook's response; the default means "carry on".
#[derive(Clone, Debug, Default)]
pub struct HookResponse {
    /// Stop the loop: (reason, message).
    pub stop: Option<(String, String)>,
    pub cancel_tool: Option<String>,
    pub tool_arguments: Option<Value>,
    pub tool_result: Option<ToolResult>,
    pub reward: Option<f64>,
    pub metrics: Vec<(String, f64)>,
    pub state: Option<Value>,
}

/// A hook plugin: gets the events its manifest subscribes to.
pub trait Hook {
    fn manifest(&self) -> Manifest;
    fn init(&mut self, _config: &Value) -> Result<(), Error> {
        Ok(())
    }
    fn on_event(&mut self, event: &Event) -> Result<HookResponse, Error>;
}

/// A parser plugin: completion text in, a ParseResult object (`{"calls", "normal_text", "errors"}`) out.
pub trait Parser {
    fn manifest(&self) -> Manifest;
    /// `tools` is the array of the agent's tool specs.
    fn init(&mut self, _config: &Value, _tools: &Value) -> Result<(), Error> {
        Ok(())
    }
    fn parse(&mut self, text: &str) -> Result<Value, Error>;
}

// ---------------------------------------------------------------------------------------------------------------
// ABI glue, used by the export macros.

#[doc(hidden)]
pub trait Plugin {
    fn kind(&self) -> &'static str;
    fn manifest(&self) -> Manifest;
    fn init(&mut self, input: &Value) -> Result<(), Error>;
    fn call(&mut self, input: &[u8]) -> Result<Value, Error>;
}

#[doc(hidden)]
pub struct ToolPlugin<T> {
    tool: T,
    names: Option<Vec<String>>, // the manifest's tool names, read once
}

impl<T: Tool> ToolPlugin<T> {
    pub fn new(tool: T) -> ToolPlugin<T> {
        ToolPlugin { tool, names: None }
    }
}
#[doc(hidden)]
pub struct HookPlugin<T>(pub T);
#[doc(hidden)]
pub struct ParserPlugin<T>(pub T);

fn parse_input(input: &[u8]) -> Result<Value, Error> {
    let text = std::str::from_utf8(input).map_err(|_| Error::bad_input("input is not UTF-8"))?;
    let v = Value::parse(text).map_err(Error::bad_input)?;
    match v {
        Value::Object(_) => Ok(v),
        _ => Err(Error::bad_input("input is not a JSON object")),
    }
}

fn null_if_absent(v: Option<&Value>) -> Value {
    v.cloned().unwrap_or(Value::Null)
}

fn tool_result_value(r: ToolResult) -> Value {
    match r {
        ToolResult::Text(t) => Value::object(vec![("text", Value::String(t))]),
        ToolResult::Json(j) => Value::object(vec![("json", j)]),
    }
}

impl<T: Tool> Plugin for ToolPlugin<T> {
    fn kind(&self) -> &'static str {
        "tool"
    }
    fn manifest(&self) -> Manifest {
        self.tool.manifest()
    }
    fn init(&mut self, input: &Value) -> Result<(), Error> {
        self.tool.init(&null_if_absent(input.get("config")))
    }
    fn call(&mut self, input: &[u8]) -> Result<Value, Error> {
        let v = parse_input(input)?;
        let name = v.get("name").and_then(Value::as_str).unwrap_or("").to_string();
        if self.names.is_none() {
            self.names = Some(self.tool.manifest().tools.into_iter().map(|t| t.name).collect());
        }
        if !self.names.as_ref().unwrap().iter().any(|n| *n == name) {
            return Err(Error::new("unknown_tool", format!("unknown tool {:?}", name)));
        }
        let arguments = null_if_absent(v.get("arguments"));
        if !matches!(arguments, Value::Object(_)) {
            return Err(Error::bad_input(format!("tool {}: arguments must be a JSON object", name)));
        }
        let id = v.get("id").and_then(Value::as_str).unwrap_or("").to_string();
        let call = ToolCall { id, name, arguments };
        self.tool.call(&call).map(tool_result_value)
    }
}

impl<T: Hook> Plugin for HookPlugin<T> {
    fn kind(&self) -> &'static str {
        "hook"
    }
    fn manifest(&self) -> Manifest {
        self.0.manifest()
    }
    fn init(&mut self, input: &Value) -> Result<(), Error> {
        self.0.init(&null_if_absent(input.get("config")))
    }
    fn call(&mut self, input: &[u8]) -> Result<Value, Error> {
        let raw = parse_input(input)?;
        let ev = Event {
            event: raw.get("event").and_then(Value::as_str).unwrap_or("").to_string(),
            episode_id: raw.get("episode_id").and_then(Value::as_str).unwrap_or("").to_string(),
            turn: raw.get("turn").and_then(Value::as_f64).unwrap_or(0.0) as i64,
            raw,
        };
        let r = self.0.on_event(&ev)?;
        let mut m: Vec<(String, Value)> = Vec::new();
        if let Some((reason, message)) = r.stop {
            m.push(("stop".into(), Value::object(vec![("reason", reason.into()), ("message", message.into())])));
        }
        if let Some(c) = r.cancel_tool {
            m.push(("cancel_tool".into(), c.into()));
        }
        if let Some(a) = r.tool_arguments {
            m.push(("tool_arguments".into(), a));
        }
        if let Some(t) = r.tool_result {
            m.push(("tool_result".into(), tool_result_value(t)));
        }
        if let Some(x) = r.reward {
            m.push(("reward".into(), x.into()));
        }
        if !r.metrics.is_empty() {
            let ms = r.metrics.into_iter().map(|(k, v)| (k, Value::Number(v))).collect();
            m.push(("metrics".into(), Value::Object(ms)));
        }
        if let Some(s) = r.state {
            m.push(("state".into(), s));
        }
        Ok(Value::Object(m))
    }
}

impl<T: Parser> Plugin for ParserPlugin<T> {
    fn kind(&self) -> &'static str {
        "parser"
    }
    fn manifest(&self) -> Manifest {
        self.0.manifest()
    }
    fn init(&mut self, input: &Value) -> Result<(), Error> {
        let tools = input.get("tools").cloned().unwrap_or(Value::Array(Vec::new()));
        self.0.init(&null_if_absent(input.get("config")), &tools)
    }
    fn call(&mut self, input: &[u8]) -> Result<Value, Error> {
        let text = std::str::from_utf8(input).map_err(|_| Error::bad_input("completion text is not UTF-8"))?;
        self.0.parse(text)
    }
}

thread_local! {
    static PLUGIN: RefCell<Option<Box<dyn Plugin>>> = RefCell::new(None);
    // OUT holds the last output; it stays valid until the next export call (ABI.md section 2.2).
    static OUT: RefCell<Vec<u8>> = RefCell::new(Vec::new());
}

fn with_plugin<R>(make: fn() -> Box<dyn Plugin>, f: impl FnOnce(&mut dyn Plugin) -> R) -> R {
    PLUGIN.with(|p| {
        let mut p = p.borrow_mut();
        if p.is_none() {
            *p = Some(make());
        }
        f(p.as_mut().unwrap().as_mut())
    })
}

fn output(s: String) -> i64 {
    OUT.with(|o| {
        let mut o = o.borrow_mut();
        *o = s.into_bytes();
        (((o.as_ptr() as usize as u64) << 32) | o.len() as u64) as i64
    })
}

fn envelope(r: Result<Value, Error>) -> i64 {
    let v = match r {
        Ok(v) => Value::object(vec![("ok", v)]),
        Err(e) => Value::object(vec![(
            "error",
            Value::object(vec![("code", Value::String(e.code)), ("message", Value::String(e.message))]),
        )]),
    };
    output(v.to_json())
}

// Buffers handed to the host carry their size in a 4-byte header, so that agentrt_free needs only the pointer.
fn layout(size: usize) -> Layout {
    Layout::from_size_align(size + 4, 4).unwrap()
}

#[doc(hidden)]
pub fn __alloc(size: i32) -> i32 {
    let size = if size < 0 { return 0 } else { size as usize };
    unsafe {
        let p = alloc(layout(size));
        if p.is_null() {
            return 0;
        }
        (p as *mut u32).write(size as u32);
        p.add(4) as usize as i32
    }
}

#[doc(hidden)]
pub fn __free(ptr: i32) {
    if ptr == 0 {
        return;
    }
    unsafe {
        let p = (ptr as usize as *mut u8).sub(4);
        let size = (p as *const u32).read() as usize;
        dealloc(p, layout(size));
    }
}

/// Takes the host's input buffer back: copies it out and frees it.
fn take_input(ptr: i32, len: i32) -> Vec<u8> {
    if ptr == 0 || len <= 0 {
        __free(ptr);
        return Vec::new();
    }
    let v = unsafe { std::slice::from_raw_parts(ptr as usize as *const u8, len as usize).to_vec() };
    __free(ptr);
    v
}

#[doc(hidden)]
pub fn __describe(make: fn() -> Box<dyn Plugin>) -> i64 {
    let (kind, m) = with_plugin(make, |p| (p.kind(), p.manifest()));
    let mut o: Vec<(String, Value)> = vec![
        ("abi_version".into(), Value::Number(ABI_VERSION as f64)),
        ("kind".into(), kind.into()),
        ("name".into(), m.name.into()),
    ];
    if !m.version.is_empty() {
        o.push(("version".into(), m.version.into()));
    }
    if !m.description.is_empty() {
        o.push(("description".into(), m.description.into()));
    }
    if !m.tools.is_empty() {
        let tools = m
            .tools
            .into_iter()
            .map(|t| {
                Value::object(vec![
                    ("name", Value::String(t.name)),
                    ("description", Value::String(t.description)),
                    ("parameters", t.parameters),
                ])
            })
            .collect();
        o.push(("tools".into(), Value::Array(tools)));
    }
    if !m.events.is_empty() {
        o.push(("events".into(), Value::Array(m.events.into_iter().map(Value::String).collect())));
    }
    if !m.message_roles.is_empty() {
        o.push(("message_roles".into(), Value::Array(m.message_roles.into_iter().map(Value::String).collect())));
    }
    if let Some(s) = m.config_schema {
        o.push(("config_schema".into(), s));
    }
    output(Value::Object(o).to_json())
}

#[doc(hidden)]
pub fn __init(make: fn() -> Box<dyn Plugin>, ptr: i32, len: i32) -> i64 {
    let input = take_input(ptr, len);
    envelope(parse_input(&input).and_then(|v| {
        with_plugin(make, |p| p.init(&v)).map(|()| Value::Object(Vec::new()))
    }))
}

#[doc(hidden)]
pub fn __call(make: fn() -> Box<dyn Plugin>, ptr: i32, len: i32) -> i64 {
    let input = take_input(ptr, len);
    envelope(with_plugin(make, |p| p.call(&input)))
}

#[link(wasm_import_module = "agentrt_v1")]
extern "C" {
    #[link_name = "log"]
    fn host_log(level: i32, ptr: *const u8, len: i32);
}

/// Log levels of [`log`].
pub const LOG_DEBUG: i32 = 0;
pub const LOG_INFO: i32 = 1;
pub const LOG_WARN: i32 = 2;
pub const LOG_ERROR: i32 = 3;

/// Writes a message to the runtime's structured log (host import `agentrt_v1.log`).
pub fn log(level: i32, message: &str) {
    unsafe { host_log(level, message.as_ptr(), message.len() as i32) }
}

#[doc(hidden)]
#[macro_export]
macro_rules! __export {
    ($make:expr) => {
        fn __agentrt_make() -> Box<dyn $crate::Plugin> {
            Box::new($make)
        }
        #[no_mangle]
        pub extern "C" fn agentrt_abi_version() -> i32 {
            $crate::ABI_VERSION
        }
        #[no_mangle]
        pub extern "C" fn agentrt_alloc(size: i32) -> i32 {
            $crate::__alloc(size)
        }
        #[no_mangle]
        pub extern "C" fn agentrt_free(ptr: i32) {
            $crate::__free(ptr)
        }
        #[no_mangle]
        pub extern "C" fn agentrt_describe() -> i64 {
            $crate::__describe(__agentrt_make)
        }
        #[no_mangle]
        pub extern "C" fn agentrt_init(ptr: i32, len: i32) -> i64 {
            $crate::__init(__agentrt_make, ptr, len)
        }
        #[no_mangle]
        pub extern "C" fn agentrt_call(ptr: i32, len: i32) -> i64 {
            $crate::__call(__agentrt_make, ptr, len)
        }
    };
}

/// Exports a [`Tool`] type (which must implement `Default`) as the module's plugin.
#[macro_export]
macro_rules! export_tool {
    ($t:ty) => {
        $crate::__export!($crate::ToolPlugin::new(<$t as ::std::default::Default>::default()));
    };
}

/// Exports a [`Hook`] type (which must implement `Default`) as the module's plugin.
#[macro_export]
macro_rules! export_hook {
    ($t:ty) => {
        $crate::__export!($crate::HookPlugin(<$t as ::std::default::Default>::default()));
    };
}

/// Exports a [`Parser`] type (which must implement `Default`) as the module's plugin.
#[macro_export]
macro_rules! export_parser {
    ($t:ty) => {
        $crate::__export!($crate::ParserPlugin(<$t as ::std::default::Default>::default()));
    };
}
