//! Jira's REST API as a service of its own, used by the Jira task source and by write-back. It knows
//! nothing of tasks or messages.
//!
//! Two deployments: Jira Cloud (`https://yourco.atlassian.net`), basic auth with an Atlassian account's
//! email and an API token, REST API v3 (rich text in Atlassian Document Format, [`adf`]); and Jira Data
//! Center / Server, a personal access token sent as `Bearer`, REST API v2 (rich text as wiki markup
//! strings). [`JiraAuth`] picks both the credential and the API version.
//!
//! Rate limits and Jira's own faults: a 429 or a 5xx is waited out — its `Retry-After` when it sends
//! one (Jira Cloud does on 429 and 503), else a doubling back-off from a second — and retried as many
//! times as the caller allows, as is a connection that failed. The token is marked sensitive in its
//! header and never appears in an error: should Jira echo it, it is cut out.

pub mod adf;
mod error;

use std::fmt;
use std::time::Duration;

use base64::Engine;
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderValue, RETRY_AFTER};
use reqwest::{Method, StatusCode};
use serde_json::Value;

pub use error::{JiraError, jira_message};

/// The variable the token is read from unless the config names another.
pub const DEFAULT_TOKEN_ENV: &str = "JIRA_API_TOKEN";

/// The longest `Retry-After` honoured; a longer one is cut to this.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

/// How a source proves who it is, and so which API it speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JiraAuth {
    /// Jira Cloud: `email` and an API token, HTTP basic auth; REST API v3.
    #[default]
    Basic,
    /// Jira Data Center / Server: a personal access token, `Authorization: Bearer`; REST API v2.
    Bearer,
}

impl JiraAuth {
    /// `basic` or `bearer`, as the config names them.
    pub fn parse(text: &str) -> Option<JiraAuth> {
        match text {
            "" | "basic" => Some(JiraAuth::Basic),
            "bearer" => Some(JiraAuth::Bearer),
            _ => None,
        }
    }

    /// Whether this is Jira Cloud's way (v3, ADF) rather than Data Center's (v2, wiki text).
    pub fn is_cloud(self) -> bool {
        self == JiraAuth::Basic
    }
}

/// The task gid of the Jira issue with id `id`: `jira_` and the id, when it is what Jira issues (a
/// number). The id, not the key: a move to another project changes `APP-12` but keeps the id.
pub fn issue_gid(id: &str) -> Option<String> {
    let ok = !id.is_empty() && id.len() <= 20 && id.bytes().all(|b| b.is_ascii_digit());
    ok.then(|| format!("{GID_PREFIX}{id}"))
}

/// The Jira issue id a task gid names (the inverse of [`issue_gid`]); digits only, so it is safe in
/// a URL path.
pub fn issue_id(gid: &str) -> Option<&str> {
    let id = gid.strip_prefix(GID_PREFIX)?;
    issue_gid(id).map(|_| id)
}

const GID_PREFIX: &str = "jira_";

/// What a client needs to know of its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JiraSite {
    /// `https://yourco.atlassian.net` (a test's fake: `http://127.0.0.1:PORT`).
    pub base_url: String,
    pub auth: JiraAuth,
    /// Cloud: the Atlassian account the token belongs to.
    pub email: String,
    /// The variable holding the token (for messages).
    pub token_env: String,
}

/// A client for one site and one token.
pub struct JiraClient {
    site: JiraSite,
    /// The `Authorization` header, marked sensitive; `None` until a token is there.
    authorization: Result<HeaderValue, JiraError>,
    /// The token's text, to cut out of any message that echoes it.
    secret: String,
    http: reqwest::Client,
}

impl fmt::Debug for JiraClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JiraClient").field("site", &self.site).finish_non_exhaustive()
    }
}

