//! Refusals in the log, bounded: what a stranger chose (a `Host`, a path, a header) is cut to
//! [`SHOWN_CHARS`] characters, and a burst of refusals is logged as its first [`PER_WINDOW`] lines,
//! one line saying the rest are counted, and their number when the next window's first one is logged.
//! A flood of bad requests costs the log a few kilobytes, not its disk.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How much of a value a stranger sent is logged.
pub const SHOWN_CHARS: usize = 100;

/// Refusal lines logged per window, at most.
const PER_WINDOW: u32 = 50;
const WINDOW: Duration = Duration::from_secs(10);

/// `value` cut to [`SHOWN_CHARS`] characters, with how much was left out.
pub fn shown(value: &str) -> String {
    match value.char_indices().nth(SHOWN_CHARS) {
        None => value.to_string(),
        Some((at, _)) => format!("{}…[{} more bytes]", &value[..at], value.len() - at),
    }
}

struct Window {
    started: Instant,
    logged: u32,
    unlogged: u64,
}

/// One kind of refusal's log budget.
pub struct Burst {
    what: &'static str,
    window: Mutex<Option<Window>>,
}

impl Burst {
    pub const fn new(what: &'static str) -> Burst {
        Burst { what, window: Mutex::new(None) }
    }

    /// Logs `line()` unless this window's lines are used up (then it is counted).
    pub fn warn(&self, line: impl FnOnce() -> String) {
        let Ok(mut window) = self.window.lock() else { return };
        let now = Instant::now();
        let w = match window.as_mut() {
            Some(w) if now.duration_since(w.started) < WINDOW => w,
            _ => {
                if let Some(unlogged) = window.as_ref().map(|w| w.unlogged).filter(|n| *n > 0) {
                    tracing::warn!("{}: {unlogged} more refusal(s) in the last burst, not logged", self.what);
                }
                window.insert(Window { started: now, logged: 0, unlogged: 0 })
            }
        };
        if w.logged < PER_WINDOW {
            w.logged += 1;
            tracing::warn!("{}", line());
            return;
        }
        if w.unlogged == 0 {
            tracing::warn!(
                "{}: more than {PER_WINDOW} refusals in {}s; the rest of this burst is counted, not logged",
                self.what,
                WINDOW.as_secs()
            );
        }
        w.unlogged += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut() {
        assert_eq!(shown("localhost:8370"), "localhost:8370");
        let long = "é".repeat(150);
        assert_eq!(shown(&long), format!("{}…[100 more bytes]", "é".repeat(100)));
    }
}
