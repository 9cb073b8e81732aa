//! C ABI around minijinja for tito's chat templates.
//!
//! The environment reproduces the one transformers builds for apply_chat_template (an immutable sandboxed Jinja2
//! environment with trim_blocks, lstrip_blocks and loop controls, its own tojson, raise_exception and
//! strftime_now) and Python's printing of values, so that a template renders byte for byte as it does in Python.
//! Every entry point catches panics: no input may unwind into Go.

use std::cell::RefCell;
use std::error::Error as _;
use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

use minijinja::value::{Kwargs, Rest, Value, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State, UndefinedBehavior};

mod cached;
mod msgcache;
mod pyfmt;
mod strftime;
mod watch;

/// Bounds on one render: instructions (a loop that never ends; strings built charge fuel by size) and macro
/// recursion (a macro that calls itself forever). gpt-oss's template on a 1,000-message episode needs more than
/// 1M; 5M stops a hostile template within about 2 s (TestTemplateBounds, TestTemplateLongConversation).
const FUEL: u64 = 5_000_000;
const RECURSION_LIMIT: usize = 200;

/// A compiled template with its environment.
pub struct Template {
    env: Environment<'static>,
    parsed: msgcache::Cache,
}

/// The clock of one render, broken down by the caller (strftime_now formats it).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Clock {
    pub year: i32,
    pub month: i32,   // 1..12
    pub day: i32,     // 1..31
    pub hour: i32,    // 0..23
    pub minute: i32,  // 0..59
    pub second: i32,  // 0..59
    pub weekday: i32, // 0 = Monday .. 6 = Sunday, as Python's weekday()
    pub yday: i32,    // 1..366
}

thread_local! {
    static RAISED: RefCell<Option<String>> = const { RefCell::new(None) };
    static CLOCK: RefCell<Clock> = RefCell::new(Clock::default());
}

const NAME: &str = "chat_template";

fn new_env(source: String) -> Result<Environment<'static>, Error> {
    let mut env = Environment::new();
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(false)
            .build()?,
    );
    env.set_undefined_behavior(UndefinedBehavior::Lenient);
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env.set_fuel(Some(FUEL));
    env.set_recursion_limit(RECURSION_LIMIT);
    env.set_unknown_method_callback(pyfmt::unknown_method);
    env.set_formatter(|out, _state, value| {
        if value.is_undefined() {
            return Ok(());
        }
        if let Some(s) = value.as_str() {
            if watch::is_watched(s) {
                return watch::write(out, s);
            }
            return out.write_str(s).map_err(Error::from);
        }
        out.write_str(&pyfmt::py_str(value)?).map_err(Error::from)
    });
    env.add_filter("tojson", tojson);
    env.add_filter("string", |v: Value| -> Result<Value, Error> {
        if v.is_undefined() {
            return Ok(Value::from(""));
        }
        Ok(Value::from(pyfmt::py_str(&v)?))
    });
    env.add_filter("items", pyfmt::items_filter);
    // Python: None is not iterable (minijinja iterates it as empty)
    env.add_test("iterable", |v: Value| !pyfmt::is_py_none(&v) && v.try_iter().is_ok());
    env.add_test("none", |v: Value| pyfmt::is_py_none(&v));
    // Jinja2's sequence test: anything with a length and items (strings and dicts too)
    env.add_test("sequence", |v: Value| {
        matches!(v.kind(), ValueKind::String | ValueKind::Seq | ValueKind::Map) && !pyfmt::is_py_none(&v)
    });
    env.add_function("raise_exception", |msg: Value| -> Result<Value, Error> {
        let text = if let Some(s) = msg.as_str() { s.to_string() } else { pyfmt::py_str(&msg)? };
        RAISED.with(|r| *r.borrow_mut() = Some(text.clone()));
        Err(Error::new(ErrorKind::InvalidOperation, text))
    });
    env.add_function("strftime_now", |format: &str| -> Result<Value, Error> {
        let clock = CLOCK.with(|c| *c.borrow());
        strftime::format(format, &clock).map(Value::from)
    });
    env.add_template_owned(NAME, source)?;
    Ok(env)
}

