//! `[web.github_login]`: "Sign in with GitHub" on the dashboard, for the people `executor users add NAME
//! --github LOGIN` links to a GitHub account. A GitHub OAuth app's client id; its secret is read from
//! the environment when serving starts, never from this file.

use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitHubLogin {
    /// The OAuth app's client id (github.com → Settings → Developer settings → OAuth Apps).
    pub client_id: String,
    /// The variable holding the OAuth app's client secret.
    #[serde(default = "default_secret_env")]
    pub client_secret_env: String,
    /// GitHub's web address, where people authorize the app (GitHub Enterprise Server: its own).
    #[serde(default = "default_url")]
    pub url: String,
}

fn default_secret_env() -> String {
    "EXECUTOR_GITHUB_CLIENT_SECRET".into()
}

fn default_url() -> String {
    "https://github.com".into()
}

impl GitHubLogin {
    /// Why these values cannot be used, naming the key.
    pub(super) fn invalid(&self) -> Option<(&'static str, &'static str)> {
        if self.client_id.trim().is_empty() {
            return Some(("web.github_login.client_id", "is the OAuth app's client id and cannot be empty"));
        }
        if !(self.url.starts_with("https://") || self.url.starts_with("http://")) {
            return Some(("web.github_login.url", "must be an http:// or https:// address"));
        }
        None
    }
}
