//! What every handler gets.

use std::sync::Arc;

use super::session::Keys;
use crate::config::Config;
use crate::github::GitHubClient;
use crate::redact::Redactor;
use crate::store::{Store, StoreError};

#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub config: Arc<Config>,
    /// The dashboard token: a login (`?token=` or `POST /login`) or `Authorization: Bearer` for every
    /// request. Never logged, never in a page.
    pub token: Arc<String>,
    /// The session, CSRF and flash keys derived from the token.
    pub keys: Arc<Keys>,
    /// When a repository or source uses GitHub: for `/metrics`' rate limit left (`GET /rate_limit`, which
    /// GitHub does not count against the limit).
    pub github: Option<Arc<GitHubClient>>,
    /// The config's secrets and the dashboard token, replaced in every answer.
    pub redactor: Redactor,
    /// The secret GitHub signs webhook deliveries with, read once from `github.webhook_secret_env`
    /// when serving starts; `None` (unset or empty): every delivery is refused.
    pub webhook_secret: Option<Arc<String>>,
    /// The secret token GitLab sends with webhook deliveries, read once from `gitlab.webhook_secret_env`;
    /// `None`: every GitLab delivery is refused.
    pub gitlab_webhook_secret: Option<Arc<String>>,
    /// The GitHub OAuth app's client secret for "Sign in with GitHub" (`[web.github_login]`), read once
    /// from its `client_secret_env`; `None`: signing in with GitHub is off.
    pub github_login_secret: Option<Arc<String>>,
}

impl AppState {
    pub fn new(
        store: Store,
        config: Arc<Config>,
        token: String,
        github: Option<Arc<GitHubClient>>,
    ) -> AppState {
        let keys = Arc::new(Keys::new(&token));
        let redactor = super::redaction::answer_redactor(&config, &token);
        let secret = |env: &str| std::env::var(env).ok().filter(|s| !s.is_empty()).map(Arc::new);
        let webhook_secret = secret(&config.github.webhook_secret_env);
        let gitlab_webhook_secret = secret(&config.gitlab.webhook_secret_env);
        let github_login_secret = config
            .web
            .github_login
            .as_ref()
            .and_then(|g| std::env::var(&g.client_secret_env).ok())
            .filter(|s| !s.is_empty())
            .map(Arc::new);
        AppState {
            store,
            config,
            token: Arc::new(token),
            keys,
            github,
            redactor,
            webhook_secret,
            gitlab_webhook_secret,
            github_login_secret,
        }
    }

    /// A human's skip from the dashboard, as `executor skip` makes it: the message the task's tracker
    /// is owed (when its source writes `skipped` back) recorded first, then the skip.
    pub async fn human_skip(
        &self,
        gid: &crate::domain::TaskGid,
        reason: &str,
        by: crate::domain::By<'_>,
    ) -> Result<crate::domain::Task, StoreError> {
        self.outbox().record_human_skip(&self.store.task(gid).await?, reason).await?;
        self.store.set_task_status(gid, crate::domain::QueueStatus::Skip, by, Some(reason)).await
    }

    /// A human abandoning a run from the dashboard, as `executor runs abandon` does: the tracker's
    /// message recorded first, then the run abandoned.
    pub async fn human_abandon(
        &self,
        id: i64,
        reason: &str,
        by: crate::domain::By<'_>,
    ) -> Result<crate::domain::Run, StoreError> {
        let why = crate::store::human_abandon_reason(reason);
        self.outbox().record_human_abandon(&self.store.run(id).await?, &why).await?;
        self.store.abandon_run(id, by, reason).await
    }

    fn outbox(&self) -> crate::writeback::Outbox {
        crate::writeback::Outbox::new(self.config.clone(), self.store.clone(), None)
    }
}