/// transformers' tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
fn tojson(state: &State, value: Value, args: Rest<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let mut opts = pyfmt::JsonOpts::default();
    // positional arguments follow the Python signature: ensure_ascii, indent, separators, sort_keys
    let names = ["ensure_ascii", "indent", "separators", "sort_keys"];
    if args.len() > names.len() {
        return Err(Error::new(ErrorKind::TooManyArguments, "tojson() takes at most 4 arguments"));
    }
    let mut given: Vec<(&str, Value)> = args.iter().enumerate().map(|(i, v)| (names[i], v.clone())).collect();
    for name in names {
        if let Some(v) = kwargs.get::<Option<Value>>(name)? {
            given.push((name, v));
        }
    }
    kwargs.assert_all_used()?;
    for (name, v) in given {
        match name {
            "ensure_ascii" => opts.ensure_ascii = v.is_true(),
            "sort_keys" => opts.sort_keys = v.is_true(),
            "indent" => {
                opts.indent = if v.is_none() || v.is_undefined() {
                    None
                } else if let Some(s) = v.as_str() {
                    Some(s.to_string())
                } else if let Some(n) = v.as_i64() {
                    Some(" ".repeat(n.max(0) as usize))
                } else {
                    return Err(Error::new(ErrorKind::InvalidOperation, "tojson: indent must be an integer or a string"));
                }
            }
            "separators" => {
                if !(v.is_none() || v.is_undefined()) {
                    let parts: Vec<Value> = v.try_iter()?.collect();
                    if parts.len() != 2 {
                        return Err(Error::new(ErrorKind::InvalidOperation, "tojson: separators must be a pair"));
                    }
                    let item = parts[0].as_str().unwrap_or(",").to_string();
                    let key = parts[1].as_str().unwrap_or(":").to_string();
                    opts.separators = Some((item, key));
                }
            }
            _ => unreachable!(),
        }
    }
    let dump = |v: &Value| {
        let mut out = String::new();
        pyfmt::dump_json(state, v, &opts, 0, &mut out).map(|_| out)
    };
    if value.as_str().is_some_and(watch::is_watched) {
        // the watched content as JSON: where it is written is where the content is
        return Ok(watch::derived(dump(&value)?));
    }
    cached::tojson(&value, &opts, dump)
}

/// The error a call reports: message, template line (0 when unknown) and whether raise_exception raised it.
fn describe(err: &Error) -> (String, u32) {
    let mut msg = match err.detail() {
        Some(d) => {
            if err.kind() == ErrorKind::InvalidOperation {
                d.to_string()
            } else {
                format!("{}: {}", err.kind(), d)
            }
        }
        None => err.kind().to_string(),
    };
    let mut src = err.source();
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    (msg, err.line().unwrap_or(0) as u32)
}

/// Result of an entry point: 0 ok, 1 template error, 2 raise_exception, 3 bad call (invalid context, panic).
pub const OK: i32 = 0;
pub const ERR_TEMPLATE: i32 = 1;
pub const ERR_RAISED: i32 = 2;
pub const ERR_CALL: i32 = 3;

/// A string handed to the caller; free it with agentrt_jinja_free_string.
#[repr(C)]
pub struct Text {
    pub ptr: *mut u8,
    pub len: usize,
}

fn give(s: String) -> Text {
    let mut b = s.into_bytes().into_boxed_slice();
    let t = Text { ptr: b.as_mut_ptr(), len: b.len() };
    std::mem::forget(b);
    t
}

unsafe fn input_ends<'a>(ptr: *const u32, n: usize) -> &'a [u32] {
    if ptr.is_null() || n == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(ptr, n)
    }
}

unsafe fn input<'a>(ptr: *const c_char, len: usize) -> &'a [u8] {
    if ptr.is_null() || len == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(ptr as *const u8, len)
    }
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        format!("template engine panicked: {s}")
    } else if let Some(s) = p.downcast_ref::<String>() {
        format!("template engine panicked: {s}")
    } else {
        "template engine panicked".to_string()
    }
}

