//! The GitHub forge: one configured repository on GitHub (or GitHub Enterprise, or a fake in the tests).
//!
//! Observing is batched ([`batch`]): one GraphQL request per `github.batch_size` pull requests per tick,
//! guarded by a conditional REST request that costs nothing when no pull request changed. Writing
//! is the runner's: it pushes branches, opens draft pull requests, adds labels, triggers CI, posts
//! notices, agents' replies and reviews ([`writes`]). Every comment executor posts is recorded by id, so
//! "written by an agent" never depends on a login or on text anyone could type.
//!
//! Architecture invariant: nothing here decides. A snapshot is either whole or an error: a partial
//! GraphQL answer, a 5xx or a timeout fails the repository's observation, and the runner then does
//! nothing for it this tick.

mod batch;
mod memory;
pub(crate) mod recorded;
mod usage;
pub mod wire;
pub(crate) mod writes;

pub use batch::{batch_document, batch_document_for};
pub use wire::AgentComments;

use crate::github::{GitHubClient, GitHubError};

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

use super::{ForgeError, PrSnapshot, PrState, Unobserved};
use crate::config::Repo;
use crate::store::Store;

/// One repository on GitHub.
pub struct GitHubForge {
    client: Arc<GitHubClient>,
    store: Store,
    repo_name: String,
    repo: Repo,
    owner: String,
    name: String,
    batch_size: usize,
    check_grace: std::time::Duration,
    /// How long a write whose answer was lost (`request_timeout`) may still be carried out by GitHub: it
    /// is looked for after that, before the write is tried again. `request_timeout` itself.
    landing_time: std::time::Duration,
    /// What the last observations returned, by pull request number: answers again for pull requests
    /// GitHub says did not change.
    cache: Mutex<HashMap<i64, Observed>>,
    /// Comments by untrusted authors already logged as ignored (once per comment id), by pull request.
    ignored: Mutex<HashMap<i64, HashSet<String>>>,
    /// The newest `updated_at` of the last listing of pull requests: every pull request changed since
    /// is newer, so a page that reaches back past it lists them all.
    listed_up_to: Mutex<Option<DateTime<Utc>>>,
    /// The last listing's `updated_at` by pull request: what a 304 says is still current. An
    /// observation that differs from it was taken before that listing (by a process that kept it late,
    /// say) and is asked again rather than trusted.
    listed_page: Box<Mutex<HashMap<i64, String>>>,
    /// Pull requests GitHub answered with an error of their own, since when: asked again every tick.
    /// (Boxed, like the flag below, to keep `Forge`'s variants of a size.)
    failing: Box<Mutex<HashMap<i64, Unobserved>>>,
    /// Whether what an earlier process kept (see `memory.rs`) was read.
    memory_loaded: Box<tokio::sync::OnceCell<()>>,
    /// `workspace.root`: a run's worktree path read from the database is used only under it (none:
    /// never used). See `writes.rs`.
    worktrees_root: Box<Option<std::path::PathBuf>>,
}

/// A pull request as last observed, with what it takes to write to it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Observed {
    snapshot: PrSnapshot,
    /// GraphQL node id of the pull request (mutations take it).
    node_id: String,
    /// `updated_at` in the listing of pull requests when it was observed; `None` when it was not listed.
    updated_at: Option<String>,
    /// When the GraphQL request that observed it was sent.
    asked_at: DateTime<Utc>,
}

impl Observed {
    /// Whether `self` says what `other` said (its time of observation aside), so it need not be kept
    /// again. One asked within the second of its last change is kept again once asked after it.
    fn same_as(&self, other: &Observed) -> bool {
        let snapshot = PrSnapshot { observed_at: other.snapshot.observed_at, ..self.snapshot.clone() };
        snapshot == other.snapshot
            && self.node_id == other.node_id
            && self.updated_at == other.updated_at
            && self.after_its_second() == other.after_its_second()
    }

    /// Whether a later change must show in `updated_at` (see [`after_the_second`]).
    fn after_its_second(&self) -> bool {
        after_the_second(self.updated_at.as_deref(), self.asked_at)
    }
}

/// GitHub's `updated_at` counts whole seconds, so a change later in the second of the last change leaves
/// it (and maybe the list's ETag) as it was: an observation asked for within that second may already be
/// out of date, and is asked again. One not listed (or with an unreadable time) has nothing to wait for.
fn after_the_second(updated_at: Option<&str>, asked_at: DateTime<Utc>) -> bool {
    match updated_at.and_then(|at| at.parse::<DateTime<Utc>>().ok()) {
        Some(updated) => asked_at >= updated + chrono::TimeDelta::seconds(1),
        None => true,
    }
}

