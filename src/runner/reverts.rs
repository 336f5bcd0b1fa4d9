//! Looking for merged pull requests reverted on their base branch (issue 34 item 5's revert rate).
//!
//! About every [`CHECK_EVERY`], a runner takes up to [`RUNS_PER_CHECK`] runs merged within
//! `insights.revert_window_days` and not yet found reverted (paging on through them at the next look),
//! brings each repository's base branch up to date once — a GitHub repository's from its remote, where
//! people merge and revert; the local forge's base is the repository's own branch — and reads its
//! history with git ([`workspace::find_revert`]). A revert found is recorded once, with a note in the
//! run's history. The repository is the configured one, never a path from the database.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;

use super::state::{Runner, RunnerError, TickReport};
use crate::config::Repo;
use crate::domain::Actor;
use crate::workspace::{self, MergedPr};

/// How often a runner looks: reverts are rare and a figure, not a step any run waits on.
const CHECK_EVERY: Duration = Duration::from_secs(600);

/// The most runs looked at in one go: each is a few git processes.
const RUNS_PER_CHECK: i64 = 20;

impl Runner {
    /// Looks for reverts when it is time (at the first tick, then every [`CHECK_EVERY`]).
    pub(super) async fn check_reverts_when_due(&mut self, report: &mut TickReport) {
        let after_id = match self.reverts_looked {
            Some((at, _)) if at.elapsed() < CHECK_EVERY => return,
            Some((_, after_id)) => after_id,
            None => 0,
        };
        let next = match self.check_reverts(after_id).await {
            Ok(next) => next,
            Err(e) => {
                report.failed(format!("looking for reverted pull requests: {e}"));
                after_id
            }
        };
        self.reverts_looked = Some((Instant::now(), next));
    }

    /// Looks at the next runs after `after_id`; returns where the next look starts (0: from the first).
    async fn check_reverts(&self, after_id: i64) -> Result<i64, RunnerError> {
        let window = self.config.insights.revert_window();
        let since = chrono::Utc::now() - window;
        let runs = self.store.merged_runs_not_reverted(since, after_id, RUNS_PER_CHECK).await?;
        let next = match runs.last() {
            Some(last) if runs.len() as i64 == RUNS_PER_CHECK => last.run_id,
            _ => 0,
        };
        // Each repository's base, brought up to date once per look (`None`: not readable this time).
        let mut bases: BTreeMap<String, Option<String>> = BTreeMap::new();
        for run in runs {
            let Ok((name, repo)) = self.config.repo_for(run.repo.as_deref(), &format!("run {}", run.run_id))
            else {
                continue; // a repository no longer configured: nothing to read
            };
            if !bases.contains_key(name) {
                bases.insert(name.to_string(), current_base(name, repo).await);
            }
            let Some(base) = bases[name].clone() else { continue };
            let path = crate::config::expand_home(&repo.path);
            let github = (repo.forge == "github" && !repo.github.is_empty()).then(|| repo.github.clone());
            let (head, branch) = (run.head_sha.clone(), run.branch_name.clone());
            let (number, started_at, merged_at) = (run.pr_number, run.started_at, run.merged_at);
            let b = base.clone();
            let found = tokio::task::spawn_blocking(move || {
                let pr = MergedPr {
                    head: head.as_deref(),
                    branch: branch.as_deref(),
                    github: github.as_deref().zip(number),
                    started_at,
                    merged_at,
                    window,
                };
                workspace::find_revert(&path, &b, &pr)
            })
            .await?;
            let revert = match found {
                Ok(Some(revert)) => revert,
                Ok(None) => continue,
                Err(e) => {
                    tracing::warn!(run = run.run_id, "looking for a revert in repo {name}: {e}");
                    continue;
                }
            };
            if self.store.set_reverted(run.run_id, &revert.sha).await? {
                let note = format!(
                    "its merged {} was reverted on {base} by commit {}",
                    repo.words().noun,
                    revert.sha
                );
                tracing::info!(run = run.run_id, "{note}");
                self.store.record_note(Actor::Runner, Some(&run.task_gid), Some(run.run_id), &note).await?;
            }
        }
        Ok(next)
    }
}

/// The base branch of repository `name` as it is now, by the name git reads it by: a GitHub
/// repository's fetched from its remote; the local forge's own branch. `None` (and a warning) when the
/// fetch fails: the next look tries again.
async fn current_base(name: &str, repo: &Repo) -> Option<String> {
    if repo.forge != "github" {
        return Some(repo.base.clone());
    }
    let (path, remote, base) =
        (crate::config::expand_home(&repo.path), repo.remote.clone(), repo.base.clone());
    match tokio::task::spawn_blocking(move || workspace::fetch_base(&path, &remote, &base)).await {
        Ok(Ok(read_as)) => Some(read_as),
        Ok(Err(e)) => {
            tracing::warn!("fetching the base branch of repo {name}: {e}");
            None
        }
        Err(e) => {
            tracing::warn!("fetching the base branch of repo {name}: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests;