/// Compiles a template. On success *out_tpl holds the handle; otherwise *out_msg the message and *out_line the
/// line of the syntax error.
///
/// # Safety
/// src must point to len readable bytes; the out pointers must be valid.
#[no_mangle]
pub unsafe extern "C" fn agentrt_jinja_compile(
    src: *const c_char,
    len: usize,
    out_tpl: *mut *mut Template,
    out_msg: *mut Text,
    out_line: *mut u32,
) -> i32 {
    let bytes = input(src, len);
    let r = catch_unwind(AssertUnwindSafe(|| {
        let source = String::from_utf8(bytes.to_vec()).map_err(|e| (format!("template is not UTF-8: {e}"), 0))?;
        new_env(source).map_err(|e| describe(&e))
    }));
    match r {
        Ok(Ok(env)) => {
            *out_tpl = Box::into_raw(Box::new(Template { env, parsed: msgcache::Cache::default() }));
            OK
        }
        Ok(Err((msg, line))) => {
            *out_msg = give(msg);
            *out_line = line;
            ERR_TEMPLATE
        }
        Err(p) => {
            *out_msg = give(panic_text(p));
            ERR_CALL
        }
    }
}

/// Renders a compiled template with a JSON object as its context (key order kept). On success *out holds the
/// text; on failure the message, with *out_line the template line when known.
///
/// # Safety
/// tpl must come from agentrt_jinja_compile and not be freed; ctx must point to len readable bytes.
#[no_mangle]
pub unsafe extern "C" fn agentrt_jinja_render(
    tpl: *const Template,
    ctx: *const c_char,
    len: usize,
    clock: Clock,
    out: *mut Text,
    out_line: *mut u32,
) -> i32 {
    let bytes = input(ctx, len);
    let r = catch_unwind(AssertUnwindSafe(|| -> Result<String, (i32, String, u32)> {
        let ctx = parse_vars(bytes).map_err(|m| (ERR_CALL, m, 0))?;
        render_ctx(&*tpl, ctx, clock)
    }));
    finish(r, out, out_line)
}

/// Variables parsed once (special tokens, tools, kwargs), shared by many renders.
pub struct Vars {
    value: Value,
}

fn parse_vars(bytes: &[u8]) -> Result<Value, String> {
    let ctx: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| format!("invalid render context: {e}"))?;
    // None-valued variables (tools, documents, kwargs) become Python's None: iterating them raises, as in
    // Python (no family template compares them with == none, which would then be false)
    let serde_json::Value::Object(top) = ctx else {
        return Err("invalid render context: not a JSON object".into());
    };
    Ok(Value::from_pairs(top.into_iter().map(|(k, v)| {
        let v = if v.is_null() { Value::from_object(pyfmt::PyNone) } else { pyfmt::from_json(v) };
        let v = if k == "tools" { cached::wrap_tools(v) } else { v };
        (Value::from(k), v)
    })))
}

/// Parses variables (a JSON object) once for agentrt_jinja_render_with. On failure *out_msg says why.
///
/// # Safety
/// vars must point to len readable bytes; the out pointers must be valid.
#[no_mangle]
pub unsafe extern "C" fn agentrt_jinja_vars(vars: *const c_char, len: usize, out_vars: *mut *mut Vars, out_msg: *mut Text) -> i32 {
    let bytes = input(vars, len);
    match catch_unwind(AssertUnwindSafe(|| parse_vars(bytes))) {
        Ok(Ok(value)) => {
            *out_vars = Box::into_raw(Box::new(Vars { value }));
            OK
        }
        Ok(Err(msg)) => {
            *out_msg = give(msg);
            ERR_CALL
        }
        Err(p) => {
            *out_msg = give(panic_text(p));
            ERR_CALL
        }
    }
}