impl JiraClient {
    /// A client of `site` with `token` (the value of its `token_env`, if set); each request may take
    /// `timeout`. A missing or unusable credential is told at the first request.
    pub fn new(site: JiraSite, token: Option<String>, timeout: Duration) -> Result<JiraClient, JiraError> {
        let base = site.base_url.trim_end_matches('/').to_string();
        let parsed = reqwest::Url::parse(&base).ok();
        if !parsed.is_some_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some()) {
            return Err(JiraError::BadBaseUrl { url: site.base_url });
        }
        let site = JiraSite { base_url: base, ..site };
        let secret = token.as_deref().map(str::trim).unwrap_or_default().to_string();
        let authorization = authorization(&site, &secret);
        let http = reqwest::Client::builder()
            .user_agent(concat!("executor/", env!("CARGO_PKG_VERSION")))
            .timeout(timeout)
            .build()
            .map_err(|e| JiraError::Transport { path: String::new(), reason: e.to_string() })?;
        Ok(JiraClient { site, authorization, secret, http })
    }

    pub fn site(&self) -> &JiraSite {
        &self.site
    }

    /// `/rest/api/3/…` on Cloud, `/rest/api/2/…` on Data Center.
    pub fn api(&self, tail: &str) -> String {
        let version = if self.site.auth.is_cloud() { 3 } else { 2 };
        format!("/rest/api/{version}/{}", tail.trim_start_matches('/'))
    }

    /// The page a person opens for issue `key`.
    pub fn browse_url(&self, key: &str) -> String {
        format!("{}/browse/{key}", self.site.base_url)
    }

    /// One request to `path` (with `query`, and `body` as JSON); the answer's JSON (`null` for an
    /// empty 204). A 429, a 5xx or a failed connection is waited out and retried up to `retries` times.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&Value>,
        retries: u32,
    ) -> Result<Value, JiraError> {
        let authorization = self.authorization.clone()?;
        let mut tried = 0;
        loop {
            let wait = match self.once(&authorization, method.clone(), path, query, body).await {
                Attempt::Done(answer) => return answer.map_err(|e| self.without_token(e)),
                Attempt::Again { wait, status } if tried >= retries => {
                    return Err(match (status, wait) {
                        (Some(status), _) => JiraError::GaveUp { path: path.into(), status, retries: tried },
                        (None, Err(reason)) => JiraError::Transport { path: path.into(), reason },
                        (None, Ok(_)) => JiraError::Transport { path: path.into(), reason: "failed".into() },
                    });
                }
                Attempt::Again { wait, .. } => wait.ok().flatten().unwrap_or_else(|| backoff(tried)),
            };
            tried += 1;
            tracing::info!(path, ?wait, "Jira asked to wait (or failed); trying again");
            tokio::time::sleep(wait).await;
        }
    }

    /// One request: its answer, or that it may be tried again (and after how long, if Jira said).
    async fn once(
        &self,
        authorization: &HeaderValue,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&Value>,
    ) -> Attempt {
        tracing::debug!(%method, path, "Jira request");
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.site.base_url))
            .query(query)
            .header(AUTHORIZATION, authorization.clone())
            .header(ACCEPT, "application/json");
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => return Attempt::Again { wait: Err(transport(e)), status: None },
        };
        let status = response.status();
        let retry_after = retry_after(response.headers().get(RETRY_AFTER));
        let bytes = match response.bytes().await {
            Ok(bytes) => bytes,
            Err(e) => return Attempt::Again { wait: Err(transport(e)), status: None },
        };
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            return Attempt::Again { wait: Ok(retry_after), status: Some(status.as_u16()) };
        }
        let text = String::from_utf8_lossy(&bytes);
        if status.is_success() {
            if text.trim().is_empty() {
                return Attempt::Done(Ok(Value::Null));
            }
            let parsed = serde_json::from_str(&text)
                .map_err(|e| JiraError::Malformed { path: path.into(), reason: e.to_string() });
            return Attempt::Done(parsed);
        }
        let message = jira_message(&text)
            .unwrap_or_else(|| status.canonical_reason().unwrap_or("no message").to_string());
        Attempt::Done(Err(self.refusal(status, path, message)))
    }

    fn refusal(&self, status: StatusCode, path: &str, message: String) -> JiraError {
        let (path, variable) = (path.to_string(), self.site.token_env.clone());
        match status.as_u16() {
            401 => JiraError::Unauthorized { variable, path, cloud: self.site.auth.is_cloud() },
            403 => JiraError::Forbidden { variable, path, message },
            404 | 410 => JiraError::NotFound { path, message },
            400 => JiraError::BadRequest { path, message },
            status => JiraError::Status { status, path, message },
        }
    }

    /// `e` with the token cut out of its text, should Jira ever echo it.
    fn without_token(&self, e: JiraError) -> JiraError {
        let cut = |text: String| match self.secret.is_empty() {
            true => text,
            false => text.replace(&self.secret, "<redacted>"),
        };
        match e {
            JiraError::Forbidden { variable, path, message } => {
                JiraError::Forbidden { variable, path, message: cut(message) }
            }
            JiraError::NotFound { path, message } => JiraError::NotFound { path, message: cut(message) },
            JiraError::BadRequest { path, message } => JiraError::BadRequest { path, message: cut(message) },
            JiraError::Status { status, path, message } => {
                JiraError::Status { status, path, message: cut(message) }
            }
            other => other,
        }
    }
}

/// How one request ended.
enum Attempt {
    Done(Result<Value, JiraError>),
    /// Worth another try: after `Retry-After` when Jira sent one (`Ok(Some)`), else a back-off; `Err`
    /// holds why the connection failed. `status` is the HTTP status when there was an answer.
    Again {
        wait: Result<Option<Duration>, String>,
        status: Option<u16>,
    },
}

/// The `Authorization` header for `site` with the token `secret`.
fn authorization(site: &JiraSite, secret: &str) -> Result<HeaderValue, JiraError> {
    let variable = site.token_env.clone();
    if secret.is_empty() {
        return Err(JiraError::MissingToken { variable, cloud: site.auth.is_cloud() });
    }
    let text = match site.auth {
        JiraAuth::Bearer => format!("Bearer {secret}"),
        JiraAuth::Basic if site.email.trim().is_empty() => return Err(JiraError::MissingEmail { variable }),
        JiraAuth::Basic => {
            let pair = format!("{}:{secret}", site.email.trim());
            format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair))
        }
    };
    let mut value = HeaderValue::from_str(&text).map_err(|_| JiraError::BadToken { variable })?;
    value.set_sensitive(true);
    Ok(value)
}

