//! Browser sessions, and what is derived from them: the per-session CSRF value and signed flash messages.
//!
//! Nothing here is stored: a session is a random id plus its issue time, signed with an HMAC keyed by
//! the dashboard token, so it stays valid across restarts with the same `web.token` and dies with a new
//! random one. The CSRF value a page carries is another HMAC of the session id: reading a page yields
//! nothing that authenticates on its own (the HttpOnly cookie is needed too), and never the token.

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

/// The cookie a login sets.
pub const COOKIE: &str = "executor_session";

/// How long a login lasts.
pub const MAX_AGE_SECS: i64 = 7 * 24 * 3600;

/// Who a request was admitted as, put in its extensions by the security layer for the handlers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    /// A browser logged in: the session's id.
    Session(String),
    /// `Authorization: Bearer TOKEN`: a script or another tool.
    Bearer,
}

/// The keys derived from the dashboard token.
pub struct Keys {
    key: hmac::Key,
}

impl Keys {
    pub fn new(token: &str) -> Keys {
        Keys { key: hmac::Key::new(hmac::HMAC_SHA256, token.as_bytes()) }
    }

    fn sign(&self, purpose: &str, parts: &[&str]) -> String {
        let mut ctx = hmac::Context::with_key(&self.key);
        ctx.update(purpose.as_bytes());
        for part in parts {
            // Each part is preceded by its length, so no two lists of parts sign alike.
            ctx.update(&(part.len() as u64).to_be_bytes());
            ctx.update(part.as_bytes());
        }
        hex(ctx.sign().as_ref())
    }

    fn verify(&self, purpose: &str, parts: &[&str], mac: &str) -> bool {
        same(&self.sign(purpose, parts), mac)
    }

    /// A new session's cookie value: `ISSUED.RANDOM.MAC`; `None` without randomness.
    pub fn new_session(&self, now: i64) -> Option<String> {
        let mut bytes = [0u8; 16];
        SystemRandom::new().fill(&mut bytes).ok()?;
        let id = format!("{now}.{}", hex(&bytes));
        let mac = self.sign("session", &[&id]);
        Some(format!("{id}.{mac}"))
    }

    /// The session id of a cookie value this server signed, not older than [`MAX_AGE_SECS`].
    pub fn session(&self, cookie: &str, now: i64) -> Option<String> {
        let (id, mac) = cookie.rsplit_once('.')?;
        let issued: i64 = id.split_once('.')?.0.parse().ok()?;
        // A few minutes ahead is a clock that moved back, not a forgery (the MAC says that).
        let fresh = (-300..MAX_AGE_SECS).contains(&(now - issued));
        (fresh && self.verify("session", &[id], mac)).then(|| id.to_string())
    }

    /// The value a session's forms carry in `csrf` (and its script in `X-Executor-CSRF`); empty for a
    /// bearer client, which needs none.
    pub fn csrf(&self, auth: &Auth) -> String {
        match auth {
            Auth::Session(id) => self.sign("csrf", &[id]),
            Auth::Bearer => String::new(),
        }
    }

    /// Whether `given` is the session's CSRF value.
    pub fn csrf_ok(&self, auth: &Auth, given: &str) -> bool {
        match auth {
            Auth::Session(id) => self.verify("csrf", &[id], given),
            Auth::Bearer => true,
        }
    }

    /// The signature of a flash message (`kind` is `flash` or `error`) for whoever sent the form: a page
    /// shows a message only with its signature, so a link cannot make it say anything.
    pub fn flash_sig(&self, auth: &Auth, kind: &str, text: &str) -> String {
        self.sign("flash", &[subject(auth), kind, text])
    }

    pub fn flash_ok(&self, auth: &Auth, kind: &str, text: &str, sig: &str) -> bool {
        self.verify("flash", &[subject(auth), kind, text], sig)
    }
}

fn subject(auth: &Auth) -> &str {
    match auth {
        Auth::Session(id) => id,
        Auth::Bearer => "",
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares in time that depends only on the lengths. An empty expected value matches nothing.
pub fn same(given: &str, expected: &str) -> bool {
    let (a, b) = (given.as_bytes(), expected.as_bytes());
    if b.is_empty() || a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_signed_and_expire() {
        let keys = Keys::new("k".repeat(32).as_str());
        let cookie = keys.new_session(1_000_000).unwrap();
        let id = keys.session(&cookie, 1_000_010).expect("valid");
        assert!(cookie.starts_with(&id));
        assert_eq!(keys.session(&cookie, 1_000_000 + MAX_AGE_SECS + 1), None, "expired");
        assert_eq!(Keys::new("other-token").session(&cookie, 1_000_010), None, "another key");
        let forged = format!("{id}.{}", "0".repeat(64));
        assert_eq!(keys.session(&forged, 1_000_010), None);
        assert_eq!(keys.session("garbage", 1_000_010), None);
    }

    #[test]
    fn csrf_and_flash_are_bound_to_the_session() {
        let keys = Keys::new("k".repeat(32).as_str());
        let (a, b) = (Auth::Session("1.aa".into()), Auth::Session("1.bb".into()));
        let csrf = keys.csrf(&a);
        assert!(keys.csrf_ok(&a, &csrf) && !keys.csrf_ok(&b, &csrf) && !keys.csrf_ok(&a, ""));
        assert!(!csrf.contains(&"k".repeat(32)));
        let sig = keys.flash_sig(&a, "flash", "approved X");
        assert!(keys.flash_ok(&a, "flash", "approved X", &sig));
        assert!(!keys.flash_ok(&a, "error", "approved X", &sig));
        assert!(!keys.flash_ok(&a, "flash", "approved Y", &sig));
        assert!(!keys.flash_ok(&b, "flash", "approved X", &sig));
    }
}
