//! Outside text made harmless to show: terminal controls (an ESC sequence recolours, hides or rewrites
//! the lines around it, so a task could print a forged "approved") and bidirectional controls
//! ("evil\u{202e}exe.txt" reads as "eviltxt.exe") are written out as a visible code, `[U+001B]`.

use std::borrow::Cow;

/// Characters that reorder the text around them: bidirectional embeddings, overrides and isolates,
/// and the marks.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

/// C0 controls but newline and tab (line-oriented output needs those), DEL, C1 controls, and
/// bidirectional controls.
fn is_shown_as_code(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c)
}

/// `text` with every terminal and bidirectional control written out as `[U+001B]`.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_shown_as_code) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_shown_as_code(c) {
            out.push_str(&format!("[U+{:04X}]", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_written_out_and_lines_kept() {
        let text = "\u{1b}[2K\u{1b}[1Aapproved\r\n\tok \u{9b}31m evil\u{202e}exe.txt \u{7f}";
        assert_eq!(
            visible(text),
            "[U+001B][2K[U+001B][1Aapproved[U+000D]\n\tok [U+009B]31m evil[U+202E]exe.txt [U+007F]"
        );
        assert!(matches!(visible("plain — text\n"), Cow::Borrowed(_)));
    }
}
