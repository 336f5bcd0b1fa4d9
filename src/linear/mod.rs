//! The Linear API as a service of its own, used by the Linear task source and by write-back: one
//! GraphQL endpoint (`https://api.linear.app/graphql`), a personal API key sent as `Authorization:
//! <key>` (no `Bearer`), the documents in `graphql/*.graphql` (checked against Linear's schema by
//! `tests/linear_schema.rs`). It knows nothing of tasks or messages.
//!
//! Rate limits: Linear answers a request over its limit with an error of code `RATELIMITED` (HTTP
//! 400, or 429 from its edge) and the `X-RateLimit-Requests-Reset` header (when the window resets, in
//! milliseconds since the epoch); the client waits until then (at most [`MAX_RETRY_WAIT`]) and tries
//! again, up to the retries its caller allows. The key is marked sensitive in its header and never
//! appears in an error: should Linear echo it, it is cut out.

mod error;

use std::fmt;
use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde_json::{Value, json};

pub use error::{GraphQlError, LinearError, classify, errors_of};

/// Linear's API, unless a test points a source at a fake.
pub const DEFAULT_API_URL: &str = "https://api.linear.app/graphql";

/// The variable the API key is read from unless the config names another.
pub const DEFAULT_KEY_ENV: &str = "LINEAR_API_KEY";

/// The longest wait for a rate-limit window honoured; a longer one is cut to this.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

/// The GraphQL documents, one operation each.
pub mod documents {
    /// A page of issues by filter, newest update first.
    pub const ISSUES: &str = include_str!("graphql/issues.graphql");
    /// A comment on an issue, with the id executor chose for it.
    pub const COMMENT_CREATE: &str = include_str!("graphql/comment_create.graphql");
    /// Whether a comment (by id) exists: how a retry recognises an earlier attempt's write.
    pub const COMMENT: &str = include_str!("graphql/comment.graphql");
    /// The workflow states of an issue's team with a name: where an issue moves.
    pub const ISSUE_TEAM_STATES: &str = include_str!("graphql/issue_team_states.graphql");
    /// An issue moved to a workflow state.
    pub const ISSUE_UPDATE: &str = include_str!("graphql/issue_update.graphql");
    /// The key's user and the named teams with their states, for `executor doctor`.
    pub const PROBE: &str = include_str!("graphql/probe.graphql");

    /// Every document, by file name (for the schema test).
    pub const ALL: &[(&str, &str)] = &[
        ("issues.graphql", ISSUES),
        ("comment_create.graphql", COMMENT_CREATE),
        ("comment.graphql", COMMENT),
        ("issue_team_states.graphql", ISSUE_TEAM_STATES),
        ("issue_update.graphql", ISSUE_UPDATE),
        ("probe.graphql", PROBE),
    ];
}

/// The task gid of the Linear issue with id `id`: `lin_` and the id, when the id is what Linear
/// issues (a UUID: hex digits and dashes), so that the gid is a valid path component.
pub fn issue_gid(id: &str) -> Option<String> {
    let ok = !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    ok.then(|| format!("{GID_PREFIX}{id}"))
}

/// The Linear issue id a task gid names (the inverse of [`issue_gid`]).
pub fn issue_id(gid: &str) -> Option<&str> {
    let id = gid.strip_prefix(GID_PREFIX)?;
    issue_gid(id).map(|_| id)
}

const GID_PREFIX: &str = "lin_";

/// A client for one API key.
pub struct LinearClient {
    url: String,
    key_env: String,
    key: Option<HeaderValue>,
    /// The key's text, to cut out of any message that echoes it.
    secret: String,
    http: reqwest::Client,
}

impl fmt::Debug for LinearClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinearClient").field("url", &self.url).field("key_env", &self.key_env).finish()
    }
}

impl LinearClient {
    /// A client of the API at `url` with the key `key` (the value of `key_env`, if set); each request
    /// may take `timeout`. A missing or unusable key is told at the first request.
    pub fn new(
        url: &str,
        key_env: &str,
        key: Option<String>,
        timeout: Duration,
    ) -> Result<LinearClient, LinearError> {
        if reqwest::Url::parse(url).is_err() {
            return Err(LinearError::BadApiUrl { url: url.to_string() });
        }
        let secret = key.as_deref().map(str::trim).unwrap_or_default().to_string();
        let key = HeaderValue::from_str(&secret).ok().filter(|_| !secret.is_empty()).map(|mut value| {
            value.set_sensitive(true);
            value
        });
        let http = reqwest::Client::builder()
            .user_agent(concat!("executor/", env!("CARGO_PKG_VERSION")))
            .timeout(timeout)
            .build()
            .map_err(|e| LinearError::Transport { reason: e.to_string(), timed_out: false })?;
        Ok(LinearClient { url: url.to_string(), key_env: key_env.to_string(), key, secret, http })
    }

    /// The variable the key comes from (for messages).
    pub fn key_env(&self) -> &str {
        &self.key_env
    }

    /// Runs `document` with `variables`; its `data`, or the error Linear answered. A rate limit is
    /// waited out and retried up to `retries` times.
    pub async fn run(&self, document: &str, variables: Value, retries: u32) -> Result<Value, LinearError> {
        let key = self.key()?;
        let body = json!({"query": document, "variables": variables});
        let mut tried = 0;
        loop {
            match self.once(&key, &body).await {
                Err(Limited(wait)) if tried < retries => {
                    tried += 1;
                    tracing::info!(?wait, "Linear rate limit; waiting");
                    tokio::time::sleep(wait).await;
                }
                Err(Limited(_)) => return Err(LinearError::RateLimited { retries: tried }),
                Ok(answer) => return answer.map_err(|e| self.without_key(e)),
            }
        }
    }

