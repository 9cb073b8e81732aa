//! Messages parsed once per template.
//!
//! The agent loop renders the whole conversation on every turn (a delta is the tail of the full render), so all
//! but the newest messages were parsed on earlier turns; parsing them was an eighth of a delta's time. Each
//! message's JSON (as the Go side writes it: the same message, the same bytes) maps to its engine value, which is
//! immutable and shared. The cache is dropped whole when it holds too much.

use std::collections::HashMap;
use std::sync::Mutex;

use minijinja::value::Value;

/// Bounds on what one template keeps: message JSON bytes and entries.
const MAX_BYTES: usize = 8 << 20;
const MAX_ENTRIES: usize = 8192;

#[derive(Default)]
pub struct Cache {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    values: HashMap<Box<[u8]>, Value>,
    bytes: usize,
}

impl Cache {
    /// The messages of a JSON array whose elements end at the byte offsets in ends (each followed by ',' or ']').
    pub fn messages(&self, all: &[u8], ends: &[u32]) -> Result<Vec<Value>, String> {
        let mut out = Vec::with_capacity(ends.len());
        let mut start = 1; // after '['
        for &end in ends {
            let end = end as usize;
            let Some(raw) = all.get(start..end) else {
                return Err(format!("invalid messages: element bounds {start}..{end} outside {} bytes", all.len()));
            };
            if !matches!(all.get(end), Some(b',' | b']')) {
                return Err(format!("invalid messages: no ',' or ']' at byte {end}"));
            }
            out.push(self.message(raw)?);
            start = end + 1;
        }
        if ends.is_empty() {
            start = 2; // "[]"
        }
        if all.first() != Some(&b'[') || all.last() != Some(&b']') || all.len() != start {
            return Err("invalid messages: the element offsets do not cover the array".into());
        }
        Ok(out)
    }

    fn message(&self, raw: &[u8]) -> Result<Value, String> {
        if let Some(v) = self.inner.lock().unwrap_or_else(|e| e.into_inner()).values.get(raw) {
            return Ok(v.clone());
        }
        // straight into engine values (key order kept), without a serde_json::Value in between
        let v: Value = serde_json::from_slice(raw).map_err(|e| format!("invalid messages: {e}"))?;
        let mut c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if c.bytes + raw.len() > MAX_BYTES || c.values.len() >= MAX_ENTRIES {
            c.values.clear();
            c.bytes = 0;
        }
        if raw.len() <= MAX_BYTES && c.values.insert(raw.into(), v.clone()).is_none() {
            c.bytes += raw.len();
        }
        Ok(v)
    }
}
