//! label_reward: the Rust SDK's example reward hook (plugins/sdk/rust/README.md). At episode_end it sets the
//! trajectory's reward: `reward_correct` if the last assistant message contains the episode's label (a string),
//! `reward_wrong` otherwise (ASCII case and surrounding white space ignored unless `case_sensitive`); no reward
//! without a string label. Metrics: turns, tool_calls and, with a label, correct (1 or 0).

use agentrt::{Error, Event, Hook, HookResponse, Manifest, Value};

struct Reward {
    correct: f64,
    wrong: f64,
    case_sensitive: bool,
}

impl Default for Reward {
    fn default() -> Reward {
        Reward { correct: 1.0, wrong: 0.0, case_sensitive: false }
    }
}

impl Reward {
    fn normalize(&self, s: &str) -> String {
        let s = s.trim_matches(|c| c == ' ' || c == '\t' || c == '\n' || c == '\r');
        if self.case_sensitive {
            s.to_string()
        } else {
            s.to_ascii_lowercase()
        }
    }
}

/// The content of the conversation's last assistant message ("" if there is none).
fn last_answer(ev: &Event) -> String {
    let empty = Vec::new();
    let messages = ev.get("messages").and_then(Value::as_array).unwrap_or(&empty);
    messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

impl Hook for Reward {
    fn manifest(&self) -> Manifest {
        Manifest::new("label_reward", "1.0.0", "Label-match reward at episode end (Rust SDK example).")
            .event("episode_end")
            .config_schema(
                r#"{"type":"object","properties":{"reward_correct":{"type":"number"},"reward_wrong":{"type":"number"},"case_sensitive":{"type":"boolean"}},"additionalProperties":false}"#,
            )
    }

    fn init(&mut self, config: &Value) -> Result<(), Error> {
        let members = match config {
            Value::Null => return Ok(()),
            Value::Object(m) => m,
            _ => return Err(Error::bad_config("config must be a table")),
        };
        for (key, v) in members {
            match key.as_str() {
                "reward_correct" | "reward_wrong" => {
                    let x = v.as_f64().ok_or_else(|| Error::bad_config(format!("{} must be a number", key)))?;
                    if key == "reward_correct" {
                        self.correct = x
                    } else {
                        self.wrong = x
                    }
                }
                "case_sensitive" => {
                    self.case_sensitive =
                        v.as_bool().ok_or_else(|| Error::bad_config("case_sensitive must be a boolean"))?
                }
                _ => {
                    return Err(Error::bad_config(format!(
                        "unknown key {:?} (known: reward_correct, reward_wrong, case_sensitive)",
                        key
                    )))
                }
            }
        }
        Ok(())
    }

    fn on_event(&mut self, ev: &Event) -> Result<HookResponse, Error> {
        let mut r = HookResponse::default();
        r.metrics.push(("turns".to_string(), ev.turn as f64));
        r.metrics.push(("tool_calls".to_string(), ev.count("tool_calls") as f64));
        let label = match ev.get("label").and_then(Value::as_str) {
            Some(l) => self.normalize(l),
            None => return Ok(r),
        };
        let hit = !label.is_empty() && self.normalize(&last_answer(ev)).contains(&label);
        r.reward = Some(if hit { self.correct } else { self.wrong });
        r.metrics.push(("correct".to_string(), if hit { 1.0 } else { 0.0 }));
        Ok(r)
    }
}

agentrt::export_hook!(Reward);
