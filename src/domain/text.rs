//! Showing long text: a task's text is kept and judged whole (a filter must see a link at the end of a
//! megabyte of notes), and cut only where a reader or a model sees it — a prompt, a page.

use std::borrow::Cow;

/// How much of a task's description or notes a prompt or a page shows.
pub const SHOWN_TEXT_BYTES: usize = 256 * 1024;

/// `text` as it is when at most `max` bytes, else its first `max` bytes (at a character boundary) and
/// a line saying how much was left out.
pub fn shown(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    Cow::Owned(format!("{}\n[… {} more bytes not shown]", &text[..cut], text.len() - cut))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_whole_and_long_text_is_cut_at_a_character() {
        assert_eq!(shown("hello 👋", 100), "hello 👋");
        let cut = shown("é😀é😀", 3);
        assert_eq!(cut, "é\n[… 10 more bytes not shown]");
    }
}