/// Frees variables.
///
/// # Safety
/// v must come from agentrt_jinja_vars and be freed once.
#[no_mangle]
pub unsafe extern "C" fn agentrt_jinja_free_vars(v: *mut Vars) {
    if !v.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(v))));
    }
}

/// Renders with prepared variables and the messages (a JSON array whose n elements end at the byte offsets in
/// ends), as agentrt_jinja_render.
///
/// # Safety
/// tpl and vars must be live handles; msgs must point to len readable bytes and ends to n offsets; the out
/// pointers must be valid.
#[no_mangle]
pub unsafe extern "C" fn agentrt_jinja_render_with(
    tpl: *const Template,
    vars: *const Vars,
    msgs: *const c_char,
    len: usize,
    ends: *const u32,
    n: usize,
    add_generation_prompt: bool,
    clock: Clock,
    out: *mut Text,
    out_line: *mut u32,
) -> i32 {
    let bytes = input(msgs, len);
    let ends = input_ends(ends, n);
    let r = catch_unwind(AssertUnwindSafe(|| -> Result<String, (i32, String, u32)> {
        let msgs = (*tpl).parsed.messages(bytes, ends).map_err(|m| (ERR_CALL, m, 0))?;
        let ctx = minijinja::context! {
            messages => Value::from(msgs),
            add_generation_prompt => add_generation_prompt,
            ..(*vars).value.clone()
        };
        render_ctx(&*tpl, ctx, clock)
    }));
    finish(r, out, out_line)
}

/// RenderDelta's render: the messages as given (*out_a), with *out_at the byte offset in it where the template
/// first writes the content of message `index` (as is or through tojson). Where that cannot be seen (the template
/// transforms the content, writes it first into a capture, or not at all), *out_at is -1; then, or always with
/// always_probe, *out_b holds a second render with that content replaced by `probe` (RenderDelta finds the
/// history's end by its marker).
///
/// # Safety
/// As agentrt_jinja_render_with; probe must point to probe_len readable bytes of UTF-8; the out pointers must be
/// valid.
#[no_mangle]
pub unsafe extern "C" fn agentrt_jinja_render_delta(
    tpl: *const Template,
    vars: *const Vars,
    msgs: *const c_char,
    len: usize,
    ends: *const u32,
    n: usize,
    index: usize,
    probe: *const c_char,
    probe_len: usize,
    always_probe: bool,
    add_generation_prompt: bool,
    clock: Clock,
    out_a: *mut Text,
    out_b: *mut Text,
    out_at: *mut i64,
    out_line: *mut u32,
) -> i32 {
    let bytes = input(msgs, len);
    let ends = input_ends(ends, n);
    let probe = input(probe, probe_len);
    *out_at = -1;
    let r = catch_unwind(AssertUnwindSafe(|| -> Result<String, (i32, String, u32)> {
        let probe = std::str::from_utf8(probe).map_err(|e| (ERR_CALL, format!("probe is not UTF-8: {e}"), 0))?;
        let mut vals = (*tpl).parsed.messages(bytes, ends).map_err(|m| (ERR_CALL, m, 0))?;
        let vars = &(*vars).value;
        let ctx = |vals: &Vec<Value>| {
            minijinja::context! {
                messages => Value::from(vals.clone()),
                add_generation_prompt => add_generation_prompt,
                ..vars.clone()
            }
        };
        // the content in an allocation of its own (a short string would otherwise be held inline), so that the
        // formatter can tell it from any equal string
        let content = with_content(&mut vals, index, |c| c.as_str().map(|s| Value::from(std::sync::Arc::<str>::from(s))))?;
        let watching = watch::Watch::start(&content);
        let mut out = watch::Counting(Vec::new());
        render_ctx_to(&*tpl, ctx(&vals), clock, &mut out)?;
        let seen = watching.seen();
        drop(watching);
        let full = String::from_utf8(out.0).map_err(|e| (ERR_CALL, format!("render is not UTF-8: {e}"), 0))?;
        if let watch::Seen::At(at) = seen {
            *out_at = at as i64;
            if !always_probe {
                return Ok(full);
            }
        }
        with_content(&mut vals, index, |_| Some(Value::from(probe)))?;
        *out_b = give(render_ctx(&*tpl, ctx(&vals), clock)?);
        Ok(full)
    }));
    finish(r, out_a, out_line)
}

