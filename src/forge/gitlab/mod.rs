//! The GitLab forge: one configured project on GitLab (gitlab.com, a self-managed instance, or a fake
//! in the tests). A merge request is the runner's "pull request": its iid is the run's `pr_number`.
//!
//! Observing ([`observe`]) is one GraphQL request per `gitlab.batch_size` merge requests, guarded by a
//! REST listing of the merge requests updated since the last one: a merge request that did not change
//! is answered from the last observation, unless its pipeline is still running or a required job has
//! not shown up yet (a pipeline finishing does not change a merge request's `updated_at`). Writing
//! ([`writes`]) is the runner's: the branch, the draft merge request, labels, pipelines, notes and
//! discussion replies, the self-review. Every note executor posts is recorded by id, so "written by an
//! agent" never depends on a username.
//!
//! Architecture invariant: nothing here decides. A snapshot is whole or an error.

mod memory;
mod observe;
mod pages;
mod wire;
mod writes;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{ForgeError, PrSnapshot};
use crate::config::Repo;
use crate::gitlab::GitLabClient;
use crate::store::Store;

pub use observe::MERGE_REQUESTS;

/// One project on GitLab.
pub struct GitLabForge {
    client: Arc<GitLabClient>,
    store: Store,
    repo_name: String,
    repo: Repo,
    /// `group/sub/project`, checked by the config.
    project: String,
    /// `[gitlab] url`, for links to jobs and for the push's credentials (sent to that host only).
    base_url: String,
    /// Merge requests per batch query: `[gitlab] batch_size`, lowered for the forge's life when GitLab
    /// refuses a batch as too complex.
    batch_size: std::sync::atomic::AtomicUsize,
    check_grace: std::time::Duration,
    /// How long a write whose answer was lost may still be carried out by GitLab (`request_timeout`):
    /// it is looked for after that, before it is tried again.
    landing_time: std::time::Duration,
    /// The last observation of each merge request, by iid.
    cache: Mutex<HashMap<i64, Observed>>,
    /// The newest change of the last listing whose announcements were all observed: the next listing
    /// starts a second before it.
    listed: Mutex<Listing>,
    /// `workspace.root`: a run's worktree path read from the database is merged into only under it.
    worktrees_root: Option<std::path::PathBuf>,
    /// Whether what an earlier process kept (see `memory.rs`) was read.
    memory_loaded: tokio::sync::OnceCell<()>,
    /// Notes by untrusted authors already logged as ignored (once per note id).
    ignored: Mutex<std::collections::HashSet<String>>,
}

/// A merge request as last observed, with what it takes to write to it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Observed {
    snapshot: PrSnapshot,
    /// `updated_at` as GitLab last said it (the listing's, taken before the observation, else the
    /// observation's own): a listing that shows another changed since.
    updated_at: String,
    /// The merge request's title (marking it ready removes its `Draft:` prefix).
    title: String,
    /// Every note's discussion (a reply goes into it), by note id.
    discussion_of: HashMap<String, String>,
    /// The discussions GitLab lets be resolved, by id.
    resolvable: std::collections::HashSet<String>,
    /// The diff's commits, for notes on a line of the diff.
    diff_refs: Option<wire::DiffRefs>,
    /// The head pipeline's id, when it ran at the head (`ci_trigger = "retry"` retries it).
    head_pipeline: Option<i64>,
}

/// What the last listing that was followed through said: its newest change.
#[derive(Debug, Default)]
struct Listing {
    newest: Option<chrono::DateTime<chrono::Utc>>,
}

impl GitLabForge {
    /// The forge of `repos.NAME` (whose `gitlab` is the project's full path, checked by the config).
    pub fn new(
        client: Arc<GitLabClient>,
        store: Store,
        repo_name: &str,
        repo: &Repo,
        config: &crate::config::GitLab,
    ) -> Result<GitLabForge, ForgeError> {
        if !crate::config::valid_project_path(&repo.gitlab) {
            return Err(ForgeError::Config(format!(
                "repos.{repo_name}.gitlab must be the project's full path (\"group/project\") for forge = \"gitlab\""
            )));
        }
        Ok(GitLabForge {
            client,
            store,
            repo_name: repo_name.to_string(),
            repo: repo.clone(),
            project: repo.gitlab.clone(),
            base_url: config.url.trim_end_matches('/').to_string(),
            batch_size: usize::try_from(config.batch_size).unwrap_or(25).clamp(1, 100).into(),
            check_grace: config.check_grace.std(),
            landing_time: config.request_timeout.std(),
            cache: Mutex::new(HashMap::new()),
            listed: Mutex::new(Listing::default()),
            ignored: Mutex::new(std::collections::HashSet::new()),
            worktrees_root: None,
            memory_loaded: tokio::sync::OnceCell::new(),
        })
    }

    pub fn check_grace(&self) -> std::time::Duration {
        self.check_grace
    }

    pub fn landing_time(&self) -> std::time::Duration {
        self.landing_time
    }

    pub fn client(&self) -> &GitLabClient {
        &self.client
    }

    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// `/projects/group%2Fproject`: the REST prefix of this project.
    fn project_path(&self) -> String {
        format!("/projects/{}", crate::gitlab::segment(&self.project))
    }

    fn cached(&self, iid: i64) -> Option<Observed> {
        self.cache.lock().ok().and_then(|c| c.get(&iid).cloned())
    }

    /// Drops the last observation of merge request `iid`: the next one asks GitLab again.
    pub fn forget_observation(&self, iid: i64) {
        if let Ok(mut cache) = self.cache.lock() {
            cache.remove(&iid);
        }
    }

    /// Logs once per note that an untrusted author's note is ignored: it never reaches a prompt.
    fn note_ignored(&self, pr: &PrSnapshot) {
        let trust = self.repo.trust();
        let Ok(mut ignored) = self.ignored.lock() else { return };
        for c in pr.comments.iter().filter(|c| !c.by_agent && !c.is_by_trusted_human(&trust)) {
            if ignored.insert(c.id.clone()) {
                tracing::info!(
                    repo = %self.repo_name,
                    "ignoring note {} by {} on merge request !{}: not a trusted author (repos.{}.trusted_authors)",
                    c.id, c.author, pr.number, self.repo_name
                );
            }
        }
    }

    /// Keeps in memory only the merge requests in `watched` (the runner's, this tick); of those let go,
    /// the ones last seen merged or closed are forgotten in the database too.
    pub async fn keep_only(&self, watched: &std::collections::HashSet<i64>) -> Result<(), ForgeError> {
        self.load_memory().await?;
        let finished: Vec<i64> = match self.cache.lock() {
            Ok(mut cache) => {
                let finished = cache
                    .iter()
                    .filter(|(iid, o)| !watched.contains(iid) && o.snapshot.state != super::PrState::Open)
                    .map(|(iid, _)| *iid)
                    .collect();
                cache.retain(|iid, _| watched.contains(iid));
                finished
            }
            Err(_) => Vec::new(),
        };
        self.forget_finished(&finished).await
    }
}
