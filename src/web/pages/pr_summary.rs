//! What the board and the run page say of a pull request as the runner last observed it: its state, CI
//! at its head in plain words, the unresolved trusted comments (counted by the forge's own rule,
//! `PrSnapshot::unresolved_trusted_comments`, never re-implemented here), and its diff stat.

use serde::Serialize;

use super::ago;
use crate::config::Trust;
use crate::domain::RunState;
use crate::forge::{CiRollup, PrSnapshot, PrState};
use crate::store::now;
use crate::web::AppState;

/// A pull request as last observed, in words.
#[derive(Serialize)]
pub(super) struct PrSummary {
    pub state: &'static str,
    /// `passing`, `failing`, `pending`, `error` (CI could not run) or `no checks`.
    pub ci: &'static str,
    pub unresolved: usize,
    pub head: String,
    /// "5m ago".
    pub observed: String,
    /// The observation's time, for a tooltip (RFC 3339).
    pub observed_at: String,
    /// "3 files, +120 −4"; `None` when the forge did not say.
    pub diff: Option<String>,
}

/// `run_state` is the run's: a run abandoned after its pull request was last seen open (`executor runs
/// abandon`, which closes a local one) does not claim it is still open.
pub(super) fn pr_summary(pr: &PrSnapshot, trust: &Trust, run_state: RunState) -> PrSummary {
    let abandoned = run_state == RunState::Abandoned;
    PrSummary {
        state: match pr.state {
            PrState::Open if abandoned => "last seen open (run abandoned)",
            PrState::Open if pr.draft => "open (draft)",
            PrState::Open => "open",
            PrState::Merged => "merged",
            PrState::Closed => "closed",
        },
        ci: ci_word(pr.ci()),
        unresolved: pr.unresolved_trusted_comments(trust).len(),
        head: pr.head_sha.chars().take(10).collect(),
        observed: ago(pr.observed_at, now()),
        observed_at: pr.observed_at.to_rfc3339(),
        diff: pr.diff.map(|d| {
            let files = if d.files == 1 { "1 file".to_string() } else { format!("{} files", d.files) };
            format!("{files}, +{} −{}", d.additions, d.deletions)
        }),
    }
}

/// CI at the head in the words a person scans for.
pub(super) fn ci_word(ci: CiRollup) -> &'static str {
    match ci {
        CiRollup::None => "no checks",
        CiRollup::Pending => "pending",
        CiRollup::Error => "error",
        CiRollup::Failure => "failing",
        CiRollup::Success => "passing",
    }
}

/// Whose comments count on a run's repository: its own `[repos.NAME]`, or the only one configured.
pub(super) fn trust_for(state: &AppState, repo: Option<&str>) -> Trust {
    let repos = &state.config.repos;
    let found = match repo {
        Some(name) => repos.get(name),
        None if repos.len() == 1 => repos.values().next(),
        None => None,
    };
    found.map(|r| r.trust()).unwrap_or(Trust { authors: Vec::new(), associations: Vec::new() })
}
