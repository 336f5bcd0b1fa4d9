//! GitLab's API as a service of its own (gitlab.com or a self-managed instance): REST under `/api/v4`
//! and GraphQL at `/api/graphql`, with one token sent as `PRIVATE-TOKEN` (marked sensitive, never in a
//! URL, an error or a log). Used by the GitLab forge; it knows nothing of merge requests or runs.
//!
//! Rate limits: when an answer says `RateLimit-Remaining: 0`, no request goes out before its
//! `RateLimit-Reset`; a 429 is waited out for its `Retry-After`. A wait longer than [`MAX_WAIT`] is not
//! slept through: the call fails with [`GitLabError::RateLimited`] and the next tick tries again.
//!
//! Faults: a read (GET, a GraphQL query) or a PUT (which sets a value: repeating it changes nothing) is
//! retried on a 5xx or a failed connection, with a doubling back-off. A POST is retried only when it
//! surely did not reach GitLab (the connection was refused, a 429); a 5xx or a connection lost after
//! sending is [`GitLabError::AnswerLost`]: GitLab may have carried it out, and the caller looks for it
//! before trying again.

mod error;
mod issue_gid;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

pub use error::GitLabError;

use crate::shared_blocks::{SharedBlock, SharedBlocks};
pub use issue_gid::{issue_gid, parse_issue_gid};

/// The longest wait slept through (a `Retry-After`, a rate-limit reset); a longer one fails the call.
pub const MAX_WAIT: Duration = Duration::from_secs(60);
/// Retries of a read after a 5xx or a failed connection.
const READ_RETRIES: u32 = 3;

/// A client for one GitLab instance and one token.
pub struct GitLabClient {
    /// `[gitlab] url`, without a trailing `/`.
    base_url: String,
    api_url: String,
    graphql_url: String,
    /// The variable the token came from (the first of `token_env`), for messages.
    variable: String,
    /// `PRIVATE-TOKEN`, marked sensitive; the error when there is no usable token.
    header: Result<HeaderValue, GitLabError>,
    /// The token's text, cut out of any message that echoes it.
    secret: String,
    http: reqwest::Client,
    /// The first back-off after a 5xx or a failed connection; doubles per retry.
    backoff: Duration,
    /// No request before this: GitLab said `RateLimit-Remaining: 0` until its reset, or to retry after.
    blocked_until: Mutex<Option<DateTime<Utc>>>,
    /// Blocks shared with other processes on this instance: read before each request, written when
    /// GitLab blocks.
    shared: OnceLock<Arc<dyn SharedBlocks>>,
    /// Requests sent (retries included), for the benchmark and the tests.
    requests: AtomicU64,
}

impl std::fmt::Debug for GitLabClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitLabClient").field("api_url", &self.api_url).finish_non_exhaustive()
    }
}

impl GitLabClient {
    /// The client of `[gitlab]`, its token read from the first variable of `token_env` that is set. A
    /// missing token is told at the first request (and by `doctor`).
    pub fn from_env(config: &crate::config::GitLab) -> Result<GitLabClient, GitLabError> {
        GitLabClient::from_lookup(config, &|v| std::env::var(v).ok())
    }

