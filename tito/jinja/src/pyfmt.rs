//! Python semantics where minijinja's differ: printing values (str/repr), json.dumps, and str/list/dict methods.

use std::fmt::Write;

use minijinja::value::{Value, ValueKind};
use minijinja::{Error, ErrorKind, State};

/// Converts a JSON context into engine values, keeping the key order of objects.
pub fn from_json(v: serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::from(()),
        serde_json::Value::Bool(b) => Value::from(b),
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                Value::from(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        serde_json::Value::String(s) => Value::from(s),
        serde_json::Value::Array(a) => Value::from(a.into_iter().map(from_json).collect::<Vec<_>>()),
        serde_json::Value::Object(o) => Value::from_pairs(o.into_iter().map(|(k, v)| (Value::from(k), from_json(v)))),
    }
}

/// Python's None where a template may iterate it (the tools and documents variables): minijinja iterates none as
/// empty, Python raises TypeError. It is falsy, defined, "is none", prints None and dumps as null.
#[derive(Debug)]
pub struct PyNone;

impl minijinja::value::Object for PyNone {
    fn repr(self: &std::sync::Arc<Self>) -> minijinja::value::ObjectRepr {
        minijinja::value::ObjectRepr::Plain
    }
    fn is_true(self: &std::sync::Arc<Self>) -> bool {
        false
    }
    fn render(self: &std::sync::Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("None")
    }
}

/// Reports Python's None, either kind.
pub fn is_py_none(v: &Value) -> bool {
    v.is_none() || v.downcast_object_ref::<PyNone>().is_some()
}

/// Python's str(value).
pub fn py_str(v: &Value) -> Result<String, Error> {
    if let Some(s) = v.as_str() {
        return Ok(s.to_string());
    }
    let mut out = String::new();
    py_repr(v, &mut out)?;
    Ok(out)
}

/// Python's repr(value), appended to out.
pub fn py_repr(v: &Value, out: &mut String) -> Result<(), Error> {
    match v.kind() {
        ValueKind::Undefined => {}
        ValueKind::None => out.push_str("None"),
        ValueKind::Bool => out.push_str(if v.is_true() { "True" } else { "False" }),
        ValueKind::Number => number(v, out),
        ValueKind::String => repr_str(v.as_str().unwrap_or_default(), out),
        ValueKind::Seq | ValueKind::Iterable => {
            out.push('[');
            for (i, item) in v.try_iter()?.enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                py_repr(&item, out)?;
            }
            out.push(']');
        }
        ValueKind::Map => {
            out.push('{');
            for (i, key) in v.try_iter()?.enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                py_repr(&key, out)?;
                out.push_str(": ");
                py_repr(&v.get_item(&key)?, out)?;
            }
            out.push('}');
        }
        _ => {
            let _ = write!(out, "{v}");
        }
    }
    Ok(())
}

fn number(v: &Value, out: &mut String) {
    if let Some(i) = v.as_i64() {
        if !is_float(v) {
            let _ = write!(out, "{i}");
            return;
        }
    }
    if is_float(v) {
        out.push_str(&py_float(f64::try_from(v.clone()).unwrap_or(f64::NAN)));
    } else {
        let _ = write!(out, "{v}");
    }
}

fn is_float(v: &Value) -> bool {
    v.as_i64().is_none() || {
        // an integral float (1.0) still prints as a float
        let s = v.to_string();
        s.contains('.') || s.contains('e') || s.contains("inf") || s.contains("NaN")
    }
}

/// Python's repr(float): shortest round-trip digits, fixed notation for exponents in [-4, 16).
pub fn py_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    let sci = format!("{f:e}"); // e.g. "-2.15e1", shortest round-trip digits
    let (mant, exp) = sci.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        if exp < 0 {
            out.push_str("0.");
            out.push_str(&"0".repeat((-exp - 1) as usize));
            out.push_str(&digits);
        } else {
            let int_len = (exp + 1) as usize;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.push_str(&"0".repeat(int_len - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    out
}

fn repr_str(s: &str, out: &mut String) {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

/// Options of Python's json.dumps that tojson passes on.
#[derive(Default, Clone, PartialEq, Debug)]
pub struct JsonOpts {
    pub ensure_ascii: bool,
    pub indent: Option<String>,
    pub separators: Option<(String, String)>,
    pub sort_keys: bool,
}

fn type_error(v: &Value) -> Error {
    let name = match v.kind() {
        ValueKind::Undefined => "Undefined",
        ValueKind::Map => "Namespace",
        _ => "object",
    };
    Error::new(ErrorKind::InvalidOperation, format!("Object of type {name} is not JSON serializable"))
}

/// Python's json.dumps(v, ...) appended to out.
pub fn dump_json(state: &State, v: &Value, o: &JsonOpts, level: usize, out: &mut String) -> Result<(), Error> {
    let (item_sep, key_sep) = match &o.separators {
        Some((a, b)) => (a.as_str(), b.as_str()),
        None if o.indent.is_some() => (",", ": "),
        None => (", ", ": "),
    };
    if is_py_none(v) {
        out.push_str("null");
        return Ok(());
    }
    match v.kind() {
        ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if v.is_true() { "true" } else { "false" }),
        ValueKind::Number => {
            if is_float(v) {
                let f = f64::try_from(v.clone()).unwrap_or(f64::NAN);
                if f.is_nan() {
                    out.push_str("NaN")
                } else if f.is_infinite() {
                    out.push_str(if f > 0.0 { "Infinity" } else { "-Infinity" })
                } else {
                    out.push_str(&py_float(f))
                }
            } else {
                number(v, out)
            }
        }
        ValueKind::String => json_str(v.as_str().unwrap_or_default(), o.ensure_ascii, out),
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<Value> = v.try_iter()?.collect();
            if items.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                newline(o, level + 1, out);
                dump_json(state, item, o, level + 1, out)?;
            }
            newline(o, level, out);
            out.push(']');
        }
        ValueKind::Map if v.as_object().map(|ob| ob.repr() == minijinja::value::ObjectRepr::Map).unwrap_or(true) => {
            let Some(pairs) = v.as_object().and_then(|ob| ob.try_iter_pairs()) else {
                return Err(type_error(v));
            };
            let mut items: Vec<(String, Value)> = Vec::new();
            for (key, val) in pairs {
                let k = match key.kind() {
                    ValueKind::String => key.as_str().unwrap_or_default().to_string(),
                    ValueKind::None => "null".into(),
                    ValueKind::Bool => (if key.is_true() { "true" } else { "false" }).into(),
                    ValueKind::Number => {
                        let mut s = String::new();
                        number(&key, &mut s);
                        s
                    }
                    _ => {
                        return Err(Error::new(
                            ErrorKind::InvalidOperation,
                            "keys must be str, int, float, bool or None",
                        ))
                    }
                };
                items.push((k, val));
            }
            if items.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            if o.sort_keys {
                items.sort_by(|a, b| a.0.cmp(&b.0));
            }
            out.push('{');
            for (i, (k, val)) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(item_sep);
                }
                newline(o, level + 1, out);
                json_str(k, o.ensure_ascii, out);
                out.push_str(key_sep);
                dump_json(state, val, o, level + 1, out)?;
            }
            newline(o, level, out);
            out.push('}');
        }
        _ => return Err(type_error(v)),
    }
    Ok(())
}

