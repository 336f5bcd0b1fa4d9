//! Which host holds a run's branch, on forges where the runner pushes: the host whose worker last ran
//! since the last push. Its clone has the commits; another host's clone lacks them (`src refspec … does
//! not match any`) or has an older copy (`rejected`). Only the holder pushes. Another host lets the run
//! go for the holder's runner to take, and when the holder was lost (or has had no runner for
//! `runner.lease_ttl`) the commits it never pushed are given up with the human told: the run continues
//! from the branch as last pushed.

use chrono::{DateTime, Utc};

use super::decision::{Notice, NoticeKind};
use super::state::{Runner, RunnerError};
use crate::domain::{Actor, EndReason, Run, WorkerKind};
use crate::forge::Forge;
use crate::store::{RunMemory, WorkerSession};

/// Where the commits of a run's last workers are, as far as pushing goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum BranchHold<'a> {
    /// No worker ran since the last push: nothing to push.
    Pushed,
    /// The newest worker since the last push ran on this host.
    Here(&'a WorkerSession),
    /// It ran on another host, whose clone has its commits.
    Elsewhere(&'a WorkerSession),
}

/// The newest worker that may have moved the branch (it had a process, and it is not a review) and
/// ended after `pushed_at` decides who holds the branch.
pub(super) fn branch_hold<'a>(
    sessions: &'a [WorkerSession],
    pushed_at: Option<DateTime<Utc>>,
    host: &str,
) -> BranchHold<'a> {
    let newest = sessions
        .iter()
        // A review never moves the branch, and a worker that never started committed nothing.
        .filter(|s| s.pid.is_some() && s.kind != WorkerKind::PrReview)
        .filter(|s| s.ended_at.is_some_and(|end| pushed_at.is_none_or(|pushed| end > pushed)))
        .max_by_key(|s| (s.ended_at, s.id));
    match newest {
        None => BranchHold::Pushed,
        Some(s) if s.host == host => BranchHold::Here(s),
        Some(s) => BranchHold::Elsewhere(s),
    }
}

/// What [`Runner::settle_branch`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Settled {
    /// Nothing stands in the way of deciding on this tick's view.
    Proceed,
    /// The branch was pushed: the forge shows the new head next tick.
    Pushed,
    /// Another host holds the branch: the run was let go for its runner to push.
    LetGo,
}

impl Runner {
    /// Before any decision on a forge where the runner pushes: pushes the branch when this host holds
    /// unpushed commits of a run with a pull request (a run without one is pushed when it is opened),
    /// and never pushes a branch another host's worker moved last.
    pub(super) async fn settle_branch(
        &self,
        run: &Run,
        forge: &Forge,
        memory: &RunMemory,
        sessions: &[WorkerSession],
    ) -> Result<Settled, RunnerError> {
        let Some(branch) = run.branch_name.as_deref().filter(|_| forge.pushes_branches()) else {
            return Ok(Settled::Proceed);
        };
        match branch_hold(sessions, memory.pushed_at, &self.host) {
            BranchHold::Pushed => Ok(Settled::Proceed),
            BranchHold::Here(_) if run.pr_number.is_none() => Ok(Settled::Proceed),
            BranchHold::Here(last) => self.push_here(run, forge, memory, last, branch).await,
            BranchHold::Elsewhere(last) => self.held_elsewhere(run, memory, last, branch).await,
        }
    }

    async fn push_here(
        &self,
        run: &Run,
        forge: &Forge,
        memory: &RunMemory,
        last: &WorkerSession,
        branch: &str,
    ) -> Result<Settled, RunnerError> {
        // Taken before the push: a worker that ends while it runs is pushed again next tick.
        let at = Utc::now();
        self.check_lease(run).await?;
        if let Err(e) = forge.push(run).await {
            let failed = RunnerError::from(e);
            // The engine records a failed step as the run's decision: the same failure on the tick
            // before will not go away by itself.
            if memory.last_decision.as_deref() == Some(failed.as_decision().as_str()) {
                let text = format!(
                    "Run {} (task {}): pushing branch {branch} failed twice in a row: {failed}. The {} worker's \
                     commits stay in host {}'s clone until it can push.",
                    run.id, run.task_gid, last.kind, self.host
                );
                let key = format!("push_failed:{}", last.id);
                self.notify(run, &Notice { kind: NoticeKind::NeedsHuman, key, text }).await?;
            }
            return Err(failed);
        }
        let last_end = last.ended_at.unwrap_or(at);
        self.store.set_pushed_at(run.id, Some(&self.owner), at.max(last_end)).await?;
        tracing::info!(run = run.id, "pushed branch {branch}");
        Ok(Settled::Pushed)
    }

    /// Another host's worker moved the branch last. While that host may push (a runner of it is alive,
    /// or was within `lease_ttl`), the run is let go for it; once it was lost, its unpushed commits are
    /// given up, the human is told, and this host goes on from the branch as last pushed.
    async fn held_elsewhere(
        &self,
        run: &Run,
        memory: &RunMemory,
        last: &WorkerSession,
        branch: &str,
    ) -> Result<Settled, RunnerError> {
        let ttl = self.config.runner.lease_ttl.std();
        let lost = last.end_reason == Some(EndReason::HostLost)
            || self.store.host_absent_for(&last.host, ttl).await?;
        if !lost {
            let why = format!(
                "the {} worker's commits on branch {branch} are in host {}'s clone: its runner pushes them; host {} lets the run go",
                last.kind, last.host, self.host
            );
            if memory.last_decision.as_deref() != Some(why.as_str()) {
                self.store.record_decision(run.id, Some(&self.owner), &why).await?;
            }
            self.store.release_run(run.id, &self.owner).await?;
            return Ok(Settled::LetGo);
        }
        let from = if run.pr_number.is_some() { "the branch as last pushed" } else { "the base branch" };
        let text = format!(
            "Run {} (task {}): the {} worker (session {}) ran on host {}, which was lost before pushing branch \
             {branch}: whatever it committed is only in host {}'s clone. Host {} continues from {from}.",
            run.id, run.task_gid, last.kind, last.id, last.host, last.host, self.host
        );
        let key = format!("unpushed_lost:{}", last.id);
        self.notify(run, &Notice { kind: NoticeKind::NeedsHuman, key, text: text.clone() }).await?;
        self.store.record_note(Actor::Runner, Some(&run.task_gid), Some(run.id), &text).await?;
        // Those commits are out of reach: no host pushes them now.
        let given_up = last.ended_at.unwrap_or_else(Utc::now);
        self.store.set_pushed_at(run.id, Some(&self.owner), given_up).await?;
        Ok(Settled::Proceed)
    }
}

#[cfg(test)]
mod tests;