impl GitHubForge {
    /// The forge of `repos.NAME` (whose `github` is `owner/name`, checked by the config).
    pub fn new(
        client: Arc<GitHubClient>,
        store: Store,
        repo_name: &str,
        repo: &Repo,
        config: &crate::config::GitHub,
    ) -> Result<GitHubForge, ForgeError> {
        let (owner, name) = repo.github_slug().ok_or_else(|| {
            ForgeError::Config(format!(
                "repos.{repo_name}.github must be \"owner/name\" for forge = \"github\""
            ))
        })?;
        Ok(GitHubForge {
            client,
            store,
            repo_name: repo_name.to_string(),
            repo: repo.clone(),
            owner: owner.to_string(),
            name: name.to_string(),
            batch_size: usize::try_from(config.batch_size).unwrap_or(25).clamp(1, 100),
            check_grace: config.check_grace.std(),
            landing_time: config.request_timeout.std(),
            cache: Mutex::new(HashMap::new()),
            ignored: Mutex::new(HashMap::new()),
            listed_up_to: Mutex::new(None),
            listed_page: Box::default(),
            failing: Box::new(Mutex::new(HashMap::new())),
            memory_loaded: Box::new(tokio::sync::OnceCell::new()),
            worktrees_root: Box::default(),
        })
    }

    pub fn check_grace(&self) -> std::time::Duration {
        self.check_grace
    }

    /// `owner/name`.
    pub fn slug(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }

    pub fn client(&self) -> &GitHubClient {
        &self.client
    }

    fn cached(&self, number: i64) -> Option<Observed> {
        self.cache.lock().ok().and_then(|c| c.get(&number).cloned())
    }

    fn remember(&self, number: i64, observed: Observed) {
        if let Ok(mut c) = self.cache.lock() {
            c.insert(number, observed);
        }
    }

    /// Keeps in memory only what concerns the pull requests in `watched` (the runner's, this tick):
    /// a long-lived runner holds the pull requests it drives, not every one it ever drove. Of those
    /// let go, the ones GitHub last showed merged or closed are forgotten in the database too: no run
    /// watches them again, and a runner started later need not read them back.
    pub async fn keep_only(&self, watched: &HashSet<i64>) -> Result<(), ForgeError> {
        // What an earlier process kept is looked at too (once per process): it may be all there is.
        self.load_memory().await?;
        let finished: Vec<i64> = match self.cache.lock() {
            Ok(mut cache) => {
                let finished = cache
                    .iter()
                    .filter(|(n, o)| !watched.contains(n) && o.snapshot.state != PrState::Open)
                    .map(|(n, _)| *n)
                    .collect();
                cache.retain(|n, _| watched.contains(n));
                finished
            }
            Err(_) => Vec::new(),
        };
        if let Ok(mut failing) = self.failing.lock() {
            failing.retain(|n, _| watched.contains(n));
        }
        if let Ok(mut ignored) = self.ignored.lock() {
            ignored.retain(|n, _| watched.contains(n));
        }
        self.forget_finished(&finished).await
    }

    /// Logs once per comment that an untrusted author's comment is ignored: it never reaches a prompt.
    fn note_ignored(&self, pr: &PrSnapshot) {
        let trust = self.repo.trust();
        let Ok(mut ignored) = self.ignored.lock() else { return };
        let ignored = ignored.entry(pr.number).or_default();
        for c in pr.comments.iter().filter(|c| !c.by_agent && !c.is_by_trusted_human(&trust)) {
            if ignored.insert(c.id.clone()) {
                tracing::info!(
                    repo = %self.repo_name,
                    "ignoring comment {} by {} on PR #{}: not a trusted author (repos.{}.trusted_authors / trust_associations)",
                    c.id, c.author, pr.number, self.repo_name
                );
            }
        }
    }
}

/// A REST path segment for a value GitHub gave or the config holds, escaped so it stays one segment.
fn segment(s: &str) -> String {
    s.chars()
        .flat_map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '-' | '_' | '.' | '~' => vec![c.to_string()],
            _ => c.to_string().bytes().map(|b| format!("%{b:02X}")).collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_observation_within_the_second_of_its_last_change_is_asked_again() {
        let at = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        let updated = Some("2026-11-30T14:04:36Z");
        assert!(
            !after_the_second(updated, at("2026-11-30T14:04:36.373Z")),
            "a change later in 14:04:36 keeps it"
        );
        assert!(after_the_second(updated, at("2026-11-30T14:04:37.001Z")));
        assert!(after_the_second(None, at("2026-11-30T14:04:36.373Z")));
    }

    #[test]
    fn segments_are_escaped() {
        assert_eq!(super::segment("ci.yml"), "ci.yml");
        assert_eq!(super::segment("a/b c"), "a%2Fb%20c");
        assert_eq!(super::segment("é"), "%C3%A9");
    }
}
