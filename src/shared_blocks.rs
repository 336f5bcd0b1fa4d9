//! Rate-limit blocks shared by every process calling one API (GitHub's, a GitLab instance's) with the
//! same token: the runner, `executor comment` run by agents, `intake`, `serve`. A `Retry-After` one
//! process was told is honoured by the others, and by the next runner cron starts. Where the blocks are
//! kept is the caller's (this module imports nothing): `Store::shared_blocks` keeps them in the database.

use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;

/// No request until `until`, for the reason the API gave.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SharedBlock {
    pub until: DateTime<Utc>,
    pub why: String,
}

/// Where blocks are read before each request and written when GitHub answers with one. A failure to
/// read or write is the keeper's to log: the API itself still refuses what it must.
pub trait SharedBlocks: Send + Sync {
    /// The block in force (one whose `until` is past may be returned; it is ignored).
    fn read(&self) -> BoxFuture<'_, Option<SharedBlock>>;
    /// Records a block; a later one wins over an earlier one.
    fn write(&self, block: SharedBlock) -> BoxFuture<'_, ()>;
}

/// The scope of the blocks of the GitHub at `api_url`.
pub fn github_scope(api_url: &str) -> String {
    format!("github:{api_url}")
}

/// The scope of the blocks of the GitLab instance at `url` (its limits are per user, whatever the project).
pub fn gitlab_scope(url: &str) -> String {
    format!("gitlab:{}", url.trim_end_matches('/'))
}
