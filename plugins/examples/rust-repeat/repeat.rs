//! repeat: the Rust SDK's example tool (plugins/sdk/rust/README.md): typed arguments, a config, error results.
//! repeat(text, times, upper?) writes text `times` times, joined by the configured separator.

use agentrt::{Error, Manifest, Tool, ToolCall, ToolResult, ToolSpec, Value};

// Set by init from the plugin's config (the same on every call: not per-episode state).
struct Repeat {
    separator: String,
    max_bytes: i64,
}

impl Default for Repeat {
    fn default() -> Repeat {
        Repeat { separator: " ".to_string(), max_bytes: 1000 }
    }
}

impl Tool for Repeat {
    fn manifest(&self) -> Manifest {
        Manifest::new("repeat", "1.0.0", "Repeats a text (Rust SDK example).")
            .tool(ToolSpec::new(
                "repeat",
                "Repeat a text a number of times.",
                r#"{"type":"object","properties":{"text":{"type":"string"},"times":{"type":"integer","minimum":1,"maximum":10},"upper":{"type":"boolean"}},"required":["text","times"]}"#,
            ))
            .config_schema(
                r#"{"type":"object","properties":{"separator":{"type":"string"},"max_bytes":{"type":"integer","minimum":1}},"additionalProperties":false}"#,
            )
    }

    fn init(&mut self, config: &Value) -> Result<(), Error> {
        let members = match config {
            Value::Null => return Ok(()), // no config: the defaults
            Value::Object(m) => m,
            _ => return Err(Error::bad_config("config must be a table")),
        };
        for (key, v) in members {
            match key.as_str() {
                "separator" => {
                    self.separator = v.as_str().ok_or_else(|| Error::bad_config("separator must be a string"))?.to_string()
                }
                "max_bytes" => match v.as_i64() {
                    Some(n) if n >= 1 => self.max_bytes = n,
                    _ => return Err(Error::bad_config("max_bytes must be an integer >= 1")),
                },
                _ => return Err(Error::bad_config(format!("unknown key \"{}\" (known: separator, max_bytes)", key))),
            }
        }
        Ok(())
    }

    fn call(&mut self, call: &ToolCall) -> Result<ToolResult, Error> {
        let text = call.str_arg("text")?; // bad_input: repeat: argument "text" must be a string
        let times = match call.int_arg("times") {
            Ok(n) if (1..=10).contains(&n) => n as usize,
            _ => return Err(Error::bad_input("repeat: argument \"times\" must be an integer from 1 to 10")),
        };
        let upper = match call.arg("upper") {
            None => false,
            Some(_) => call.bool_arg("upper")?,
        };
        let size = times * text.len() + (times - 1) * self.separator.len();
        if size as i64 > self.max_bytes {
            let msg = format!("the result would be {} bytes, more than max_bytes ({})", size, self.max_bytes);
            return Err(Error::new("too_long", msg));
        }
        let mut out = vec![text; times].join(&self.separator);
        if upper {
            out.make_ascii_uppercase();
        }
        Ok(ToolResult::Text(out))
    }
}

agentrt::export_tool!(Repeat);