/// `Retry-After` in seconds, at most [`MAX_RETRY_WAIT`]; `None` when absent or unreadable.
fn retry_after(header: Option<&HeaderValue>) -> Option<Duration> {
    let seconds = header?.to_str().ok()?.trim().parse::<f64>().ok()?;
    // `try_`: a value past what a Duration holds (`1e30`) is the longest wait, not a panic.
    let wait = Duration::try_from_secs_f64(seconds).ok().or((seconds > 0.0).then_some(MAX_RETRY_WAIT))?;
    Some(wait.min(MAX_RETRY_WAIT))
}

/// The wait before retry `tried + 1` when Jira named none: a second, doubling, at most
/// [`MAX_RETRY_WAIT`].
fn backoff(tried: u32) -> Duration {
    Duration::from_secs(1u64 << tried.min(6)).min(MAX_RETRY_WAIT)
}

fn transport(error: reqwest::Error) -> String {
    let kind = if error.is_timeout() { "no answer in time" } else { "failed" };
    // Without the URL: the path is named, and the error stays short.
    format!("{kind}: {}", error.without_url())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_after_is_read_within_bounds_whatever_it_says() {
        let read = |v: &str| retry_after(Some(&HeaderValue::from_str(v).unwrap()));
        assert_eq!(read("2"), Some(Duration::from_secs(2)));
        assert_eq!(read("1e30"), Some(MAX_RETRY_WAIT), "past what a Duration holds: no panic");
        assert_eq!(read("inf"), Some(MAX_RETRY_WAIT));
        for bad in ["-1", "NaN", "soon"] {
            assert_eq!(read(bad), None, "{bad}");
        }
    }

    fn site(auth: JiraAuth, email: &str) -> JiraSite {
        JiraSite {
            base_url: "https://acme.atlassian.net/".into(),
            auth,
            email: email.into(),
            token_env: "JIRA_API_TOKEN".into(),
        }
    }

    #[test]
    fn gids_are_the_issue_id() {
        assert_eq!(issue_gid("10042").as_deref(), Some("jira_10042"));
        assert_eq!(issue_id("jira_10042"), Some("10042"));
        for bad in ["", "APP-1", "1/../2", "12 3"] {
            assert_eq!(issue_gid(bad), None, "{bad:?}");
        }
        assert_eq!(issue_id("jira_APP-1"), None);
        assert_eq!(issue_id("lin_10042"), None);
    }

    #[test]
    fn basic_auth_is_email_and_token_and_bearer_is_the_token() {
        let basic = authorization(&site(JiraAuth::Basic, "a@b.c"), "tok").unwrap();
        assert_eq!(basic.to_str().unwrap(), "Basic YUBiLmM6dG9r");
        assert!(basic.is_sensitive());
        let bearer = authorization(&site(JiraAuth::Bearer, ""), "pat").unwrap();
        assert_eq!(bearer.to_str().unwrap(), "Bearer pat");
        assert!(matches!(
            authorization(&site(JiraAuth::Basic, ""), "t"),
            Err(JiraError::MissingEmail { .. })
        ));
        assert!(matches!(
            authorization(&site(JiraAuth::Bearer, ""), ""),
            Err(JiraError::MissingToken { .. })
        ));
        assert!(matches!(
            authorization(&site(JiraAuth::Bearer, ""), "a\nb"),
            Err(JiraError::BadToken { .. })
        ));
    }

    #[test]
    fn the_api_version_follows_the_deployment() {
        let none = Duration::from_secs(1);
        let cloud = JiraClient::new(site(JiraAuth::Basic, "a@b.c"), Some("t".into()), none).unwrap();
        assert_eq!(cloud.api("search/jql"), "/rest/api/3/search/jql");
        assert_eq!(cloud.browse_url("APP-1"), "https://acme.atlassian.net/browse/APP-1");
        let dc = JiraClient::new(site(JiraAuth::Bearer, ""), Some("t".into()), none).unwrap();
        assert_eq!(dc.api("/search"), "/rest/api/2/search");
        let bad = JiraSite { base_url: "acme.atlassian.net".into(), ..site(JiraAuth::Basic, "a@b.c") };
        assert!(matches!(JiraClient::new(bad, None, none), Err(JiraError::BadBaseUrl { .. })));
        let header = authorization(cloud.site(), "t").unwrap();
        assert!(!format!("{cloud:?}").contains(header.to_str().unwrap()), "the header never shows");
    }

    #[test]
    fn waits_are_bounded() {
        assert_eq!(retry_after(Some(&HeaderValue::from_static("2"))), Some(Duration::from_secs(2)));
        assert_eq!(retry_after(Some(&HeaderValue::from_static("3600"))), Some(MAX_RETRY_WAIT));
        assert_eq!(retry_after(Some(&HeaderValue::from_static("soon"))), None);
        assert_eq!(
            (backoff(0), backoff(2), backoff(30)),
            (Duration::from_secs(1), Duration::from_secs(4), MAX_RETRY_WAIT)
        );
    }
}