/// Replaces the content of message index by what f makes of it (f returning None keeps it), and returns the
/// content now in place.
fn with_content(vals: &mut [Value], index: usize, f: impl FnOnce(&Value) -> Option<Value>) -> Result<Value, (i32, String, u32)> {
    let Some(pairs) = vals.get(index).and_then(|m| m.as_object()).and_then(|o| o.try_iter_pairs()) else {
        return Err((ERR_CALL, format!("message {index} is not an object"), 0));
    };
    let mut pairs: Vec<(Value, Value)> = pairs.collect();
    let mut now = Value::UNDEFINED;
    for (k, v) in pairs.iter_mut() {
        if k.as_str() == Some("content") {
            if let Some(n) = f(v) {
                *v = n;
            }
            now = v.clone();
            break;
        }
    }
    vals[index] = Value::from_pairs(pairs);
    Ok(now)
}

fn render_ctx_to(t: &Template, ctx: Value, clock: Clock, w: &mut watch::Counting) -> Result<(), (i32, String, u32)> {
    run(t, clock, |tmpl| tmpl.render_captured_to(ctx, w).map(|_| ()))
}

fn render_ctx(t: &Template, ctx: Value, clock: Clock) -> Result<String, (i32, String, u32)> {
    run(t, clock, |tmpl| tmpl.render(ctx))
}

/// Runs one render of the template with the clock set, mapping its error to (code, message, line):
/// raise_exception's message verbatim, else the engine's.
fn run<T>(
    t: &Template,
    clock: Clock,
    render: impl FnOnce(&minijinja::Template<'_, '_>) -> Result<T, Error>,
) -> Result<T, (i32, String, u32)> {
    RAISED.with(|r| *r.borrow_mut() = None);
    CLOCK.with(|c| *c.borrow_mut() = clock);
    let tmpl = t.env.get_template(NAME).map_err(|e| {
        let (m, l) = describe(&e);
        (ERR_TEMPLATE, m, l)
    })?;
    render(&tmpl).map_err(|e| {
        if let Some(msg) = RAISED.with(|r| r.borrow_mut().take()) {
            return (ERR_RAISED, msg, e.line().unwrap_or(0) as u32);
        }
        let (m, l) = describe(&e);
        (ERR_TEMPLATE, m, l)
    })
}

unsafe fn finish(
    r: std::thread::Result<Result<String, (i32, String, u32)>>,
    out: *mut Text,
    out_line: *mut u32,
) -> i32 {
    match r {
        Ok(Ok(s)) => {
            *out = give(s);
            OK
        }
        Ok(Err((code, msg, line))) => {
            *out = give(msg);
            *out_line = line;
            code
        }
        Err(p) => {
            *out = give(panic_text(p));
            ERR_CALL
        }
    }
}

/// Frees a template.
///
/// # Safety
/// tpl must come from agentrt_jinja_compile and be freed once.
#[no_mangle]
pub unsafe extern "C" fn agentrt_jinja_free(tpl: *mut Template) {
    if !tpl.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(tpl))));
    }
}

/// Frees a string returned by another entry point.
///
/// # Safety
/// t must come from this library and be freed once.
#[no_mangle]
pub unsafe extern "C" fn agentrt_jinja_free_text(t: Text) {
    if !t.ptr.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(t.ptr, t.len)))));
    }
}

#[allow(dead_code)]
fn kind_name(v: &Value) -> &'static str {
    match v.kind() {
        ValueKind::Undefined => "Undefined",
        ValueKind::None => "NoneType",
        ValueKind::Bool => "bool",
        ValueKind::Number => "number",
        ValueKind::String => "str",
        ValueKind::Seq => "list",
        ValueKind::Map => "dict",
        _ => "object",
    }
}
