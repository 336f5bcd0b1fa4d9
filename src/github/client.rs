//! The GitHub HTTP client: GraphQL and REST calls with the token, the rate limits checked
//! before and recorded after every call, ETags for conditional GETs, and job-log downloads. No retries
//! inside a call: a failed call fails the repository's tick, and the next tick tries again — simple and
//! predictable. One client lives for the runner's life, so its ETags and limits carry across ticks.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use chrono::{DateTime, Utc};
use reqwest::header::{self, HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use serde_json::Value;

use super::auth::{AppCall, Auth, Credential, TokenSources};
use super::error::{GitHubError, github_message};
use super::rate::{Api, RateState, RateStatus};
use crate::shared_blocks::{SharedBlock, SharedBlocks};

/// Requests sent so far (for the benchmark and `status`). `rest` counts every REST request, those
/// answered 304 included; `not_modified` counts the 304s among them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RequestCounts {
    pub rest: u64,
    pub graphql: u64,
    /// The sum of the GraphQL answers' `rateLimit.cost`.
    pub graphql_points: u64,
    pub not_modified: u64,
}

#[derive(Default)]
struct Counters {
    rest: AtomicU64,
    graphql: AtomicU64,
    graphql_points: AtomicU64,
    not_modified: AtomicU64,
}

/// One configured GitHub (github.com or an Enterprise server) with one token.
pub struct GitHubClient {
    /// API calls. reqwest follows GitHub's redirects (a renamed repository) and drops the
    /// Authorization header when one leads to another host.
    http: reqwest::Client,
    /// Downloads: redirects are followed by [`GitHubClient::download_text`] itself, which decides
    /// where the token goes.
    downloads: reqwest::Client,
    /// The REST base, without a trailing '/'.
    api_url: String,
    graphql_url: String,
    auth: Auth,
    rate: Mutex<RateState>,
    /// The last ETag of each conditional GET's path.
    etags: Mutex<HashMap<String, String>>,
    counters: Counters,
    /// Blocks shared with other processes: read before each request, written when GitHub blocks.
    shared: std::sync::OnceLock<std::sync::Arc<dyn SharedBlocks>>,
}

/// A GraphQL answer's `data` with the errors GitHub reported next to it (each with its `path`), for a
/// caller that can tell which part of the data an error spoils.
#[derive(Debug, Clone)]
pub struct GraphQlAnswer {
    pub data: Value,
    pub errors: Vec<Value>,
}

/// An answer worth reading: its status, headers and body.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

/// At most this many redirects lead from a job-log URL to its download.
const MAX_REDIRECTS: usize = 5;

impl GitHubClient {
    /// Builds the client (no request yet); the token is looked for in the sources `[github]` names at
    /// the first request.
    pub fn new(config: &crate::config::GitHub) -> Result<GitHubClient, GitHubError> {
        GitHubClient::with_sources(config, TokenSources::from_config(config))
    }

    /// Builds the client with its token sources given (tests, the benchmark: [`TokenSources::given`]).
    pub fn with_sources(
        config: &crate::config::GitHub,
        sources: TokenSources,
    ) -> Result<GitHubClient, GitHubError> {
        let api_url = config.api_url.trim_end_matches('/').to_string();
        let graphql_url = config.graphql_endpoint();
        for (key, url) in [("api_url", &api_url), ("graphql_url", &graphql_url)] {
            Url::parse(url)
                .map_err(|e| GitHubError::Transport(format!("[github] {key} {url:?} is not a URL ({e})")))?;
        }
        let build = |redirects: reqwest::redirect::Policy| {
            reqwest::Client::builder()
                .user_agent(concat!("executor/", env!("CARGO_PKG_VERSION")))
                .timeout(config.request_timeout.std())
                .redirect(redirects)
                .build()
                .map_err(GitHubError::from_reqwest)
        };
        Ok(GitHubClient {
            http: build(reqwest::redirect::Policy::default())?,
            downloads: build(reqwest::redirect::Policy::none())?,
            api_url,
            graphql_url,
            auth: Auth::new(sources),
            rate: Mutex::new(RateState::new(config.reserve_points)),
            etags: Mutex::new(HashMap::new()),
            counters: Counters::default(),
            shared: std::sync::OnceLock::new(),
        })
    }