    fn key(&self) -> Result<HeaderValue, LinearError> {
        match &self.key {
            Some(key) => Ok(key.clone()),
            None if self.secret.is_empty() => Err(LinearError::MissingKey { variable: self.key_env.clone() }),
            None => Err(LinearError::BadKey { variable: self.key_env.clone() }),
        }
    }

    /// One request: its answer, or the wait a rate limit asks for.
    async fn once(&self, key: &HeaderValue, body: &Value) -> Result<Result<Value, LinearError>, Limited> {
        let sent = self
            .http
            .post(&self.url)
            .header(AUTHORIZATION, key.clone())
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/json")
            .json(body)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(e) => return Ok(Err(transport(e))),
        };
        let status = response.status();
        let wait = reset_wait(response.headers().get("x-ratelimit-requests-reset"));
        let bytes = match response.bytes().await {
            Ok(bytes) => bytes,
            Err(e) => return Ok(Err(transport(e))),
        };
        let answer: Option<Value> = serde_json::from_slice(&bytes).ok();
        let errors = answer.as_ref().map(errors_of).unwrap_or_default();
        if status.as_u16() == 429 || errors.iter().any(|e| e.code == "RATELIMITED") {
            return Err(Limited(wait));
        }
        if !errors.is_empty() {
            return Ok(Err(classify(&errors, &self.key_env)));
        }
        let message = || String::from_utf8_lossy(&bytes).chars().take(200).collect::<String>();
        if status.as_u16() == 401 {
            let variable = self.key_env.clone();
            return Ok(Err(LinearError::Unauthenticated { variable, message: message() }));
        }
        if status.as_u16() == 403 {
            return Ok(Err(LinearError::Forbidden { variable: self.key_env.clone(), message: message() }));
        }
        if !status.is_success() {
            return Ok(Err(LinearError::Status { status: status.as_u16(), message: message() }));
        }
        Ok(match answer.and_then(|mut a| a.get_mut("data").map(Value::take)) {
            Some(data) if data.is_object() => Ok(data),
            _ => Err(LinearError::Malformed { reason: "the answer has neither data nor errors".into() }),
        })
    }

    /// `e` with the key cut out of its text, should Linear ever echo it.
    fn without_key(&self, e: LinearError) -> LinearError {
        let cut = |text: String| match self.secret.is_empty() {
            true => text,
            false => text.replace(&self.secret, "<redacted>"),
        };
        match e {
            LinearError::Unauthenticated { variable, message } => {
                LinearError::Unauthenticated { variable, message: cut(message) }
            }
            LinearError::Forbidden { variable, message } => {
                LinearError::Forbidden { variable, message: cut(message) }
            }
            LinearError::NotFound { what, message } => LinearError::NotFound { what, message: cut(message) },
            LinearError::Status { status, message } => LinearError::Status { status, message: cut(message) },
            LinearError::GraphQl { code, message } => LinearError::GraphQl { code, message: cut(message) },
            other => other,
        }
    }
}

/// A rate limit's wait.
struct Limited(Duration);

/// The wait until `X-RateLimit-Requests-Reset` (milliseconds since the epoch), between a second and
/// [`MAX_RETRY_WAIT`]; a second when the header is absent or unreadable.
fn reset_wait(header: Option<&HeaderValue>) -> Duration {
    let reset = header.and_then(|v| v.to_str().ok()).and_then(|t| t.trim().parse::<i64>().ok());
    let now = chrono::Utc::now().timestamp_millis();
    let millis =
        reset.map_or(1000, |at| at.saturating_sub(now)).clamp(1000, MAX_RETRY_WAIT.as_millis() as i64);
    Duration::from_millis(millis.unsigned_abs())
}

fn transport(error: reqwest::Error) -> LinearError {
    let timed_out = error.is_timeout();
    let kind = if timed_out { "no answer in time" } else { "failed" };
    LinearError::Transport { reason: format!("{kind}: {}", error.without_url()), timed_out }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reset_wait_is_bounded() {
        let at = |ms: i64| {
            HeaderValue::from_str(&(chrono::Utc::now().timestamp_millis() + ms).to_string()).unwrap()
        };
        assert_eq!(reset_wait(None), Duration::from_secs(1));
        assert_eq!(reset_wait(Some(&at(-5000))), Duration::from_secs(1), "a reset in the past");
        assert_eq!(reset_wait(Some(&at(3_600_000))), MAX_RETRY_WAIT);
        let wait = reset_wait(Some(&at(5000)));
        assert!(wait > Duration::from_secs(3) && wait <= Duration::from_secs(5), "{wait:?}");
    }

    #[test]
    fn no_key_and_a_bad_key_are_told_apart() {
        let client = |key: Option<&str>| {
            LinearClient::new(
                DEFAULT_API_URL,
                "LINEAR_API_KEY",
                key.map(str::to_string),
                Duration::from_secs(1),
            )
            .unwrap()
        };
        assert!(matches!(client(None).key(), Err(LinearError::MissingKey { .. })));
        assert!(matches!(client(Some("  ")).key(), Err(LinearError::MissingKey { .. })));
        assert!(matches!(client(Some("lin_api\nx")).key(), Err(LinearError::BadKey { .. })));
        assert!(client(Some("lin_api_x")).key().unwrap().is_sensitive());
        let debug = format!("{:?}", client(Some("lin_api_secret")));
        assert!(!debug.contains("secret"), "{debug}");
    }
}
