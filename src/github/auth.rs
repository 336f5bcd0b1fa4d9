//! Where the GitHub token comes from, in order: the `[github] token_env` variables (the first one set
//! wins), `gh auth token`, or a GitHub App (an RS256-signed JWT exchanged for an installation token,
//! renewed before it expires). The source is resolved at the first request and kept; the token itself
//! never appears in Debug output, logs or errors.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chrono::{DateTime, TimeDelta, Utc};
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use tokio::sync::Mutex;

use super::error::{GitHubError, github_message};

/// A token. Its Debug says `<redacted>` (it has no Display); [`Secret::expose`] is the one way to read it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(token: impl Into<String>) -> Secret {
        Secret(token.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Reads an environment variable; `std::env::var` outside tests (tests cannot set variables safely
/// while other tests run).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The sources a client may take its token from, tried in this order: `given`, the `env_names`,
/// `gh_program auth token --hostname gh_hostname`, the App.
#[derive(Clone)]
pub struct TokenSources {
    /// A token handed in by the caller (tests, the benchmark).
    pub given: Option<Secret>,
    pub env_names: Vec<String>,
    pub env: EnvLookup,
    /// The `gh` program; `None` skips it.
    pub gh_program: Option<PathBuf>,
    /// The host `gh` holds the token for: `github.com`, or the Enterprise host of `api_url`.
    pub gh_hostname: String,
    pub app: Option<AppSettings>,
}

/// `[github] app_id`, `installation_id`, `private_key_path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppSettings {
    pub app_id: u64,
    pub installation_id: u64,
    pub private_key_path: PathBuf,
}

impl TokenSources {
    /// The sources `[github]` names: its variables in the process environment, `gh` on PATH, its App.
    pub fn from_config(config: &crate::config::GitHub) -> TokenSources {
        let app = (config.app_id != 0).then(|| AppSettings {
            app_id: config.app_id,
            installation_id: config.installation_id,
            private_key_path: PathBuf::from(&config.private_key_path),
        });
        TokenSources {
            given: None,
            env_names: config.token_env.clone(),
            env: Arc::new(|name| std::env::var(name).ok()),
            gh_program: Some(PathBuf::from("gh")),
            gh_hostname: gh_hostname(&config.api_url),
            app,
        }
    }

    /// Just this token.
    pub fn given(token: impl Into<String>) -> TokenSources {
        TokenSources {
            given: Some(Secret::new(token)),
            env_names: Vec::new(),
            env: Arc::new(|_| None),
            gh_program: None,
            gh_hostname: String::new(),
            app: None,
        }
    }
}

impl fmt::Debug for TokenSources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenSources")
            .field("given", &self.given)
            .field("env_names", &self.env_names)
            .field("gh_program", &self.gh_program)
            .field("gh_hostname", &self.gh_hostname)
            .field("app", &self.app)
            .finish()
    }
}

/// `gh` keys its tokens by the web host: `api.github.com` is `github.com`; an Enterprise
/// `https://HOST/api/v3` is `HOST`. Asking for the configured host also keeps a github.com token from
/// ever being sent to another server (a test's fake GitHub, say).
fn gh_hostname(api_url: &str) -> String {
    let Ok(url) = reqwest::Url::parse(api_url) else {
        return "github.com".into();
    };
    match (url.host_str(), url.port()) {
        (Some("api.github.com"), _) | (None, _) => "github.com".into(),
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.into(),
    }
}

/// A token to send, and where it came from (said in the error when GitHub refuses it).
#[derive(Debug, Clone)]
pub struct Credential {
    pub token: Secret,
    pub origin: String,
}

/// What the App flow needs from the client: its HTTP client, the REST base, the REST counter.
pub(crate) struct AppCall<'a> {
    pub http: &'a reqwest::Client,
    pub api_url: &'a str,
    pub rest_count: &'a AtomicU64,
}

/// The resolved source, with the App's current installation token.
pub(crate) struct Auth {
    sources: TokenSources,
    resolved: Mutex<Option<Resolved>>,
}

enum Resolved {
    Fixed(Credential),
    App(Box<AppAuth>),
}

struct AppAuth {
    settings: AppSettings,
    key: RsaKeyPair,
    current: Option<(Secret, DateTime<Utc>)>,
}

/// An installation token is used until this long before its `expires_at` (GitHub gives an hour).
const RENEW_BEFORE_EXPIRY: TimeDelta = TimeDelta::minutes(5);
const GH_TIMEOUT: Duration = Duration::from_secs(10);

