//! Pull requests and CI. A forge (GitHub, or the offline local forge) is observed through one
//! forge-neutral type, [`PrSnapshot`], so the runner's decision logic never knows which forge it drives.

pub mod github;
pub mod gitlab;
mod job_logs;
pub mod local;
mod open;
mod replies;
mod reviews;
mod snapshot;

pub use local::{ForgeError, LocalForge};
pub use open::shared_client;
pub use replies::{AGENT_AUTHOR, Delivery, carries_executor_marker, deliver_reply, may_still_land};
pub use reviews::{ReviewDelivery, deliver_review, latest_review, marked, review_marker};
pub use snapshot::{
    ACK_PREFIX, Check, CheckStatus, ChecksAwaited, CiRollup, Comment, DiffStat, Mergeable, PrRef, PrSnapshot,
    PrState,
};

use std::collections::HashMap;

use crate::domain::{CiTrigger, Run, Task};
/// A `pr_review` worker's result, as pages show it.
pub use crate::worker::result::{Finding, ReviewResult, Verdict};

/// A comment executor posts on a pull request: its own notice, or an agent's reply.
#[derive(Debug, Clone, Copy, Default)]
pub struct CommentPost<'a> {
    pub body: &'a str,
    /// The comment this one answers (a forge id).
    pub reply_to: Option<&'a str>,
    /// Local forge: who is commenting (GitHub: whoever the token belongs to).
    pub author: &'a str,
    /// An agent's (or executor's) comment: it never makes a worker act.
    pub by_agent: bool,
    pub path: Option<&'a str>,
    pub line: Option<i64>,
}

/// One repository's pull requests as observed this tick.
#[derive(Debug, Clone, Default)]
pub struct Snapshots {
    /// By run id: the run's pull request, `None` for a run without one.
    pub prs: HashMap<i64, Option<PrSnapshot>>,
    /// By run id: a pull request the forge answered with an error while the others' answers were whole.
    /// Nothing is decided for such a run; the others go on.
    pub unobserved: HashMap<i64, Unobserved>,
}

/// A pull request that could not be observed, since when (across processes) and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Unobserved {
    pub number: i64,
    pub since: chrono::DateTime<chrono::Utc>,
    pub why: String,
}

impl Snapshots {
    /// Run `run_id`'s pull request, or the error that kept it from being observed.
    pub fn take(&mut self, run_id: i64) -> Result<Option<PrSnapshot>, ForgeError> {
        if let Some(u) = self.unobserved.remove(&run_id) {
            return Err(ForgeError::Unobserved { number: u.number, why: u.why });
        }
        Ok(self.prs.remove(&run_id).flatten())
    }
}

/// The forge one repository uses. The runner calls these operations and nothing forge-specific; the
/// GitHub forge joins as another variant.
pub enum Forge {
    Local(LocalForge),
    GitHub(github::GitHubForge),
    GitLab(gitlab::GitLabForge),
}