fn newline(o: &JsonOpts, level: usize, out: &mut String) {
    if let Some(ind) = &o.indent {
        out.push('\n');
        for _ in 0..level {
            out.push_str(ind);
        }
    }
}

fn json_str(s: &str, ensure_ascii: bool, out: &mut String) {
    out.push('"');
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let plain = c != '"' && c != '\\' && (c as u32) >= 0x20 && !(ensure_ascii && (c as u32) > 0x7e);
        if plain {
            continue;
        }
        out.push_str(&s[start..i]);
        start = i + c.len_utf8();
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{:04x}", u);
                }
            }
        }
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// The items filter (dict.items() as a list of pairs), which templates also call as a method.
pub fn items_filter(v: Value) -> Result<Value, Error> {
    if v.kind() != ValueKind::Map {
        return Err(Error::new(ErrorKind::InvalidOperation, "items: value is not a dict"));
    }
    let mut pairs = Vec::new();
    for k in v.try_iter()? {
        let val = v.get_item(&k)?;
        pairs.push(Value::from(vec![k, val]));
    }
    Ok(Value::from(pairs))
}

/// Python methods on strings, lists and dicts (minijinja-contrib's pycompat, with Python's behaviour where it
/// differs).
pub fn unknown_method(state: &mut State, value: &Value, method: &str, args: &[Value]) -> Result<Value, Error> {
    if let Some(s) = value.as_str() {
        match method {
            "split" | "rsplit" if !args.is_empty() => return split(s, method == "rsplit", args),
            _ => {}
        }
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}

/// str.split / str.rsplit with an explicit separator (None: whitespace) and maxsplit.
fn split(s: &str, right: bool, args: &[Value]) -> Result<Value, Error> {
    let sep = args.first().cloned().unwrap_or(Value::from(()));
    let max: i64 = match args.get(1) {
        Some(v) if !v.is_none() => v.as_i64().ok_or_else(|| Error::new(ErrorKind::InvalidOperation, "maxsplit must be an integer"))?,
        _ => -1,
    };
    let parts: Vec<String> = if sep.is_none() || sep.is_undefined() {
        let words: Vec<&str> = s.split_whitespace().collect();
        if max < 0 || (words.len() as i64) <= max + 1 {
            words.into_iter().map(String::from).collect()
        } else if !right {
            // the last part keeps the rest of the string from the (max+1)th word on, leading whitespace trimmed
            let mut rest = s.trim_start();
            let mut out = Vec::new();
            for _ in 0..max {
                let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                out.push(rest[..end].to_string());
                rest = rest[end..].trim_start();
            }
            out.push(rest.to_string());
            out
        } else {
            let mut rest = s.trim_end();
            let mut out = Vec::new();
            for _ in 0..max {
                let start = rest.rfind(char::is_whitespace).map(|i| i + rest[i..].chars().next().unwrap().len_utf8()).unwrap_or(0);
                out.push(rest[start..].to_string());
                rest = rest[..start].trim_end();
            }
            out.push(rest.to_string());
            out.reverse();
            out
        }
    } else {
        let sep = sep.as_str().ok_or_else(|| Error::new(ErrorKind::InvalidOperation, "must be str or None"))?;
        if sep.is_empty() {
            return Err(Error::new(ErrorKind::InvalidOperation, "empty separator"));
        }
        if max < 0 {
            s.split(sep).map(String::from).collect()
        } else if right {
            let mut v: Vec<String> = s.rsplitn(max as usize + 1, sep).map(String::from).collect();
            v.reverse();
            v
        } else {
            s.splitn(max as usize + 1, sep).map(String::from).collect()
        }
    };
    Ok(Value::from(parts))
}