    /// Shares rate-limit blocks with other processes through `blocks` (once; a second call is ignored).
    pub fn share_blocks(&self, blocks: std::sync::Arc<dyn SharedBlocks>) {
        let _ = self.shared.set(blocks);
    }

    /// POSTs a GraphQL document and returns its `data`. Refused before sending while blocked or while
    /// the GraphQL points are down to `reserve_points`. An answer with any `errors` is `Partial` even
    /// when it has data — a partial snapshot is never acted on — except `RATE_LIMITED`, which is
    /// `RateLimited`.
    pub async fn graphql(&self, document: &str, variables: Value) -> Result<Value, GitHubError> {
        let answer = self.graphql_with_errors(document, variables).await?;
        match answer.errors.is_empty() {
            true => Ok(answer.data),
            false => Err(partial(&answer.errors)),
        }
    }

    /// [`GitHubClient::graphql`], but an answer with data and errors (other than `RATE_LIMITED`) returns
    /// both: the caller decides which parts of the data the errors spoil.
    pub async fn graphql_with_errors(
        &self,
        document: &str,
        variables: Value,
    ) -> Result<GraphQlAnswer, GitHubError> {
        self.admit(Api::GraphQl).await?;
        let credential = self.credential().await?;
        let request = self
            .http
            .post(&self.graphql_url)
            .header(header::AUTHORIZATION, bearer(&credential)?)
            .json(&serde_json::json!({ "query": document, "variables": variables }));
        self.counters.graphql.fetch_add(1, Ordering::Relaxed);
        let answer = self.send(Api::GraphQl, "POST", "graphql", request).await?;
        if !answer.status.is_success() {
            return Err(self.failure(Api::GraphQl, answer, &credential, "POST graphql").await);
        }
        let mut body: Value = serde_json::from_str(&answer.body)
            .map_err(|e| GitHubError::Malformed(format!("the GraphQL answer is not JSON ({e})")))?;
        self.record_rate_limit_field(&body);
        let errors = match body.get_mut("errors").map(Value::take) {
            Some(Value::Array(errors)) => errors,
            _ => Vec::new(),
        };
        if let Some(limited) = self.graphql_rate_limited(&errors) {
            self.share(&limited).await;
            return Err(limited);
        }
        match body.get_mut("data").map(Value::take) {
            Some(data) if data.is_object() => {
                self.lock_rate().record_success();
                Ok(GraphQlAnswer { data, errors })
            }
            _ if !errors.is_empty() => Err(partial(&errors)),
            _ => Err(GitHubError::Malformed("the GraphQL answer has neither `data` nor `errors`".into())),
        }
    }

    /// The ETag remembered for `path` (to keep it beyond this process).
    pub fn etag(&self, path: &str) -> Option<String> {
        self.lock_etags().get(path).cloned()
    }

    /// Remembers `etag` for `path`, as if its last conditional GET had been answered with it (an ETag kept
    /// by an earlier process).
    pub fn set_etag(&self, path: &str, etag: &str) {
        self.lock_etags().insert(path.to_string(), etag.to_string());
    }