    /// As [`from_env`](Self::from_env), reading the variables through `lookup` (a test's own map, the
    /// intake's and the outbox's environment).
    pub fn from_lookup(
        config: &crate::config::GitLab,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<GitLabClient, GitLabError> {
        let found = config
            .token_env
            .iter()
            .find_map(|v| lookup(v).filter(|t| !t.trim().is_empty()).map(|t| (v.clone(), t)));
        match found {
            Some((variable, token)) => GitLabClient::new(config, &variable, Some(token)),
            None => {
                let mut client = GitLabClient::new(config, "GITLAB_TOKEN", None)?;
                client.header = Err(GitLabError::MissingToken { variables: config.token_env.clone() });
                Ok(client)
            }
        }
    }

    /// A client of `config.url` with `token` (read from `variable`).
    pub fn new(
        config: &crate::config::GitLab,
        variable: &str,
        token: Option<String>,
    ) -> Result<GitLabClient, GitLabError> {
        let url = reqwest::Url::parse(config.url.trim_end_matches('/')).ok();
        if !url.is_some_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some()) {
            return Err(GitLabError::BadUrl { url: config.url.clone() });
        }
        let secret = token.as_deref().map(str::trim).unwrap_or_default().to_string();
        let header = match HeaderValue::from_str(&secret) {
            _ if secret.is_empty() => {
                Err(GitLabError::MissingToken { variables: vec![variable.to_string()] })
            }
            Ok(mut value) => {
                value.set_sensitive(true);
                Ok(value)
            }
            Err(_) => Err(GitLabError::BadToken { variable: variable.to_string() }),
        };
        let http = reqwest::Client::builder()
            .user_agent(concat!("executor/", env!("CARGO_PKG_VERSION")))
            .timeout(config.request_timeout.std())
            .build()
            .map_err(|e| GitLabError::Transport { path: String::new(), reason: e.to_string() })?;
        Ok(GitLabClient {
            base_url: config.url.trim_end_matches('/').to_string(),
            api_url: config.api_url(),
            graphql_url: config.graphql_url(),
            variable: variable.to_string(),
            header,
            secret,
            http,
            backoff: Duration::from_secs(1),
            blocked_until: Mutex::new(None),
            shared: OnceLock::new(),
            requests: AtomicU64::new(0),
        })
    }

    /// The first back-off after a fault (a second unless a test shortens it).
    pub fn with_backoff(mut self, backoff: Duration) -> Self {
        self.backoff = backoff;
        self
    }

    /// Honours the blocks `blocks` keeps and tells it of those GitLab gives this client (set once).
    pub fn share_blocks(&self, blocks: Arc<dyn SharedBlocks>) {
        let _ = self.shared.set(blocks);
    }

