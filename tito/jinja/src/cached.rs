//! Tool specs that remember their JSON.
//!
//! Templates write every tool spec with tojson on every render (Qwen3, Llama 3.1, GLM, Mistral), and that was
//! most of a render's time: a typical first prompt with 3 tools took 22 us, 8 without them. The tools are parsed
//! once per set of render options and shared by all renders, so the tools list and each spec in it are wrapped in
//! an object that behaves as the list or dict it holds and keeps what tojson made of it, per set of arguments.

use std::fmt;
use std::sync::{Arc, Mutex};

use minijinja::value::{Enumerator, Object, ObjectRepr, Value, ValueKind};

use crate::pyfmt::JsonOpts;

#[derive(Debug)]
pub struct Cached {
    inner: Value,
    json: Mutex<Vec<(JsonOpts, Value)>>,
}

/// Wraps the tools list and each dict in it.
pub fn wrap_tools(tools: Value) -> Value {
    if tools.kind() != ValueKind::Seq {
        return tools;
    }
    let Ok(items) = tools.try_iter() else { return tools };
    let items: Vec<Value> = items.map(|t| if t.kind() == ValueKind::Map { wrap(t) } else { t }).collect();
    wrap(Value::from(items))
}

fn wrap(inner: Value) -> Value {
    Value::from_object(Cached { inner, json: Mutex::new(Vec::new()) })
}

/// What tojson made of v with these options, made once by dump.
pub fn tojson(v: &Value, o: &JsonOpts, dump: impl FnOnce(&Value) -> Result<String, minijinja::Error>) -> Result<Value, minijinja::Error> {
    let Some(c) = v.downcast_object_ref::<Cached>() else {
        return dump(v).map(Value::from_safe_string);
    };
    if let Some((_, s)) = c.json.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|(k, _)| k == o) {
        return Ok(s.clone());
    }
    let s = Value::from_safe_string(dump(v)?);
    c.json.lock().unwrap_or_else(|e| e.into_inner()).push((o.clone(), s.clone()));
    Ok(s)
}

impl Object for Cached {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        if self.inner.kind() == ValueKind::Seq {
            ObjectRepr::Seq
        } else {
            ObjectRepr::Map
        }
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.inner.as_object()?.get_value(key)
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        match self.inner.as_object() {
            Some(o) => o.enumerate(),
            None => Enumerator::Empty,
        }
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        self.inner.as_object()?.enumerator_len()
    }

    fn render(self: &Arc<Self>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}