impl Auth {
    pub fn new(sources: TokenSources) -> Auth {
        Auth { sources, resolved: Mutex::new(None) }
    }

    /// The token for the next request: resolves the source on first use, and renews an App token
    /// that is about to expire.
    pub async fn credential(&self, call: &AppCall<'_>) -> Result<Credential, GitHubError> {
        let mut resolved = self.resolved.lock().await;
        if resolved.is_none() {
            *resolved = Some(self.resolve().await?);
        }
        match resolved.as_mut() {
            Some(Resolved::Fixed(credential)) => Ok(credential.clone()),
            Some(Resolved::App(app)) => app.token(call).await,
            None => Err(GitHubError::Auth("no token source resolved".into())),
        }
    }

    /// GitHub refused the token (401): an App token is dropped so that the next call mints a new one.
    pub async fn refused(&self) {
        if let Some(Resolved::App(app)) = self.resolved.lock().await.as_mut() {
            app.current = None;
        }
    }

    async fn resolve(&self) -> Result<Resolved, GitHubError> {
        let s = &self.sources;
        if let Some(token) = &s.given {
            return Ok(Resolved::Fixed(Credential {
                token: token.clone(),
                origin: "the token given to executor".into(),
            }));
        }
        for name in &s.env_names {
            if let Some(token) = (s.env)(name).map(|t| t.trim().to_string()).filter(|t| !t.is_empty()) {
                let origin = format!("the environment variable {name}");
                return Ok(Resolved::Fixed(Credential { token: Secret(token), origin }));
            }
        }
        if let Some(program) = &s.gh_program
            && let Some(token) = gh_token(program, &s.gh_hostname).await
        {
            let origin = format!("`gh auth token --hostname {}`", s.gh_hostname);
            return Ok(Resolved::Fixed(Credential { token: Secret(token), origin }));
        }
        if let Some(app) = &s.app {
            let key = load_key(&app.private_key_path).await?;
            return Ok(Resolved::App(Box::new(AppAuth { settings: app.clone(), key, current: None })));
        }
        Err(GitHubError::Auth(format!(
            "no GitHub token found: none of the environment variables {} is set, `gh auth token` gave none \
             (run `gh auth login`), and no GitHub App is configured ([github] app_id, private_key_path, \
             installation_id)",
            if s.env_names.is_empty() { "(none configured)".to_string() } else { s.env_names.join(", ") }
        )))
    }
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Auth").field("sources", &self.sources).field("token", &"<redacted>").finish()
    }
}

/// `gh auth token`, or `None` when `gh` is absent, fails, hangs or prints nothing.
async fn gh_token(program: &Path, hostname: &str) -> Option<String> {
    let mut command = tokio::process::Command::new(program);
    command
        .args(["auth", "token", "--hostname", hostname])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(GH_TIMEOUT, command.output()).await.ok()?.ok()?;
    if !output.status.success() {
        return None;
    }
    let token = String::from_utf8(output.stdout).ok()?.trim().to_string();
    (!token.is_empty()).then_some(token)
}

impl AppAuth {
    async fn token(&mut self, call: &AppCall<'_>) -> Result<Credential, GitHubError> {
        let now = Utc::now();
        let origin =
            format!("GitHub App {} (installation {})", self.settings.app_id, self.settings.installation_id);
        if let Some((token, expires_at)) = &self.current
            && *expires_at - RENEW_BEFORE_EXPIRY > now
        {
            return Ok(Credential { token: token.clone(), origin });
        }
        let jwt = app_jwt(&self.key, self.settings.app_id, now)?;
        let (token, expires_at) = installation_token(call, &jwt, &self.settings).await?;
        self.current = Some((token.clone(), expires_at));
        Ok(Credential { token, origin })
    }
}

/// Reads the App's PEM private key: PKCS#1 (`BEGIN RSA PRIVATE KEY`, what GitHub hands out) or PKCS#8
/// (`BEGIN PRIVATE KEY`).
async fn load_key(path: &Path) -> Result<RsaKeyPair, GitHubError> {
    let pem = tokio::fs::read_to_string(path).await.map_err(|e| {
        GitHubError::Auth(format!(
            "cannot read the GitHub App private key {} ([github] private_key_path): {e}",
            path.display()
        ))
    })?;
    parse_pem_key(&pem)
        .map_err(|why| GitHubError::Auth(format!("the GitHub App private key {}: {why}", path.display())))
}