    /// Requests sent so far, retries included.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// The environment that lets `git push` over HTTPS to this instance with the token: an
    /// `Authorization` header for URLs under `[gitlab] url` only (GitLab takes any user name with a
    /// token as the password), set through `GIT_CONFIG_*` so that it is on no command line and in no
    /// file. Empty without a token: git then uses whatever credentials the user configured.
    pub fn git_env(&self) -> Vec<(String, String)> {
        use base64::Engine;
        if self.header.is_err() {
            return Vec::new();
        }
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("oauth2:{}", self.secret));
        vec![
            ("GIT_CONFIG_COUNT".into(), "1".into()),
            ("GIT_CONFIG_KEY_0".into(), format!("http.{}/.extraHeader", self.base_url)),
            ("GIT_CONFIG_VALUE_0".into(), format!("Authorization: Basic {basic}")),
        ]
    }

    /// The variable the token is read from.
    pub fn token_variable(&self) -> &str {
        &self.variable
    }

    /// A REST call on `path` under `/api/v4` (`/projects/…`, its query already in it, every value from
    /// outside escaped by the caller with [`segment`]); the answer's JSON, `null` when empty.
    pub async fn rest(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value, GitLabError> {
        let url = format!("{}{path}", self.api_url);
        let bytes = self.send(method, &url, path, body).await?;
        parse_json(path, &bytes)
    }

    /// A GraphQL query (a read: retried on faults); its `data`. An answer with `errors` is an error
    /// as a whole: partial data is never used.
    pub async fn graphql(&self, document: &str, variables: Value) -> Result<Value, GitLabError> {
        let body = json!({ "query": document, "variables": variables });
        let path = "/api/graphql";
        // A query: as safe to repeat as a GET.
        let bytes =
            self.send_as(Method::POST, &self.graphql_url, path, Some(&body), true, usize::MAX).await?;
        let mut answer = parse_json(path, &bytes)?;
        if let Some(errors) = answer.get("errors").and_then(Value::as_array).filter(|e| !e.is_empty()) {
            let messages: Vec<&str> =
                errors.iter().filter_map(|e| e.get("message").and_then(Value::as_str)).collect();
            // GitLab's words for its complexity limit ("Query has complexity of 300, which exceeds max
            // complexity of 250"): the one refusal a caller answers by asking less at once.
            let error = if messages.iter().any(|m| m.contains("exceeds max complexity")) {
                GitLabError::TooComplex(messages.join("; "))
            } else {
                GitLabError::GraphQl(messages.join("; "))
            };
            return Err(error.without(&self.secret));
        }
        match answer.get_mut("data").map(Value::take) {
            Some(data) if data.is_object() => Ok(data),
            _ => Err(GitLabError::Malformed { path: path.into(), reason: "no `data` in the answer".into() }),
        }
    }

    /// A GET under `/api/v4` answered with text (a job's log): its last `max_bytes` bytes, read as it
    /// streams (a log of any length holds no more than that in memory).
    pub async fn text(&self, path: &str, max_bytes: usize) -> Result<String, GitLabError> {
        let url = format!("{}{path}", self.api_url);
        let bytes = self.send_as(Method::GET, &url, path, None, true, max_bytes).await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    async fn send(
        &self,
        method: Method,
        url: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Vec<u8>, GitLabError> {
        // A PUT sets a value (labels added, a title, a thread resolved): sent twice it leaves what once
        // does, so it is repeated after a fault as a read is. A POST creates: never sent blindly again.
        let repeatable = matches!(method, Method::GET | Method::HEAD | Method::PUT);
        self.send_as(method, url, path, body, repeatable, usize::MAX).await
    }

    /// One call, with its waits and retries; `read`: safe to repeat after any fault. Of the answer's
    /// body, the last `tail` bytes are kept.
    async fn send_as(
        &self,
        method: Method,
        url: &str,
        path: &str,
        body: Option<&Value>,
        read: bool,
        tail: usize,
    ) -> Result<Vec<u8>, GitLabError> {
        let header = self.header.clone()?;
        let mut tried = 0;
        loop {
            self.wait_for_reset().await?;
            self.requests.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(%method, path, "GitLab request");
            let mut request = self.http.request(method.clone(), url).header("PRIVATE-TOKEN", header.clone());
            if let Some(body) = body {
                request = request.json(body);
            }
            let lost = |reason: String| GitLabError::AnswerLost {
                method: method.to_string(),
                path: path.into(),
                reason,
            };
            let fault = match request.send().await {
                Err(e) if read || e.is_connect() => {
                    Fault::Retry { status: None, reason: transport(e), wait: None }
                }
                Err(e) => return Err(lost(transport(e)).without(&self.secret)),
                Ok(response) => {
                    let status = response.status();
                    if let Some(until) = exhausted_until(response.headers()) {
                        self.block(until, "RateLimit-Remaining: 0").await;
                    }
                    let retry_after = retry_after(response.headers().get(RETRY_AFTER));
                    match last_bytes(response, tail).await {
                        Err(e) if read => Fault::Retry { status: None, reason: transport(e), wait: None },
                        Err(e) => return Err(lost(transport(e)).without(&self.secret)),
                        Ok(bytes) if status.is_success() => return Ok(bytes.to_vec()),
                        Ok(_) if status == StatusCode::TOO_MANY_REQUESTS => {
                            // Refused, so not carried out: a write may be sent again too.
                            let wait = retry_after.unwrap_or_else(|| self.backoff_for(tried));
                            let until = Utc::now()
                                + chrono::TimeDelta::from_std(wait).unwrap_or(chrono::TimeDelta::hours(1));
                            self.block(until, "429 Too Many Requests").await;
                            if wait > MAX_WAIT {
                                return Err(GitLabError::RateLimited { until });
                            }
                            Fault::Retry { status: Some(429), reason: "429".into(), wait: Some(wait) }
                        }
                        Ok(_) if status.is_server_error() && !read => {
                            return Err(lost(format!("HTTP {}", status.as_u16())));
                        }
                        Ok(_) if status.is_server_error() => Fault::Retry {
                            status: Some(status.as_u16()),
                            reason: status.to_string(),
                            wait: retry_after,
                        },
                        Ok(bytes) => {
                            let message = error::gitlab_message(&String::from_utf8_lossy(&bytes));
                            return Err(self.refusal(status, path, message).without(&self.secret));
                        }
                    }
                }
            };
            let Fault::Retry { status, reason, wait } = fault;
            if tried >= READ_RETRIES {
                return Err(match status {
                    Some(status) => GitLabError::GaveUp { path: path.into(), status, retries: tried },
                    None => GitLabError::Transport { path: path.into(), reason }.without(&self.secret),
                });
            }
            let wait = wait.unwrap_or_else(|| self.backoff_for(tried)).min(MAX_WAIT);
            tried += 1;
            tracing::info!(path, ?wait, "GitLab failed or asked to wait ({reason}); trying again");
            tokio::time::sleep(wait).await;
        }
    }

    fn refusal(&self, status: StatusCode, path: &str, message: String) -> GitLabError {
        let (variable, path) = (self.variable.clone(), path.to_string());
        match status.as_u16() {
            401 => GitLabError::Unauthorized { variable, path },
            403 => GitLabError::Forbidden { variable, path, message },
            404 => GitLabError::NotFound { path, message },
            status => GitLabError::Status { status, path, message },
        }
    }

    /// No request before `until`, in this process and — when shared — in every other on this instance.
    async fn block(&self, until: DateTime<Utc>, why: &str) {
        self.hold_until(until);
        if let Some(shared) = self.shared.get() {
            shared.write(SharedBlock { until, why: why.to_string() }).await;
        }
    }

    /// No request before `until` in this process (a later block wins).
    fn hold_until(&self, until: DateTime<Utc>) {
        if let Ok(mut blocked) = self.blocked_until.lock() {
            *blocked = (*blocked).max(Some(until));
        }
    }

    /// Sleeps until the rate limit's reset when GitLab said none is left, unless that is further than
    /// [`MAX_WAIT`] (then the call fails, and no request goes out).
    async fn wait_for_reset(&self) -> Result<(), GitLabError> {
        // A block another process was given counts as this one's own.
        if let Some(shared) = self.shared.get()
            && let Some(block) = shared.read().await
            && block.until > Utc::now()
        {
            self.hold_until(block.until);
        }
        let until = self.blocked_until.lock().ok().and_then(|b| *b);
        let Some(until) = until else { return Ok(()) };
        let left = (until - Utc::now()).to_std().unwrap_or(Duration::ZERO);
        if left > MAX_WAIT {
            return Err(GitLabError::RateLimited { until });
        }
        if !left.is_zero() {
            tracing::info!(?left, "GitLab's rate limit is used up: waiting for its reset");
            tokio::time::sleep(left).await;
        }
        if let Ok(mut blocked) = self.blocked_until.lock() {
            *blocked = blocked.filter(|b| *b > until);
        }
        Ok(())
    }

    fn backoff_for(&self, tried: u32) -> Duration {
        (self.backoff * (1u32 << tried.min(6))).min(MAX_WAIT)
    }
}

/// The body's last `tail` bytes, read chunk by chunk.
async fn last_bytes(mut response: reqwest::Response, tail: usize) -> Result<Vec<u8>, reqwest::Error> {
    let mut kept = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        kept.extend_from_slice(&chunk);
        if kept.len() > tail.saturating_mul(2) {
            kept.drain(..kept.len() - tail);
        }
    }
    if kept.len() > tail {
        kept.drain(..kept.len() - tail);
    }
    Ok(kept)
}

/// A failed attempt worth another.
enum Fault {
    Retry { status: Option<u16>, reason: String, wait: Option<Duration> },
}

/// A value from outside (a project path, a branch, an id GitLab gave) as one URL path segment or query
/// value: everything but unreserved characters percent-encoded (`group/project` → `group%2Fproject`).
pub fn segment(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, UNRESERVED).to_string()
}

