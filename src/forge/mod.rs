//! Pull requests and CI. A forge (GitHub, or the offline local forge) is observed through one
//! forge-neutral type, [`PrSnapshot`], so the runner's decision logic never knows which forge it drives.

pub mod github;
pub mod local;
mod snapshot;

pub use local::{ForgeError, LocalForge};
pub use snapshot::{
    ACK_PREFIX, Check, CheckStatus, CiRollup, Comment, Mergeable, PrRef, PrSnapshot, PrState, Trust,
};

use crate::domain::Run;
use crate::store::NewComment;

/// The forge one repository uses. The runner calls these operations and nothing forge-specific; the
/// GitHub forge joins as another variant.
pub enum Forge {
    Local(LocalForge),
}

impl Forge {
    /// `local` or `github`: who opens pull requests and where agents reply.
    pub fn name(&self) -> &'static str {
        match self {
            Forge::Local(_) => "local",
        }
    }

    /// The runner opens pull requests itself (the local forge); on GitHub the worker does.
    pub fn runner_opens_prs(&self) -> bool {
        matches!(self, Forge::Local(_))
    }

    pub async fn snapshot(&self, run: &Run) -> Result<Option<PrSnapshot>, ForgeError> {
        match self {
            Forge::Local(f) => f.snapshot(run).await,
        }
    }

    pub async fn open_pr(&self, run: &Run) -> Result<PrRef, ForgeError> {
        match self {
            Forge::Local(f) => f.open_pr(run).await,
        }
    }

    pub async fn add_labels(&self, run: &Run, labels: &[String]) -> Result<(), ForgeError> {
        match self {
            Forge::Local(f) => f.add_labels(run, labels).await,
        }
    }

    pub async fn trigger_ci(&self, run: &Run, sha: &str) -> Result<(), ForgeError> {
        match self {
            Forge::Local(f) => f.trigger_ci(run, sha).await.map(|_| ()),
        }
    }

    /// Posts a comment on the run's pull request; returns its id.
    pub async fn comment(&self, run: &Run, c: &NewComment<'_>) -> Result<String, ForgeError> {
        match self {
            Forge::Local(f) => f.comment(run, c).await.map(|id| id.to_string()),
        }
    }

    /// Brings background CI results in (local forge); a no-op where the forge runs CI itself.
    pub async fn poll_ci(&self) -> Result<usize, ForgeError> {
        match self {
            Forge::Local(f) => f.poll_ci().await,
        }
    }
}
