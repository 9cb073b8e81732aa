//! hook: a test plugin (Rust SDK) for plugins/examples TestSDKHooks; same behaviour as hook.c.

use agentrt::{Error, Event, Hook, HookResponse, Manifest, Value};

#[derive(Default)]
struct TestHook;

impl Hook for TestHook {
    fn manifest(&self) -> Manifest {
        Manifest::new("hook_rust", "1.0.0", "SDK hook test plugin.").event("episode_end").event("before_tool_call")
    }
    fn init(&mut self, config: &Value) -> Result<(), Error> {
        match config {
            Value::Object(_) | Value::Null => Ok(()),
            _ => Err(Error::bad_config("config must be a table")),
        }
    }
    fn on_event(&mut self, ev: &Event) -> Result<HookResponse, Error> {
        let mut r = HookResponse::default();
        if ev.event == "episode_end" {
            let done = ev.get("status").and_then(Value::as_str) == Some("completed");
            r.reward = Some(if done { 1.0 } else { 0.25 });
            r.metrics.push(("turns".to_string(), ev.turn as f64));
            r.state = Some(Value::object(vec![("n", Value::from(ev.count("tool_calls")))]));
            return Ok(r);
        }
        let idx = ev.get("tool_call").and_then(|t| t.get("index")).and_then(Value::as_f64).unwrap_or(0.0);
        if idx >= 9.0 {
            return Err(Error::new("too_far", format!("tool call index {}", idx)));
        }
        if idx >= 1.0 {
            r.cancel_tool = Some("one call per turn".to_string());
        }
        if idx >= 5.0 {
            r.stop = Some(("too_many".to_string(), "stop now".to_string()));
        }
        Ok(r)
    }
}

agentrt::export_hook!(TestHook);
