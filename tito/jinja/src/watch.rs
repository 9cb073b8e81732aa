//! Where a render writes one message's content (RenderDelta's cut, in one render instead of two).
//!
//! The content is given to the template as a string of its own allocation; the formatter recognises that very
//! string (by address, so an equal string elsewhere in the conversation is not taken for it) when the template
//! writes it, as is or through tojson, and records how much of the output came before it. Only a write straight
//! into the output counts: if the first write of it goes into a captured block (a macro, `{% set %}...`), where it
//! ends up is unknown and the caller falls back to rendering a probe.

use std::cell::{Cell, RefCell};
use std::io;

use minijinja::value::Value;
use minijinja::{Error, Output};

/// What the watched render saw of the watched content.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Seen {
    /// Not written (yet).
    No,
    /// First written straight into the output, this many bytes into it.
    At(usize),
    /// First written into a capture: no position.
    Captured,
}

thread_local! {
    /// Addresses and lengths of the watched strings: the content, and what tojson made of it.
    static WATCHED: RefCell<Vec<(usize, usize)>> = const { RefCell::new(Vec::new()) };
    static SEEN: Cell<Seen> = const { Cell::new(Seen::No) };
    /// Bytes written to the render's output so far (Counting keeps it).
    static WRITTEN: Cell<usize> = const { Cell::new(0) };
}

fn key(s: &str) -> (usize, usize) {
    (s.as_ptr() as usize, s.len())
}

/// Reports whether s is a watched string (not merely an equal one), while the content is not yet seen.
#[inline]
pub fn is_watched(s: &str) -> bool {
    !s.is_empty() && SEEN.with(|c| c.get()) == Seen::No && WATCHED.with(|w| w.borrow().contains(&key(s)))
}

/// Writes a watched string and records where it went.
pub fn write(out: &mut Output, s: &str) -> Result<(), Error> {
    let before = WRITTEN.with(|c| c.get());
    out.write_str(s).map_err(Error::from)?;
    let after = WRITTEN.with(|c| c.get());
    SEEN.with(|c| c.set(if after == before + s.len() { Seen::At(before) } else { Seen::Captured }));
    Ok(())
}

/// A string made from the watched content (tojson's output), watched too.
pub fn derived(s: String) -> Value {
    let v = Value::from_safe_string(s); // held in its own allocation, whatever its length
    if let Some(s) = v.as_str() {
        WATCHED.with(|w| w.borrow_mut().push(key(s)));
    }
    v
}

/// Watches content (a string value of its own allocation) for one render on this thread, until dropped (also
/// when the render unwinds).
pub struct Watch(());

impl Watch {
    pub fn start(content: &Value) -> Watch {
        WATCHED.with(|w| {
            let mut w = w.borrow_mut();
            w.clear();
            if let Some(s) = content.as_str() {
                w.push(key(s));
            }
        });
        SEEN.with(|c| c.set(Seen::No));
        WRITTEN.with(|c| c.set(0));
        Watch(())
    }

    /// What the render saw of the content.
    pub fn seen(&self) -> Seen {
        SEEN.with(|c| c.get())
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        WATCHED.with(|w| w.borrow_mut().clear());
        SEEN.with(|c| c.set(Seen::No));
    }
}

/// The render's output, counting what has been written.
pub struct Counting(pub Vec<u8>);

impl io::Write for Counting {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.extend_from_slice(b);
        WRITTEN.with(|c| c.set(self.0.len()));
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
