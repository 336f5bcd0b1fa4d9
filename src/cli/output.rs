//! Human output: aligned tables, relative times. Machine output: JSON.
//!
//! Everything printed passes [`shown`] (human output) or [`redacted`] (JSON): the secrets this process
//! knows and secrets of well-known shapes are replaced as the dashboard replaces them, and human output
//! shows terminal and bidirectional controls from outside text as codes (`[U+001B]`). JSON stays exact
//! but for redaction: its strings escape controls already.

use std::io::Write;

use chrono::{DateTime, Utc};

use crate::store::Event;

/// Prints one line of human output through [`shown`].
macro_rules! say {
    () => {
        println!()
    };
    ($($arg:tt)*) => {
        println!("{}", $crate::cli::output::shown(&format!($($arg)*)))
    };
}

/// [`say`] to standard error.
macro_rules! say_err {
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::cli::output::shown(&format!($($arg)*)))
    };
}

/// `text` with secrets replaced (see [`crate::redact::process`]).
pub fn redacted(text: &str) -> String {
    crate::redact::process().redact(text)
}

/// `text` as human output may show it: secrets replaced, terminal and bidirectional controls written
/// out, newlines and tabs kept.
pub fn shown(text: &str) -> String {
    crate::redact::visible(&redacted(text)).into_owned()
}

/// A writer that passes each whole line through [`shown`] on its way to `out` (a line is redacted
/// whole: a secret is never split between two writes). What is left of a last line without a newline
/// is written when the writer is dropped.
pub struct Shown<W: Write> {
    out: W,
    line: Vec<u8>,
}

impl<W: Write> Shown<W> {
    pub fn new(out: W) -> Self {
        Shown { out, line: Vec::new() }
    }
}

impl<W: Write> Write for Shown<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.line.extend_from_slice(buf);
        if let Some(last) = self.line.iter().rposition(|&b| b == b'\n') {
            let rest = self.line.split_off(last + 1);
            let whole = std::mem::replace(&mut self.line, rest);
            self.out.write_all(shown(&String::from_utf8_lossy(&whole)).as_bytes())?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

impl<W: Write> Drop for Shown<W> {
    fn drop(&mut self) {
        if !self.line.is_empty() {
            let _ = self.out.write_all(shown(&String::from_utf8_lossy(&self.line)).as_bytes());
        }
        let _ = self.out.flush();
    }
}

/// Prints rows as a table whose columns line up, headers first.
pub fn table(headers: &[&str], rows: &[Vec<String>]) {
    // Cells are made visible before they are measured, so a code's width counts.
    let rows: Vec<Vec<String>> = rows.iter().map(|row| row.iter().map(|c| shown(c)).collect()).collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(cell);
                out.push_str(&" ".repeat(w - cell.chars().count() + 2));
            }
        }
        println!("{}", out.trim_end());
    };
    line(headers.to_vec());
    for row in &rows {
        line(row.iter().map(String::as_str).collect());
    }
}

/// "just now", "5m ago", "3h ago", "2d ago" (or "in 5m" for the future).
pub fn ago(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let secs = (now - t).num_seconds();
    let (n, future) = if secs < 0 { (-secs, true) } else { (secs, false) };
    let span = match n {
        0..=9 => return "just now".into(),
        10..=59 => format!("{n}s"),
        60..=3599 => format!("{}m", n / 60),
        3600..=86_399 => format!("{}h", n / 3600),
        _ => format!("{}d", n / 86_400),
    };
    if future { format!("in {span}") } else { format!("{span} ago") }
}

/// What a person can do with a task's pending revision (new text from its tracker), by the task's
/// status: an approved task's is accepted by `executor approve`; a done task's cannot be (its work is
/// finished), so `approve` is not offered there, where it would only be refused.
pub fn revision_advice(gid: &crate::domain::TaskGid, status: crate::domain::QueueStatus) -> String {
    match status {
        crate::domain::QueueStatus::Done => format!(
            "it is done, so its work is finished and the new text is not worked: compare with `executor \
             queue show {gid}`; for more work, add a new task in the tracker (if its pull request was \
             closed unmerged, `executor queue retry {gid}` works it again, and `executor approve {gid}` \
             then makes the new text its text)"
        ),
        _ => format!(
            "its approved text is kept and agents are told only that; compare with `executor queue show \
             {gid}`, accept it with `executor approve {gid}`"
        ),
    }
}

pub fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref().map(|v| v.to_string()).unwrap_or_else(|| "-".into())
}

