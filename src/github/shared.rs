//! Rate-limit blocks shared by every process calling GitHub with the same token: the runner, `executor
//! comment` run by agents, `intake`, `serve`. A `retry-after` one process was told is honoured by the
//! others, and by the next runner cron starts. Where the blocks are kept is the caller's (this module
//! imports nothing but `config`): the forge keeps them in the database.

use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;

/// No request until `until`, for the reason GitHub gave.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SharedBlock {
    pub until: DateTime<Utc>,
    pub why: String,
}

/// Where blocks are read before each request and written when GitHub answers with one. A failure to
/// read or write is the keeper's to log: GitHub itself still refuses what it must.
pub trait SharedBlocks: Send + Sync {
    /// The block in force (one whose `until` is past may be returned; it is ignored).
    fn read(&self) -> BoxFuture<'_, Option<SharedBlock>>;
    /// Records a block; a later one wins over an earlier one.
    fn write(&self, block: SharedBlock) -> BoxFuture<'_, ()>;
}
