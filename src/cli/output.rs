//! Human output: aligned tables, relative times. Machine output: JSON.

use chrono::{DateTime, Utc};

/// Prints rows as a table whose columns line up, headers first.
pub fn table(headers: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
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
    for row in rows {
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

pub fn json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
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
    fn short_keeps_one_line() {
        assert_eq!(short("a\nb  c", 10), "a b c");
        assert_eq!(short("abcdefghijkl", 5), "abcd…");
    }
}