/// Cuts text to one line of at most `max` characters, for table cells.
pub fn short(text: &str, max: usize) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// Dollars as people read them, the one format for money everywhere: cents from a dollar up ("$12.34"),
/// at least three significant digits below it ("$0.00213", "$0.123") so a cheap worker never shows as
/// "$0.00". An estimate (tokens priced from the config's table, the CLI's own total not yet known) is
/// marked "≈".
pub fn money(usd: f64, estimated: bool) -> String {
    let mark = if estimated { "≈" } else { "" };
    if !usd.is_finite() {
        return format!("{mark}${usd}");
    }
    let (sign, abs) = if usd < 0.0 { ("-", -usd) } else { ("", usd) };
    let digits = if abs >= 1.0 || abs == 0.0 {
        format!("{abs:.2}")
    } else {
        // Decimals for three significant digits, trailing zeros dropped, but never fewer than cents.
        let decimals = (2 - abs.log10().floor() as i32).max(2) as usize;
        let text = format!("{abs:.decimals$}");
        let trimmed = text.trim_end_matches('0');
        let cents_len = text.find('.').map_or(text.len(), |dot| dot + 3);
        if trimmed.len() < cents_len { text[..cents_len].to_string() } else { trimmed.to_string() }
    };
    format!("{mark}{sign}${digits}")
}

/// [`money`] followed by "(estimate)" when it is one, for detail views with room for the word.
pub fn money_long(usd: f64, estimated: bool) -> String {
    if estimated { format!("{} (estimate)", money(usd, true)) } else { money(usd, false) }
}

pub fn json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", redacted(&serde_json::to_string_pretty(value)?));
    Ok(())
}

/// A JSON array written element by element, laid out exactly as `output::json` lays out a whole one.
pub struct JsonArray<W: Write> {
    out: W,
    empty: bool,
}

impl<W: Write> JsonArray<W> {
    pub fn new(out: W) -> Self {
        JsonArray { out, empty: true }
    }

    pub fn push(&mut self, value: &impl serde::Serialize) -> anyhow::Result<()> {
        let text = redacted(&serde_json::to_string_pretty(value)?);
        self.out.write_all(if self.empty { b"[\n" } else { b",\n" })?;
        self.empty = false;
        // A JSON string never holds a raw newline: indenting every line indents the element.
        for (k, line) in text.lines().enumerate() {
            if k > 0 {
                self.out.write_all(b"\n")?;
            }
            self.out.write_all(b"  ")?;
            self.out.write_all(line.as_bytes())?;
        }
        Ok(())
    }

    pub fn finish(mut self) -> anyhow::Result<()> {
        self.out.write_all(if self.empty { b"[]\n" } else { b"\n]\n" })?;
        self.out.flush()?;
        Ok(())
    }
}

/// A run's or task's history as a table, oldest first (`events`, `queue show`, `runs show`).
pub fn print_events(events: &[Event], now: DateTime<Utc>) {
    if events.is_empty() {
        println!("  no events");
        return;
    }
    let rows: Vec<Vec<String>> = events
        .iter()
        .map(|e| {
            let change = match (&e.from_state, &e.to_state) {
                (Some(f), Some(t)) => format!("{f} → {t}"),
                (None, Some(t)) => format!("→ {t}"),
                _ => String::new(),
            };
            vec![
                e.at.format("%Y-%m-%d %H:%M:%S").to_string(),
                ago(e.at, now),
                e.who(),
                e.task_gid.clone().unwrap_or_default(),
                e.run_id.map(|r| format!("#{r}")).unwrap_or_default(),
                e.kind.clone(),
                change,
                e.reason.clone().unwrap_or_default(),
            ]
        })
        .collect();
    table(&["AT (UTC)", "AGE", "WHO", "GID", "RUN", "WHAT", "CHANGE", "WHY"], &rows);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_times() {
        let now = Utc::now();
        assert_eq!(ago(now, now), "just now");
        assert_eq!(ago(now - chrono::Duration::seconds(42), now), "42s ago");
        assert_eq!(ago(now - chrono::Duration::minutes(5), now), "5m ago");
        assert_eq!(ago(now - chrono::Duration::hours(3), now), "3h ago");
        assert_eq!(ago(now - chrono::Duration::days(2), now), "2d ago");
        assert_eq!(ago(now + chrono::Duration::minutes(5), now), "in 5m");
    }

    #[test]
    fn money_keeps_three_significant_digits_below_a_dollar() {
        assert_eq!(money(0.002, false), "$0.002");
        assert_eq!(money(0.0021345, false), "$0.00213");
        assert_eq!(money(0.004, false), "$0.004");
        assert_eq!(money(0.1234, false), "$0.123");
        assert_eq!(money(0.5, false), "$0.50");
        assert_eq!(money(0.05, false), "$0.05");
        assert_eq!(money(0.0, false), "$0.00");
        assert_eq!(money(1.0, false), "$1.00");
        assert_eq!(money(12.345, false), "$12.35");
        assert_eq!(money(0.999_9, false), "$1.00");
        assert_eq!(money(0.000_012_3, false), "$0.0000123");
        assert_eq!(money(-0.002, false), "-$0.002");
        assert_eq!(money(0.002, true), "≈$0.002");
        assert_eq!(money_long(0.002, true), "≈$0.002 (estimate)");
        assert_eq!(money_long(0.002, false), "$0.002");
    }

    #[test]
    fn short_keeps_one_line() {
        assert_eq!(short("a\nb  c", 10), "a b c");
        assert_eq!(short("abcdefghijkl", 5), "abcd…");
    }
}