impl Forge {
    /// `local`, `github` or `gitlab`: who opens pull requests and where agents reply.
    pub fn name(&self) -> &'static str {
        match self {
            Forge::Local(_) => "local",
            Forge::GitHub(_) => "github",
            Forge::GitLab(_) => "gitlab",
        }
    }

    /// How long a new head may show no check before CI is triggered: the local forge runs CI only when
    /// asked, so at once.
    pub fn check_grace(&self) -> std::time::Duration {
        match self {
            Forge::Local(_) => std::time::Duration::ZERO,
            Forge::GitHub(f) => f.check_grace(),
            Forge::GitLab(f) => f.check_grace(),
        }
    }

    pub async fn snapshot(&self, run: &Run) -> Result<Option<PrSnapshot>, ForgeError> {
        self.snapshots(std::slice::from_ref(run)).await?.take(run.id)
    }

    /// [`Forge::snapshot`] asked of the forge now, never answered from what was kept: for deciding
    /// whether a write whose answer was lost (a 502 after the comment went through) needs doing again.
    pub async fn snapshot_asked_again(&self, run: &Run) -> Result<Option<PrSnapshot>, ForgeError> {
        let mut pr = match self {
            Forge::Local(f) => f.snapshot(run).await?,
            Forge::GitHub(f) => f.snapshot_asked_again(run).await?,
            Forge::GitLab(f) => f.snapshot_asked_again(run).await?,
        };
        self.mark_dashboard_comments(pr.iter_mut().map(|p| (run.id, p))).await?;
        Ok(pr)
    }

    /// [`Forge::snapshot`] for a command an agent runs (`executor comment`), whose output the agent
    /// reads: GitHub's log of the strangers' comments it ignores is left out, so that a stranger's login
    /// never reaches an agent.
    pub async fn snapshot_for_agent(&self, run: &Run) -> Result<Option<PrSnapshot>, ForgeError> {
        let mut pr = match self {
            Forge::Local(f) => f.snapshot(run).await?,
            Forge::GitHub(f) => f.snapshots_unlogged(std::slice::from_ref(run)).await?.take(run.id)?,
            Forge::GitLab(f) => f.snapshots_unlogged(std::slice::from_ref(run)).await?.take(run.id)?,
        };
        self.mark_dashboard_comments(pr.iter_mut().map(|p| (run.id, p))).await?;
        Ok(pr)
    }

    /// The pull requests of these runs (all of one repository), by run id: observed together, so that
    /// GitHub is asked once per `github.batch_size` pull requests. A run without a pull request maps to
    /// `None`. An error means nothing of the repository could be trusted this tick; a pull request
    /// answered with an error of its own is in [`Snapshots::unobserved`].
    pub async fn snapshots(&self, runs: &[Run]) -> Result<Snapshots, ForgeError> {
        let mut all = match self {
            Forge::Local(f) => {
                let mut all = Snapshots::default();
                for run in runs {
                    all.prs.insert(run.id, f.snapshot(run).await?);
                }
                all
            }
            // Marks the dashboard's comments itself, before it logs the strangers' it ignores.
            Forge::GitHub(f) => return f.snapshots(runs).await,
            Forge::GitLab(f) => f.snapshots(runs).await?,
        };
        let observed = all.prs.iter_mut().filter_map(|(id, pr)| pr.as_mut().map(|pr| (*id, pr)));
        self.mark_dashboard_comments(observed).await?;
        Ok(all)
    }

    /// Marks, in these views of the runs' pull requests, the comments people posted from the dashboard
    /// as theirs and trusted, by what the database says now (a view kept from an earlier observation
    /// may predate the record).
    async fn mark_dashboard_comments<'a>(
        &self,
        observed: impl Iterator<Item = (i64, &'a mut PrSnapshot)>,
    ) -> Result<(), ForgeError> {
        let observed: Vec<(i64, &mut PrSnapshot)> = observed.collect();
        let run_ids: Vec<i64> = observed.iter().map(|(id, _)| *id).collect();
        let people = self.store().person_comments(&run_ids).await?;
        if people.is_empty() {
            return Ok(());
        }
        for (_, pr) in observed {
            pr.mark_dashboard_comments(&people);
        }
        Ok(())
    }

    fn store(&self) -> &crate::store::Store {
        match self {
            Forge::Local(f) => &f.store,
            Forge::GitHub(f) => f.store(),
            Forge::GitLab(f) => f.store(),
        }
    }

    /// Opens a draft pull request for the run's branch (pushing it first where the forge is remote),
    /// titled and described from the task. Idempotent: an existing one is returned. `closes`: the
    /// GitHub issue the task is (`owner/name#N`), which the description says it closes, so GitHub links
    /// the two and closes the issue when the pull request merges.
    pub async fn open_pr(&self, run: &Run, task: &Task, closes: Option<&str>) -> Result<PrRef, ForgeError> {
        match self {
            Forge::Local(f) => {
                let _ = (task, closes); // a local pull request is the branch and a row: nothing to describe
                f.open_pr(run).await
            }
            Forge::GitHub(f) => f.open_pr(run, task, closes).await,
            Forge::GitLab(f) => f.open_pr(run, task, closes).await,
        }
    }

    /// Whether workers' commits reach the forge only when the runner pushes them (GitHub); on the local
    /// forge the branch is the pull request.
    pub fn pushes_branches(&self) -> bool {
        match self {
            Forge::Local(_) => false,
            Forge::GitHub(_) | Forge::GitLab(_) => true,
        }
    }

    /// Pushes the run's branch to the forge (agents only commit).
    pub async fn push(&self, run: &Run) -> Result<(), ForgeError> {
        match self {
            Forge::Local(_) => {
                let _ = run;
                Ok(())
            }
            Forge::GitHub(f) => f.push(run).await,
            Forge::GitLab(f) => f.push(run).await,
        }
    }

    /// Posts a `pr_review` worker's findings on the pull request as executor's (an agent's) comments:
    /// on GitHub one review with a comment per finding on its line. Every part ends with `marker`
    /// ([`review_marker`]); the runner posts through [`deliver_review`], which looks for it first.
    pub async fn post_review(
        &self,
        run: &Run,
        pr: &PrSnapshot,
        review: &ReviewResult,
        marker: &str,
    ) -> Result<(), ForgeError> {
        match self {
            Forge::Local(f) => f.post_review(run, pr, review, marker).await,
            Forge::GitHub(f) => f.post_review(run, pr, review, marker).await,
            Forge::GitLab(f) => f.post_review(run, pr, review, marker).await,
        }
    }

    /// Keeps in memory only what concerns the pull requests of `runs` (those the runner watches this
    /// tick): see [`github::GitHubForge::keep_only`].
    pub async fn keep_only(&self, runs: &[Run]) -> Result<(), ForgeError> {
        match self {
            Forge::Local(_) => Ok(()), // keeps nothing: observed from the database every time
            Forge::GitHub(f) => f.keep_only(&runs.iter().filter_map(|r| r.pr_number).collect()).await,
            Forge::GitLab(f) => f.keep_only(&runs.iter().filter_map(|r| r.pr_number).collect()).await,
        }
    }

    /// How long after a write was sent the forge may still carry it out, its answer lost (GitHub:
    /// `request_timeout`); the local forge writes in the database at once.
    pub fn landing_time(&self) -> std::time::Duration {
        match self {
            Forge::Local(_) => std::time::Duration::ZERO,
            Forge::GitHub(f) => f.landing_time(),
            Forge::GitLab(f) => f.landing_time(),
        }
    }

    /// Drops what the forge remembers of pull request `number`, so that the next observation asks
    /// again: comments just recorded as executor's must not be seen as a human's from an old answer.
    pub fn forget_observation(&self, number: i64) {
        match self {
            Forge::Local(_) => {} // observed from the database every time
            Forge::GitHub(f) => f.forget_observation(number),
            Forge::GitLab(f) => f.forget_observation(number),
        }
    }

    /// The end of the logs of the head's failed checks, by check name, where the forge can fetch them
    /// (GitHub Actions jobs). The local forge's checks carry their output already.
    pub async fn failed_check_logs(&self, pr: &PrSnapshot) -> Result<HashMap<String, String>, ForgeError> {
        match self {
            Forge::Local(_) => {
                let _ = pr;
                Ok(HashMap::new())
            }
            Forge::GitHub(f) => f.failed_check_logs(pr).await,
            Forge::GitLab(f) => f.failed_check_logs(pr).await,
        }
    }

    /// Takes a completed run's draft pull request out of draft (`repos.NAME.mark_ready`).
    pub async fn mark_ready(&self, run: &Run, pr: &PrSnapshot) -> Result<(), ForgeError> {
        match self {
            Forge::Local(f) => f.mark_ready(run, pr).await,
            Forge::GitHub(f) => f.mark_ready(run, pr).await,
            Forge::GitLab(f) => f.mark_ready(run, pr).await,
        }
    }

    pub async fn add_labels(&self, run: &Run, labels: &[String]) -> Result<(), ForgeError> {
        match self {
            Forge::Local(f) => f.add_labels(run, labels).await,
            Forge::GitHub(f) => f.add_labels(run, labels).await,
            Forge::GitLab(f) => f.add_labels(run, labels).await,
        }
    }

    pub async fn trigger_ci(&self, run: &Run, sha: &str) -> Result<CiTrigger, ForgeError> {
        match self {
            Forge::Local(f) => f.trigger_ci(run, sha).await.map(|_| CiTrigger::LocalCi),
            Forge::GitHub(f) => f.trigger_ci(run, sha).await,
            Forge::GitLab(f) => f.trigger_ci(run, sha).await,
        }
    }

    /// Posts a comment on the run's pull request, replying to `c.reply_to` when given; returns its id.
    /// Comments by executor or an agent (`c.by_agent`) are recorded as such.
    pub async fn comment(&self, run: &Run, c: &CommentPost<'_>) -> Result<String, ForgeError> {
        match self {
            Forge::Local(f) => f.comment(run, c).await.map(|id| id.to_string()),
            Forge::GitHub(f) => f.comment(run, c).await,
            Forge::GitLab(f) => f.comment(run, c).await,
        }
    }

    /// Brings background CI results in (local forge); a no-op where the forge runs CI itself.
    pub async fn poll_ci(&self) -> Result<usize, ForgeError> {
        match self {
            Forge::Local(f) => f.poll_ci().await,
            Forge::GitHub(_) | Forge::GitLab(_) => Ok(0),
        }
    }
}

/// How a review reads on a pull request: the verdict, the summary, and the findings that have no line.
pub(crate) fn review_summary(review: &ReviewResult) -> String {
    let verdict = match review.verdict {
        crate::worker::result::Verdict::Pass => "passed",
        crate::worker::result::Verdict::Fail => "failed",
    };
    let mut text = format!("executor's review {verdict}.\n\n{}", review.summary);
    for f in review.findings.iter().filter(|f| f.path.is_none()) {
        text.push_str(&format!("\n\n- {}", f.body));
    }
    text
}