pub(crate) fn parse_pem_key(pem: &str) -> Result<RsaKeyPair, String> {
    let (label, der) = pem_body(pem)?;
    let key = match label.as_str() {
        "RSA PRIVATE KEY" => RsaKeyPair::from_der(&der),
        "PRIVATE KEY" => RsaKeyPair::from_pkcs8(&der),
        other => return Err(format!("a PEM \"{other}\" is not an RSA private key")),
    };
    key.map_err(|e| format!("not a usable RSA key ({e})"))
}

/// The label and decoded bytes of the first PEM block.
fn pem_body(pem: &str) -> Result<(String, Vec<u8>), String> {
    let mut lines = pem.lines().map(str::trim).skip_while(|l| !l.starts_with("-----BEGIN "));
    let label = lines
        .next()
        .and_then(|l| l.strip_prefix("-----BEGIN "))
        .and_then(|l| l.strip_suffix("-----"))
        .ok_or("no \"-----BEGIN\" line: not a PEM file")?
        .to_string();
    let end = format!("-----END {label}-----");
    let mut body = String::new();
    for line in lines.by_ref() {
        if line == end {
            return STANDARD.decode(&body).map(|der| (label, der)).map_err(|e| format!("bad base64 ({e})"));
        }
        body.push_str(line);
    }
    Err(format!("no \"{end}\" line"))
}

/// The JWT that authenticates as the App: RS256, issued a minute in the past (GitHub's advice against
/// clock drift), valid for nine more minutes (GitHub allows ten).
pub(crate) fn app_jwt(key: &RsaKeyPair, app_id: u64, now: DateTime<Utc>) -> Result<String, GitHubError> {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","typ":"JWT"}"#);
    let claims = serde_json::json!({
        "iat": now.timestamp() - 60,
        "exp": now.timestamp() + 540,
        "iss": app_id.to_string(),
    });
    let signing_input = format!("{header}.{}", URL_SAFE_NO_PAD.encode(claims.to_string()));
    let mut signature = vec![0; key.public().modulus_len()];
    key.sign(&RSA_PKCS1_SHA256, &SystemRandom::new(), signing_input.as_bytes(), &mut signature)
        .map_err(|_| GitHubError::Auth("cannot sign the GitHub App JWT with the private key".into()))?;
    Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature)))
}

/// `POST /app/installations/{id}/access_tokens` → the installation token and its expiry.
async fn installation_token(
    call: &AppCall<'_>,
    jwt: &str,
    app: &AppSettings,
) -> Result<(Secret, DateTime<Utc>), GitHubError> {
    let path = format!("/app/installations/{}/access_tokens", app.installation_id);
    let mut authorization = reqwest::header::HeaderValue::from_str(&format!("Bearer {jwt}"))
        .map_err(|_| GitHubError::Auth("the GitHub App JWT is not a valid header value".into()))?;
    authorization.set_sensitive(true);
    call.rest_count.fetch_add(1, Ordering::Relaxed);
    let response = call
        .http
        .post(format!("{}{path}", call.api_url))
        .header(reqwest::header::ACCEPT, "application/vnd.github+json")
        .header("X-GitHub-Api-Version", "2022-11-28")
        .header(reqwest::header::AUTHORIZATION, authorization)
        .send()
        .await
        .map_err(GitHubError::from_reqwest)?;
    let status = response.status();
    tracing::debug!(method = "POST", path, status = status.as_u16(), "GitHub App installation token");
    let body = response.text().await.map_err(GitHubError::from_reqwest)?;
    if !status.is_success() {
        return Err(GitHubError::Auth(format!(
            "GitHub refused GitHub App {}'s request for an installation {} token (HTTP {}: {}); check [github] \
             app_id, installation_id and private_key_path",
            app.app_id,
            app.installation_id,
            status.as_u16(),
            github_message(&body)
        )));
    }
    #[derive(serde::Deserialize)]
    struct Answer {
        token: String,
        expires_at: DateTime<Utc>,
    }
    let answer: Answer = serde_json::from_str(&body)
        // serde's message could quote the token: say only what was missing.
        .map_err(|_| {
            GitHubError::Malformed("the installation token answer lacks `token` or `expires_at`".into())
        })?;
    Ok((Secret(answer.token), answer.expires_at))
}

#[cfg(test)]
mod tests;
