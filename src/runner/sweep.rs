//! Each host removes its own worktrees of runs that ended or went on to another host.
//!
//! A run's worktree lives on the host whose worker used it last, and only that host can remove it:
//! the host that ends a run may be another (its path is in another clone), and a run taken over by
//! another host leaves its old worktree behind. So every runner looks, when it starts and then about
//! once a minute, at the worktrees under its own `workspace.root` and removes those whose run
//! - ended (complete or abandoned) — when nothing would be lost ([`workspace::remove_if_safe`]); or
//! - went on elsewhere (its recorded worktree is another) — what is left here is superseded: the
//!   other host continued from the branch as pushed ([`workspace::remove_superseded`]).
//!
//! A run held by a runner of this host is left alone: that runner may be making or using the worktree
//! right now (its recorded path is written when the worker starts).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::state::Runner;
use crate::domain::{Actor, Run, RunState};
use crate::store::EventFilter;
use crate::workspace::{self, HostWorktree, Removal};

/// How often a long-lived runner looks; a runner started by cron looks when it starts.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// What becomes of one of this host's worktrees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Keep,
    /// The run ended: removed when nothing would be lost.
    RemoveIfSafe,
    /// The run went on in another worktree: removed.
    Superseded,
}

/// Decides from the run as the database has it now. `held_here`: a runner of this host holds its lease.
fn fate(worktree: &Path, run: &Run, held_here: bool) -> Fate {
    if held_here {
        return Fate::Keep;
    }
    if matches!(run.state, RunState::Complete | RunState::Abandoned) {
        return Fate::RemoveIfSafe;
    }
    match run.worktree_path.as_deref() {
        Some(recorded) if Path::new(recorded) != worktree => Fate::Superseded,
        // Its worktree still (a worker may come back to it), or none recorded yet (a worker of this
        // host is about to start in it).
        _ => Fate::Keep,
    }
}

impl Runner {
    /// Looks when it is time (at the first tick, then every [`SWEEP_EVERY`]).
    pub(super) async fn sweep_worktrees_when_due(&mut self) {
        if self.swept_at.is_some_and(|at| at.elapsed() < SWEEP_EVERY) {
            return;
        }
        self.swept_at = Some(tokio::time::Instant::now());
        let root = self.config.worktrees_root();
        let config = self.config.clone();
        for (name, repo) in &config.repos {
            let repo_path = crate::config::expand_home(&repo.path);
            let (rp, r) = (repo_path.clone(), root.clone());
            let listed = tokio::task::spawn_blocking(move || workspace::host_worktrees(&rp, &r)).await;
            let listed = match listed.map_err(|e| e.to_string()).and_then(|l| l.map_err(|e| e.to_string())) {
                Ok(listed) => listed,
                Err(e) => {
                    tracing::warn!("listing the worktrees of repo {name}: {e}");
                    continue;
                }
            };
            for wt in listed {
                if let Err(e) = self.sweep_one(name, &repo_path, wt).await {
                    tracing::warn!("looking at a worktree of repo {name}: {e}");
                }
            }
        }
    }

    async fn sweep_one(
        &mut self,
        repo_name: &str,
        repo_path: &Path,
        wt: HostWorktree,
    ) -> Result<(), crate::store::StoreError> {
        let Some(run) = self.store.find_run(wt.run_id).await? else { return Ok(()) };
        if run.repo.as_deref().is_some_and(|r| r != repo_name) {
            return Ok(());
        }
        let held_here = run
            .lease_owner
            .as_deref()
            .is_some_and(|owner| owner.split_once('/').is_some_and(|(host, _)| host == self.host))
            && run.lease_expires_at.is_some_and(|at| at > chrono::Utc::now());
        let fate = fate(&wt.path, &run, held_here);
        if fate == Fate::Keep || self.kept_worktrees.contains(&wt.path) {
            return Ok(());
        }
        let (repo, path) = (repo_path.to_path_buf(), wt.path.clone());
        let branch = wt.branch.as_deref().and_then(|b| b.strip_prefix("refs/heads/")).map(str::to_string);
        let outcome = tokio::task::spawn_blocking(move || match (fate, branch) {
            (Fate::RemoveIfSafe, Some(branch)) => {
                workspace::remove_if_safe(&repo, &workspace::Worktree { path, branch, reused: true })
            }
            (Fate::RemoveIfSafe, None) => {
                Ok(Removal::Kept { reason: "HEAD is detached; its commits may be on no branch".into() })
            }
            _ => workspace::remove_superseded(&repo, &path),
        })
        .await;
        let kept = match outcome {
            Ok(Ok(Removal::Removed)) => {
                let why = if fate == Fate::Superseded { "went on elsewhere" } else { "ended" };
                tracing::info!(run = run.id, "removed worktree {} of a run that {why}", wt.path.display());
                return Ok(());
            }
            Ok(Ok(Removal::AlreadyGone)) => return Ok(()),
            Ok(Ok(Removal::Kept { reason })) => reason,
            Ok(Err(e)) => e.to_string(),
            Err(e) => e.to_string(),
        };
        self.keep_said_once(&run, wt.path, &kept).await;
        Ok(())
    }

    /// A worktree that must stay is said once in the run's history, not by every runner cron starts.
    async fn keep_said_once(&mut self, run: &Run, path: PathBuf, reason: &str) {
        let note = format!("worktree {} kept: {reason}", path.display());
        let filter = EventFilter { run_id: Some(run.id), ..Default::default() };
        let said = self
            .store
            .events(&filter)
            .await
            .is_ok_and(|events| events.iter().any(|e| e.reason.as_deref() == Some(note.as_str())));
        if !said {
            tracing::info!(run = run.id, "{note}");
            let _ = self.store.record_note(Actor::Runner, Some(&run.task_gid), Some(run.id), &note).await;
        }
        self.kept_worktrees.insert(path);
    }
}

#[cfg(test)]
mod tests;