const UNRESERVED: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

fn parse_json(path: &str, bytes: &[u8]) -> Result<Value, GitLabError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    serde_json::from_slice(bytes)
        .map_err(|e| GitLabError::Malformed { path: path.into(), reason: e.to_string() })
}

/// `RateLimit-Reset` (a second from now when it is missing) when `RateLimit-Remaining` reached 0.
fn exhausted_until(headers: &HeaderMap) -> Option<DateTime<Utc>> {
    let number = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<i64>().ok();
    if number("ratelimit-remaining") != Some(0) {
        return None;
    }
    let reset = number("ratelimit-reset").and_then(|at| DateTime::<Utc>::from_timestamp(at, 0));
    Some(reset.unwrap_or_else(|| Utc::now() + chrono::TimeDelta::seconds(1)))
}

/// The longest `Retry-After` believed: GitLab's limits are per minute or per hour, and a larger value
/// (a proxy's, a broken server's) must not hold every process for longer.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// `Retry-After` in seconds, at most [`MAX_RETRY_AFTER`]; `None` when absent or unreadable.
fn retry_after(header: Option<&HeaderValue>) -> Option<Duration> {
    let seconds = header?.to_str().ok()?.trim().parse::<f64>().ok()?;
    // `try_`: a value past what a Duration holds (`1e30`) is the longest wait, not a panic.
    let wait = Duration::try_from_secs_f64(seconds).ok().or((seconds > 0.0).then_some(MAX_RETRY_AFTER))?;
    Some(wait.min(MAX_RETRY_AFTER))
}

