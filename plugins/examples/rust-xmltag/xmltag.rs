//! xmltag: the Rust SDK's example parser (plugins/sdk/rust/README.md), the same as ../go-xmltag: tool calls written
//! as JSON between two tags, by default Hermes-style <tool_call>{"name": ..., "arguments": {...}}</tool_call>.
//! Strict: a malformed call is an error with a reason and its raw text, never repaired. Config (optional):
//! {"open": "...", "close": "..."}. Spans are byte offsets into the completion (Rust's string indices).

use agentrt::{Error, Manifest, Parser, Value};

struct XmlTag {
    open: String,
    close: String,
    known: Vec<String>, // the agent's tool names; empty: every name is accepted
}

impl Default for XmlTag {
    fn default() -> XmlTag {
        XmlTag { open: "<tool_call>".to_string(), close: "</tool_call>".to_string(), known: Vec::new() }
    }
}

fn span(start: usize, end: usize) -> Value {
    Value::Array(vec![Value::from(start as i64), Value::from(end as i64)])
}

fn error(reason: &str, message: &str, text: &str, start: usize, end: usize) -> Value {
    Value::object(vec![
        ("reason", Value::from(reason)),
        ("message", Value::from(message)),
        ("raw", Value::from(&text[start..end])),
        ("span", span(start, end)),
    ])
}

impl Parser for XmlTag {
    fn manifest(&self) -> Manifest {
        Manifest::new("xmltag", "1.0.0", "Tool calls as JSON between two tags (Rust SDK example).")
            .config_schema(r#"{"type":"object","properties":{"open":{"type":"string"},"close":{"type":"string"}}}"#)
    }

    fn init(&mut self, config: &Value, tools: &Value) -> Result<(), Error> {
        for (key, tag) in [("open", &mut self.open), ("close", &mut self.close)] {
            match config.get(key) {
                None => {}
                Some(Value::String(s)) if !s.is_empty() => *tag = s.clone(),
                Some(_) => return Err(Error::bad_config("open and close must be non-empty strings")),
            }
        }
        let specs = tools.as_array().map(|a| a.as_slice()).unwrap_or(&[]);
        self.known = specs.iter().filter_map(|t| t.get("name").and_then(Value::as_str)).map(String::from).collect();
        Ok(())
    }

    fn parse(&mut self, text: &str) -> Result<Value, Error> {
        let (mut calls, mut errors, mut normal) = (Vec::new(), Vec::new(), String::new());
        let mut pos = 0;
        while let Some(i) = text[pos..].find(&self.open) {
            let start = pos + i;
            normal.push_str(&text[pos..start]);
            let body_start = start + self.open.len();
            let j = match text[body_start..].find(&self.close) {
                Some(j) => j,
                None => {
                    errors.push(error("unclosed_tag", "no closing tag after the opening one", text, start, text.len()));
                    pos = text.len();
                    break;
                }
            };
            let end = body_start + j + self.close.len();
            pos = end;
            let body = match Value::parse(&text[body_start..body_start + j]) {
                Ok(v) => v,
                Err(e) => {
                    errors.push(error("malformed_json", &e, text, start, end));
                    continue;
                }
            };
            let name = match body.get("name").and_then(Value::as_str) {
                Some(n) if !n.is_empty() => n,
                _ => {
                    errors.push(error("missing_name", "the call has no \"name\" string", text, start, end));
                    continue;
                }
            };
            if !self.known.is_empty() && !self.known.iter().any(|k| k == name) {
                errors.push(error("unknown_tool", "the agent has no such tool", text, start, end));
                continue;
            }
            let arguments = match body.get("arguments") {
                None => Value::Object(Vec::new()),
                Some(a @ Value::Object(_)) => a.clone(),
                Some(_) => {
                    errors.push(error("bad_arguments", "\"arguments\" is not a JSON object", text, start, end));
                    continue;
                }
            };
            calls.push(Value::object(vec![("name", Value::from(name)), ("arguments", arguments), ("span", span(start, end))]));
        }
        normal.push_str(&text[pos..]);
        Ok(Value::object(vec![
            ("calls", Value::Array(calls)),
            ("normal_text", Value::from(normal)),
            ("errors", Value::Array(errors)),
        ]))
    }
}

agentrt::export_parser!(XmlTag);
