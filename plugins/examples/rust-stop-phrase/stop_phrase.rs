//! stop_phrase: the Rust SDK's example hook (plugins/sdk/rust/README.md): stops the episode once the model has
//! written a configured phrase `after` times, counting in the hook's per-episode state.

use agentrt::{Error, Event, Hook, HookResponse, Manifest, Value};

struct StopPhrase {
    phrase: String, // config "phrase", required
    after: i64,     // config "after", default 1
}

impl Default for StopPhrase {
    fn default() -> StopPhrase {
        StopPhrase { phrase: String::new(), after: 1 }
    }
}

impl Hook for StopPhrase {
    fn manifest(&self) -> Manifest {
        Manifest::new("stop_phrase", "1.0.0", "Stops an episode once the model writes a phrase (Rust SDK example).")
            .event("message_added")
            .message_role("assistant") // only the model's messages: the host skips the others
            .config_schema(
                r#"{"type":"object","properties":{"phrase":{"type":"string"},"after":{"type":"integer","minimum":1}},"required":["phrase"]}"#,
            )
    }

    fn init(&mut self, config: &Value) -> Result<(), Error> {
        if !config.is_null() && config.as_object().is_none() {
            return Err(Error::bad_config("config must be a table"));
        }
        for (key, _) in config.as_object().into_iter().flatten() {
            if key != "phrase" && key != "after" {
                return Err(Error::bad_config(format!("unknown key \"{}\" (known: phrase, after)", key)));
            }
        }
        match config.get("phrase").and_then(Value::as_str) {
            Some(p) if !p.is_empty() => self.phrase = p.to_string(),
            _ => return Err(Error::bad_config("phrase must be a non-empty string")),
        }
        if let Some(a) = config.get("after") {
            match a.as_i64() {
                Some(n) if n >= 1 => self.after = n,
                _ => return Err(Error::bad_config("after must be an integer >= 1")),
            }
        }
        Ok(())
    }

    fn on_event(&mut self, ev: &Event) -> Result<HookResponse, Error> {
        let msg = ev.get("message");
        let role = msg.and_then(|m| m.get("role")).and_then(Value::as_str);
        let content = msg.and_then(|m| m.get("content")).and_then(Value::as_str).unwrap_or("");
        if role != Some("assistant") || !content.contains(&self.phrase) {
            return Ok(HookResponse::default()); // {}: carry on
        }
        let hits = ev.state().and_then(|s| s.get("hits")).and_then(Value::as_i64).unwrap_or(0) + 1;
        let mut r = HookResponse::default();
        r.state = Some(Value::object(vec![("hits", Value::from(hits))])); // back as "state" on the next event
        if hits >= self.after {
            let message = format!("the model wrote \"{}\" ({} of {})", self.phrase, hits, self.after);
            r.stop = Some(("stop_phrase".to_string(), message));
        }
        Ok(r)
    }
}

agentrt::export_hook!(StopPhrase);
