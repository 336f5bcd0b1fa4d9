//! Verifying that a delivery was signed with the shared secret: GitHub's `X-Hub-Signature-256:
//! sha256=HEX` and Asana's `X-Hook-Signature: HEX`, both an HMAC-SHA256 of the raw body. `ring`
//! compares in constant time (as `Verifier` does), so a forger learns nothing from how long a refusal takes.

use ring::hmac;

/// Why a delivery's signature was refused (logged; the secret never is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("no signature header")]
    Missing,
    #[error("the signature header is not in the expected form (sha256=<64 hex digits>)")]
    Malformed,
    #[error("the signature does not match the body (wrong secret, or the body was altered)")]
    Mismatch,
}

/// Checks GitHub's `X-Hub-Signature-256` value (`sha256=` and 64 lowercase or uppercase hex digits).
pub fn verify_github(secret: &[u8], body: &[u8], header: Option<&str>) -> Result<(), SignatureError> {
    let mut verifier = Verifier::github(secret, header)?;
    verifier.update(body);
    verifier.finish()
}

/// Checks a GitHub signature over a body as it arrives, so that a body is never held to be checked:
/// the header is read first (a delivery without one is refused before its body), then each piece.
pub struct Verifier {
    context: hmac::Context,
    expected: Vec<u8>,
}

impl Verifier {
    pub fn github(secret: &[u8], header: Option<&str>) -> Result<Verifier, SignatureError> {
        let header = header.ok_or(SignatureError::Missing)?;
        let hex = header.trim().strip_prefix("sha256=").ok_or(SignatureError::Malformed)?;
        let expected = decode_hex(hex.trim()).ok_or(SignatureError::Malformed)?;
        if expected.len() != 32 {
            return Err(SignatureError::Malformed);
        }
        let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
        Ok(Verifier { context: hmac::Context::with_key(&key), expected })
    }

    pub fn update(&mut self, piece: &[u8]) {
        self.context.update(piece);
    }

    /// Whether the pieces so far are what was signed; compared in constant time.
    pub fn finish(self) -> Result<(), SignatureError> {
        let tag = self.context.sign();
        let differ = tag.as_ref().iter().zip(&self.expected).fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if differ == 0 { Ok(()) } else { Err(SignatureError::Mismatch) }
    }
}

/// Checks a bare hex HMAC-SHA256 (Asana's `X-Hook-Signature`).
pub fn verify_hex(secret: &[u8], body: &[u8], hex: &str) -> Result<(), SignatureError> {
    let tag = decode_hex(hex.trim()).ok_or(SignatureError::Malformed)?;
    if tag.len() != 32 {
        return Err(SignatureError::Malformed);
    }
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    hmac::verify(&key, body, &tag).map_err(|_| SignatureError::Mismatch)
}

/// GitHub's signature header value for `body` (the tests and the benchmark sign with it).
pub fn sign_github(secret: &[u8], body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let tag = hmac::sign(&key, body);
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // GitHub's documented example: secret "It's a Secret to Everybody", payload "Hello, World!".
    const DOCUMENTED: &str = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

    #[test]
    fn githubs_documented_example_verifies() {
        let secret = b"It's a Secret to Everybody";
        assert_eq!(sign_github(secret, b"Hello, World!"), DOCUMENTED);
        assert_eq!(verify_github(secret, b"Hello, World!", Some(DOCUMENTED)), Ok(()));
        assert_eq!(
            verify_github(
                secret,
                b"Hello, World!",
                Some(&DOCUMENTED.to_uppercase().replace("SHA256", "sha256"))
            ),
            Ok(())
        );
    }

    #[test]
    fn a_wrong_missing_or_malformed_signature_is_refused() {
        let secret = b"It's a Secret to Everybody";
        assert_eq!(verify_github(secret, b"Hello, World?", Some(DOCUMENTED)), Err(SignatureError::Mismatch));
        assert_eq!(
            verify_github(b"another secret", b"Hello, World!", Some(DOCUMENTED)),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(verify_github(secret, b"Hello, World!", None), Err(SignatureError::Missing));
        for bad in [
            "757107ea",
            "sha1=757107ea0eb2509fc211221cce984b8a37570b6d",
            "sha256=zz",
            "sha256=7571",
            "sha256=é7",
        ] {
            assert_eq!(
                verify_github(secret, b"Hello, World!", Some(bad)),
                Err(SignatureError::Malformed),
                "{bad}"
            );
        }
    }
}