    /// A REST call on `api_url` + `path` (`path` starts with '/', may hold a query string). Returns the
    /// JSON body, `Value::Null` when it is empty (204).
    pub async fn rest(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value, GitHubError> {
        let answer = self.rest_call(method.clone(), path, body, None).await?;
        json_body(&answer.body, &method, path)
    }

    /// A conditional GET: `If-None-Match` with the ETag remembered for `path`. `Ok(None)` on 304 (which
    /// costs no rate limit), else the body, whose ETag is remembered for next time.
    pub async fn get_if_changed(&self, path: &str) -> Result<Option<Value>, GitHubError> {
        let etag = self.lock_etags().get(path).cloned();
        let answer = self.rest_call(Method::GET, path, None, etag.as_deref()).await?;
        if answer.status == StatusCode::NOT_MODIFIED {
            self.counters.not_modified.fetch_add(1, Ordering::Relaxed);
            return Ok(None);
        }
        let body = json_body(&answer.body, &Method::GET, path)?;
        if let Some(etag) = answer.headers.get(header::ETAG).and_then(|v| v.to_str().ok()) {
            self.lock_etags().insert(path.to_string(), etag.to_string());
        }
        Ok(Some(body))
    }

    /// Forgets the ETag of `path`, so that its next [`GitHubClient::get_if_changed`] returns the body
    /// even if nothing changed (for a caller that could not act on the last body it was given).
    pub fn forget_etag(&self, path: &str) {
        self.lock_etags().remove(path);
    }

    /// GETs `path`, which redirects to a download (GitHub Actions job logs:
    /// `/repos/{o}/{r}/actions/jobs/{id}/logs` → 302), follows the redirects — sending the token only to
    /// the API's own scheme, host and port — and returns the body's last `max_bytes` bytes as text (cut
    /// at a character boundary; invalid UTF-8 replaced).
    pub async fn download_text(&self, path: &str, max_bytes: usize) -> Result<String, GitHubError> {
        let mut response = self.follow_to_download(path).await?;
        let mut tail = Vec::new();
        while let Some(chunk) =
            response.chunk().await.map_err(|e| GitHubError::from_reqwest(e.without_url()))?
        {
            tail.extend_from_slice(&chunk);
            // Memory stays bounded by the tail wanted, not by the log's size.
            // One byte more than wanted is kept, so that the cut is seen (and its line dropped).
            if tail.len() > max_bytes.saturating_mul(2).max(64 * 1024) {
                tail.drain(..tail.len() - max_bytes - 1);
            }
        }
        Ok(last_bytes_as_text(&tail, max_bytes))
    }

    /// The 2xx answer at the end of `path`'s redirects, its body not read yet.
    async fn follow_to_download(&self, path: &str) -> Result<reqwest::Response, GitHubError> {
        self.admit(Api::Rest).await?;
        let credential = self.credential().await?;
        let api = Url::parse(&self.api_url).map_err(|e| GitHubError::Transport(e.to_string()))?;
        let mut url = Url::parse(&format!("{}{path}", self.api_url))
            .map_err(|e| GitHubError::Malformed(format!("{path:?} does not make a URL ({e})")))?;
        for _ in 0..=MAX_REDIRECTS {
            let to_api = same_origin(&url, &api);
            let mut request = self.downloads.get(url.clone());
            if to_api {
                request = rest_headers(request).header(header::AUTHORIZATION, bearer(&credential)?);
            }
            self.counters.rest.fetch_add(1, Ordering::Relaxed);
            let started = Instant::now();
            // The download host's URL is signed: it is neither logged nor put in an error.
            let sent = request.send().await;
            let response =
                sent.map_err(|e| GitHubError::from_reqwest(if to_api { e } else { e.without_url() }))?;
            let status = response.status();
            let shown = if to_api { url.path() } else { "(download host)" };
            tracing::debug!(method = "GET", path = shown, status = status.as_u16(), elapsed = ?started.elapsed(), "GitHub");
            if to_api {
                self.lock_rate().record_headers(response.headers(), Api::Rest);
            }
            if status.is_redirection() {
                let location = response.headers().get(header::LOCATION).and_then(|v| v.to_str().ok());
                let location = location.ok_or_else(|| {
                    GitHubError::Malformed(format!("GET {path}: a redirect without a Location"))
                })?;
                url = url.join(location).map_err(|e| {
                    GitHubError::Malformed(format!("GET {path}: a redirect to a bad URL ({e})"))
                })?;
                continue;
            }
            if status.is_success() {
                if to_api {
                    self.lock_rate().record_success();
                }
                return Ok(response);
            }
            let headers = response.headers().clone();
            let body = response.text().await.unwrap_or_default();
            if !to_api {
                // Not GitHub's API: its 401/403/404 say nothing about the token or the rate limit.
                let message = format!("the download of {path} failed: {}", github_message(&body));
                return Err(GitHubError::Http { status: status.as_u16(), message });
            }
            let answer = Answer { status, headers, body };
            return Err(self.failure(Api::Rest, answer, &credential, &format!("GET {path}")).await);
        }
        Err(GitHubError::Malformed(format!("GET {path}: more than {MAX_REDIRECTS} redirects")))
    }

    /// Where the limits stand.
    pub fn rate(&self) -> RateStatus {
        self.lock_rate().status(Utc::now())
    }

    /// Requests sent so far.
    pub fn counts(&self) -> RequestCounts {
        let c = &self.counters;
        RequestCounts {
            rest: c.rest.load(Ordering::Relaxed),
            graphql: c.graphql.load(Ordering::Relaxed),
            graphql_points: c.graphql_points.load(Ordering::Relaxed),
            not_modified: c.not_modified.load(Ordering::Relaxed),
        }
    }

    /// One REST request; a 2xx or (for a conditional GET) a 304 is returned, anything else is the error.
    async fn rest_call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        if_none_match: Option<&str>,
    ) -> Result<Answer, GitHubError> {
        self.admit(Api::Rest).await?;
        let credential = self.credential().await?;
        let mut request = rest_headers(self.http.request(method.clone(), format!("{}{path}", self.api_url)))
            .header(header::AUTHORIZATION, bearer(&credential)?);
        if let Some(etag) = if_none_match {
            request = request.header(header::IF_NONE_MATCH, etag);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        self.counters.rest.fetch_add(1, Ordering::Relaxed);
        let answer = self.send(Api::Rest, method.as_str(), path, request).await?;
        let conditional_hit = if_none_match.is_some() && answer.status == StatusCode::NOT_MODIFIED;
        if answer.status.is_success() || conditional_hit {
            self.lock_rate().record_success();
            return Ok(answer);
        }
        Err(self.failure(Api::Rest, answer, &credential, &format!("{method} {path}")).await)
    }

    /// Sends, logs one line, records the rate-limit headers, reads the body.
    async fn send(
        &self,
        api: Api,
        method: &str,
        path: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<Answer, GitHubError> {
        let started = Instant::now();
        let response = request.send().await.map_err(GitHubError::from_reqwest)?;
        let status = response.status();
        let path_only = path.split('?').next().unwrap_or(path);
        tracing::debug!(method, path = path_only, status = status.as_u16(), elapsed = ?started.elapsed(), "GitHub");
        let headers = response.headers().clone();
        self.lock_rate().record_headers(&headers, api);
        let body = response.text().await.map_err(GitHubError::from_reqwest)?;
        Ok(Answer { status, headers, body })
    }

    /// The error a non-2xx answer stands for: 401 (the token's fault), 404, a rate limit (which blocks
    /// the calls that follow), or GitHub's message.
    async fn failure(&self, api: Api, answer: Answer, credential: &Credential, call: &str) -> GitHubError {
        let message = github_message(&answer.body);
        let status = answer.status.as_u16();
        match status {
            401 => {
                self.auth.refused().await;
                GitHubError::Auth(format!(
                    "GitHub refused the token from {} ({call}: HTTP 401 {message}); check that it is valid and \
                     not expired (`gh auth login`, or a new token)",
                    credential.origin
                ))
            }
            404 => GitHubError::NotFound(format!("{call}: {message}")),
            403 | 429 => {
                let limited =
                    self.lock_rate().record_limit_answer(status, &answer.headers, &message, Utc::now());
                match limited {
                    Some(refusal) => {
                        tracing::warn!(until = %refusal.until, why = %refusal.why, api = ?api, "GitHub rate limit");
                        let error = refusal.into();
                        self.share(&error).await;
                        error
                    }
                    None => GitHubError::Http { status, message },
                }
            }
            _ => GitHubError::Http { status, message },
        }
    }

    /// `data.rateLimit { cost remaining resetAt }`, when the document asked for it.
    fn record_rate_limit_field(&self, body: &Value) {
        let Some(rate) = body.pointer("/data/rateLimit") else { return };
        if let Some(cost) = rate.get("cost").and_then(Value::as_u64) {
            self.counters.graphql_points.fetch_add(cost, Ordering::Relaxed);
        }
        let remaining = rate.get("remaining").and_then(Value::as_u64);
        let reset = rate.get("resetAt").and_then(Value::as_str).and_then(|s| s.parse::<DateTime<Utc>>().ok());
        if let (Some(remaining), Some(reset)) = (remaining, reset) {
            self.lock_rate().record_graphql_points(u32::try_from(remaining).unwrap_or(u32::MAX), reset);
        }
    }

    /// A `RATE_LIMITED` error among `errors`: the block it starts.
    fn graphql_rate_limited(&self, errors: &[Value]) -> Option<GitHubError> {
        let rate_limited =
            errors.iter().any(|e| e.get("type").and_then(Value::as_str) == Some("RATE_LIMITED"));
        if !rate_limited {
            return None;
        }
        let refusal = self.lock_rate().record_graphql_rate_limited(Utc::now());
        tracing::warn!(until = %refusal.until, why = %refusal.why, "GitHub GraphQL rate limit");
        Some(refusal.into())
    }

    /// Tells the other processes of a block GitHub started.
    async fn share(&self, error: &GitHubError) {
        if let (Some(shared), GitHubError::RateLimited { until, why }) = (self.shared.get(), error) {
            shared.write(SharedBlock { until: *until, why: why.clone() }).await;
        }
    }

    /// Whether a call may be sent now: a block another process recorded counts as this one's own.
    async fn admit(&self, api: Api) -> Result<(), GitHubError> {
        if let Some(shared) = self.shared.get()
            && let Some(block) = shared.read().await
            && block.until > Utc::now()
        {
            self.lock_rate().record_shared_block(block.until, block.why);
        }
        Ok(self.lock_rate().admit(api, Utc::now())?)
    }

    async fn credential(&self) -> Result<Credential, GitHubError> {
        let call = AppCall { http: &self.http, api_url: &self.api_url, rest_count: &self.counters.rest };
        self.auth.credential(&call).await
    }

    // The locks guard plain bookkeeping; a panic while holding one cannot leave it half-written in a way
    // that matters, so a poisoned lock is used as it is.
    fn lock_rate(&self) -> std::sync::MutexGuard<'_, RateState> {
        self.rate.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn lock_etags(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.etags.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl fmt::Debug for GitHubClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitHubClient")
            .field("api_url", &self.api_url)
            .field("graphql_url", &self.graphql_url)
            .field("auth", &self.auth)
            .field("counts", &self.counts())
            .finish_non_exhaustive()
    }
}

/// The errors of a GraphQL answer as one `Partial` error: the first three messages.
fn partial(errors: &[Value]) -> GitHubError {
    let messages: Vec<&str> = errors
        .iter()
        .take(3)
        .map(|e| e.get("message").and_then(Value::as_str).unwrap_or("(no message)"))
        .collect();
    let more = if errors.len() > 3 { format!(" (and {} more)", errors.len() - 3) } else { String::new() };
    GitHubError::Partial(format!("{}{more}", messages.join("; ")))
}

fn rest_headers(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    request.header(header::ACCEPT, "application/vnd.github+json").header("X-GitHub-Api-Version", "2022-11-28")
}

/// The Authorization header, marked sensitive so that no HTTP-layer debug output prints it.
fn bearer(credential: &Credential) -> Result<HeaderValue, GitHubError> {
    let mut value =
        HeaderValue::from_str(&format!("Bearer {}", credential.token.expose())).map_err(|_| {
            GitHubError::Auth(format!(
                "the token from {} holds characters a header cannot",
                credential.origin
            ))
        })?;
    value.set_sensitive(true);
    Ok(value)
}

fn json_body(body: &str, method: &Method, path: &str) -> Result<Value, GitHubError> {
    if body.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_str(body)
        .map_err(|e| GitHubError::Malformed(format!("{method} {path}: the answer is not JSON ({e})")))
}

/// Scheme, host and port equal: where the API's token may be sent.
fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// The last `max_bytes` bytes as text, starting at a character boundary.
fn last_bytes_as_text(bytes: &[u8], max_bytes: usize) -> String {
    let cut = bytes.len().saturating_sub(max_bytes);
    if cut == 0 {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    // The line the cut lands in is dropped whole: a token cut in half is known by neither its value nor
    // its shape, and its random part would pass redaction (issue 32, item 1). A tail with no line end
    // at all keeps what follows its first space.
    let rest = &bytes[cut..];
    let start = rest
        .iter()
        .position(|b| *b == b'\n')
        .or_else(|| rest.iter().position(|b| b.is_ascii_whitespace()))
        .map_or(bytes.len(), |at| cut + at + 1);
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

#[cfg(test)]
mod tests;
