//! What every handler gets.

use std::sync::Arc;

use crate::config::Config;
use crate::github::GitHubClient;
use crate::store::Store;

#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub config: Arc<Config>,
    /// The dashboard token: required (with a same-origin request) for every state change, and for
    /// every request when bound beyond loopback. Never logged.
    pub token: Arc<String>,
    /// Bound to a loopback address: reads need no token.
    pub loopback: bool,
    /// When a repository or source uses GitHub: for `/metrics`' rate limit left (`GET /rate_limit`, which
    /// GitHub does not count against the limit).
    pub github: Option<Arc<GitHubClient>>,
}
