//! The forms a known secret takes in text besides itself: base64 (git's `http.extraheader` carries the
//! token as `basic <base64 of x-access-token:TOKEN>`), URL-encoded (a token in a query string or a
//! remote URL), escaped the way JSON and HTML write it, and in upper or lower case (matched without
//! case by the caller, so only the base64 of each case needs a form of its own).

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// What percent-encoding leaves alone (RFC 3986's unreserved characters).
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// Every form of `secret` to look for, itself first. Forms equal to another are left out.
pub(super) fn forms_of(secret: &str) -> Vec<String> {
    let mut out = vec![secret.to_string()];
    out.push(utf8_percent_encode(secret, UNRESERVED).to_string());
    out.push(utf8_percent_encode(secret, UNRESERVED).to_string().replace("%20", "+"));
    out.push(serde_json::to_string(secret).unwrap_or_default().trim_matches('"').to_string());
    out.push(html_escaped(secret));
    for cased in [secret.to_string(), secret.to_lowercase(), secret.to_uppercase()] {
        for engine in [&STANDARD, &URL_SAFE] {
            out.extend((0..3).map(|offset| base64_core(engine, cased.as_bytes(), offset)));
        }
    }
    out.retain(|f| !f.is_empty());
    out.sort();
    out.dedup();
    out
}

/// The base64 characters that depend on `value` alone when it sits `offset` bytes (mod 3) into a longer
/// encoded string: each character carries 6 bits, so the first and last one or two also carry bits of
/// whatever is next to the value, and differ with it. Those few characters are left in place; the
/// core is what identifies the secret.
fn base64_core(engine: &base64::engine::GeneralPurpose, value: &[u8], offset: usize) -> String {
    let mut bytes = vec![0u8; offset];
    bytes.extend_from_slice(value);
    let encoded = engine.encode(&bytes);
    let first = (8 * offset).div_ceil(6);
    let end = (8 * (offset + value.len())) / 6;
    encoded.get(first..end).unwrap_or_default().to_string()
}

/// What the dashboard's auto-escaping (minijinja's HTML escaping) makes of each character it changes.
const HTML_ESCAPES: [(char, &str); 6] =
    [('&', "&amp;"), ('<', "&lt;"), ('>', "&gt;"), ('"', "&quot;"), ('\'', "&#x27;"), ('/', "&#x2f;")];

fn html_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match HTML_ESCAPES.iter().find(|(from, _)| *from == c) {
            Some((_, to)) => out.push_str(to),
            None => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_core_is_found_at_every_alignment() {
        let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        let cores: Vec<String> = (0..3).map(|k| base64_core(&STANDARD, token.as_bytes(), k)).collect();
        for prefix in ["", "a", "ab", "abc", "x-access-token:", "user:"] {
            let encoded = STANDARD.encode(format!("{prefix}{token}!?"));
            assert!(cores.iter().any(|c| encoded.contains(c.as_str())), "{prefix:?}: {encoded}");
        }
        assert!(cores.iter().all(|c| c.len() >= 50), "{cores:?}");
    }
}
