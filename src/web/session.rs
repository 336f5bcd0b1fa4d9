//! Browser sessions, and what is derived from them: the per-session CSRF value and signed flash messages.
//!
//! A session is a random id plus its issue time, signed with an HMAC keyed by the dashboard token, so it
//! stays valid across restarts with the same `web.token` and dies with a new random one. The CSRF value
//! a page carries is another HMAC of the session id: reading a page yields nothing that authenticates
//! on its own (the HttpOnly cookie is needed too), and never the token.
//!
//! Ending sessions without changing the token: `POST /logout` ends the browser's own, and
//! `executor serve --revoke-sessions` every one issued before it started. Both are kept in a small file
//! in the data directory (`Keys::keep_in`), so they stay ended across restarts: the time before which
//! no session is valid, and the ids of the sessions logged out (each forgotten once it would have
//! expired anyway).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};

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

/// The sessions ended before their time (the file `Keys::keep_in` names).
#[derive(Debug, Default, Serialize, Deserialize)]
struct Ended {
    /// No session issued at or before this time (Unix seconds) is valid.
    before: i64,
    /// Sessions logged out, by id, with their issue time.
    logged_out: HashMap<String, i64>,
}

/// The keys derived from the dashboard token, and the sessions ended early.
pub struct Keys {
    key: hmac::Key,
    ended: Mutex<Ended>,
    file: OnceLock<PathBuf>,
}

impl Keys {
    pub fn new(token: &str) -> Keys {
        Keys {
            key: hmac::Key::new(hmac::HMAC_SHA256, token.as_bytes()),
            ended: Mutex::new(Ended::default()),
            file: OnceLock::new(),
        }
    }