fn transport(error: reqwest::Error) -> String {
    let kind = if error.is_timeout() { "no answer in time" } else { "failed" };
    // Without the URL: the path is named by the error, and the message stays short.
    let error = error.without_url();
    let mut message = format!("{kind}: {error}");
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_after_is_read_within_bounds_whatever_it_says() {
        let read = |v: &str| retry_after(Some(&HeaderValue::from_str(v).unwrap()));
        assert_eq!(read("2"), Some(Duration::from_secs(2)));
        assert_eq!(read("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(read("1e30"), Some(MAX_RETRY_AFTER), "past what a Duration holds: no panic");
        assert_eq!(read("99999999"), Some(MAX_RETRY_AFTER));
        assert_eq!(read("inf"), Some(MAX_RETRY_AFTER));
        for bad in ["-1", "NaN", "soon", ""] {
            assert_eq!(read(bad), None, "{bad}");
        }
    }

    #[test]
    fn segments_escape_everything_but_unreserved() {
        assert_eq!(segment("group/sub/project"), "group%2Fsub%2Fproject");
        assert_eq!(segment("feature/x y"), "feature%2Fx%20y");
        assert_eq!(segment("a-b_c.d~"), "a-b_c.d~");
    }

    #[test]
    fn the_token_header_is_sensitive_and_never_shown() {
        let config = crate::config::GitLab::default();
        let client = GitLabClient::new(&config, "GITLAB_TOKEN", Some("glpat-secret".into())).unwrap();
        assert!(client.header.as_ref().unwrap().is_sensitive());
        assert!(!format!("{client:?}").contains("glpat-secret"));
        let none = GitLabClient::new(&config, "GITLAB_TOKEN", None).unwrap();
        assert!(matches!(none.header, Err(GitLabError::MissingToken { .. })));
        let bad = GitLabClient::new(&config, "GITLAB_TOKEN", Some("a\nb".into())).unwrap();
        assert!(matches!(bad.header, Err(GitLabError::BadToken { .. })));
        let url = crate::config::GitLab { url: "gitlab.com".into(), ..config };
        assert!(matches!(GitLabClient::new(&url, "T", None), Err(GitLabError::BadUrl { .. })));
    }

    #[test]
    fn an_echoed_token_is_cut_out() {
        let e = GitLabError::Status { status: 400, path: "/x".into(), message: "bad token glpat-s3".into() };
        assert_eq!(e.without("glpat-s3").to_string(), "GitLab answered 400 on /x: bad token <redacted>");
    }
}