    /// Keeps ended sessions in `file` from now on: reads those it holds, and with `revoke_all` ends
    /// every session issued up to `now`.
    pub fn keep_in(&self, file: &Path, revoke_all: bool, now: i64) -> std::io::Result<()> {
        let mut kept: Ended = match std::fs::read(file) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(std::io::Error::other)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ended::default(),
            Err(e) => return Err(e),
        };
        if revoke_all {
            kept.before = now;
        }
        let before = kept.before;
        kept.logged_out.retain(|_, issued| *issued > before && now - *issued < MAX_AGE_SECS);
        let _ = self.file.set(file.to_path_buf());
        let mut ended = self.ended.lock().map_err(|_| std::io::Error::other("a poisoned lock"))?;
        *ended = kept;
        self.save(&ended)
    }

    /// Ends the session `id` (logged out): refused from now on.
    pub fn end_session(&self, id: &str) -> std::io::Result<()> {
        let issued = issued(id).unwrap_or_default();
        let mut ended = self.ended.lock().map_err(|_| std::io::Error::other("a poisoned lock"))?;
        ended.logged_out.insert(id.to_string(), issued);
        self.save(&ended)
    }

    fn save(&self, ended: &Ended) -> std::io::Result<()> {
        let Some(file) = self.file.get() else { return Ok(()) };
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        // Whole or not at all: a new file moved over the old.
        let partial = file.with_extension("json.partial");
        std::fs::write(&partial, serde_json::to_vec(ended).map_err(std::io::Error::other)?)?;
        std::fs::rename(&partial, file)
    }

    fn is_ended(&self, id: &str, issued: i64) -> bool {
        self.ended.lock().map_or(true, |e| issued <= e.before || e.logged_out.contains_key(id))
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

    /// A new session's cookie value for `person` (their `executor_users.id`; `None` for the dashboard
    /// token's holder): `ISSUED.RANDOM.PERSON.MAC`; `None` without randomness.
    pub fn new_session(&self, now: i64, person: Option<i64>) -> Option<String> {
        let mut bytes = [0u8; 16];
        SystemRandom::new().fill(&mut bytes).ok()?;
        // Sessions of the second of a revocation are revoked: one after it is issued a second later.
        let revoked_up_to = self.ended.lock().map(|e| e.before).unwrap_or_default();
        let issued = now.max(revoked_up_to + 1);
        let id = format!("{issued}.{}.{}", hex(&bytes), person.unwrap_or(0));
        let mac = self.sign("session", &[&id]);
        Some(format!("{id}.{mac}"))
    }

    /// The session id of a cookie value this server signed, not older than [`MAX_AGE_SECS`].
    pub fn session(&self, cookie: &str, now: i64) -> Option<String> {
        let (id, mac) = cookie.rsplit_once('.')?;
        let issued = issued(id)?;
        // A few minutes ahead is a clock that moved back, not a forgery (the MAC says that).
        let fresh = (-300..MAX_AGE_SECS).contains(&(now - issued));
        (fresh && self.verify("session", &[id], mac) && !self.is_ended(id, issued)).then(|| id.to_string())
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

/// When the session `id` (`ISSUED.RANDOM.PERSON`) was issued.
fn issued(id: &str) -> Option<i64> {
    id.split_once('.')?.0.parse().ok()
}

/// Whose session `id` is: a person's `executor_users.id`, or `None` for the dashboard token's holder
/// (`0`, and the sessions issued before people existed, which have no third part).
pub fn person_of(id: &str) -> Option<i64> {
    id.splitn(3, '.').nth(2)?.parse().ok().filter(|n: &i64| *n > 0)
}

fn subject(auth: &Auth) -> &str {
    match auth {
        Auth::Session(id) => id,
        Auth::Bearer => "",
    }
}

/// `bytes` as lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
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
        let cookie = keys.new_session(1_000_000, None).unwrap();
        let id = keys.session(&cookie, 1_000_010).expect("valid");
        assert!(cookie.starts_with(&id));
        assert_eq!(keys.session(&cookie, 1_000_000 + MAX_AGE_SECS + 1), None, "expired");
        assert_eq!(Keys::new("other-token").session(&cookie, 1_000_010), None, "another key");
        let forged = format!("{id}.{}", "0".repeat(64));
        assert_eq!(keys.session(&forged, 1_000_010), None);
        assert_eq!(person_of(&id), None, "the token holder's");
        let bobs = keys.new_session(1_000_000, Some(7)).unwrap();
        let bob = keys.session(&bobs, 1_000_010).unwrap();
        assert_eq!(person_of(&bob), Some(7));
        let (issued_random, _) = bob.rsplit_once('.').unwrap();
        let mac = bobs.rsplit_once('.').unwrap().1;
        let posing = format!("{issued_random}.8.{mac}");
        assert_eq!(keys.session(&posing, 1_000_010), None, "the person is signed with the session");
        assert_eq!(person_of("1000.abcd"), None, "a session from before people is the token holder's");
        assert_eq!(keys.session("garbage", 1_000_010), None);
    }

    #[test]
    fn ended_sessions_stay_ended_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("data").join("sessions.json");
        let token = "k".repeat(32);
        let keys = Keys::new(&token);
        keys.keep_in(&file, false, 1_000_000).unwrap();
        let (a, b) =
            (keys.new_session(1_000_000, None).unwrap(), keys.new_session(1_000_001, Some(7)).unwrap());
        let a_id = keys.session(&a, 1_000_002).unwrap();
        keys.end_session(&a_id).unwrap();
        assert_eq!(keys.session(&a, 1_000_003), None, "logged out");
        assert!(keys.session(&b, 1_000_003).is_some(), "another session is untouched");

        let restarted = Keys::new(&token);
        restarted.keep_in(&file, false, 1_000_010).unwrap();
        assert_eq!(restarted.session(&a, 1_000_010), None, "still logged out after a restart");
        assert!(restarted.session(&b, 1_000_010).is_some());

        let revoking = Keys::new(&token);
        revoking.keep_in(&file, true, 1_000_020).unwrap();
        assert_eq!(revoking.session(&b, 1_000_020), None, "every earlier session revoked");
        let c = revoking.new_session(1_000_021, None).unwrap();
        assert!(revoking.session(&c, 1_000_022).is_some(), "a new login works");
        let again = Keys::new(&token);
        again.keep_in(&file, false, 1_000_030).unwrap();
        assert_eq!(again.session(&b, 1_000_030), None, "the revocation is kept");
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
