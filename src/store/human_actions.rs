//! A human's moves that take more than one write, as one operation each, so the CLI and the dashboard
//! make them the same way with the same events: giving up a run (`executor runs abandon`) and sending a
//! task back for analysis (`executor queue requeue`).

use super::{Result, Store, StoreError};
use crate::domain::{By, QueueStatus, Run, RunState, Task, TaskGid};

/// The history's reason for `retry_task` when the human gives none (CLI and dashboard alike).
pub const RETRY_REASON: &str = "retried by a human after its run was abandoned";

/// The history's reason for `requeue_task` when the human gives none.
pub const REQUEUE_REASON: &str = "requeued for re-analysis";

/// What a requeue did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Requeued {
    pub task: Task,
    /// The status it had: `skip` (now pending), or `pending` (its given-up analysis starts afresh).
    pub from: QueueStatus,
}

impl Store {
    /// A human gives up run `id` (queued, in_progress, pr or complete): it becomes abandoned — a runner
    /// stops its worker at its next tick — and its local pull request, if open, is closed. The task
    /// stays approved with this run recorded (`retry_task` gives it a new one). The event's reason is
    /// "abandoned by a human: {reason}".
    pub async fn abandon_run(&self, id: i64, by: impl Into<By<'_>>, reason: &str) -> Result<Run> {
        let run = self.run(id).await?;
        let why = human_abandon_reason(reason);
        let run = self.set_run_state_if(id, run.state, RunState::Abandoned, None, by, &why).await?;
        if let Some(pr) = self.local_pr_for_run(id).await?
            && pr.state == "open"
        {
            self.set_local_pr_state(pr.id, "closed", pr.draft).await?;
        }
        Ok(run)
    }

    /// Sends a skipped task back to pending for the analyzer (one analysis round up, its skip cleared),
    /// or has a pending task whose analysis was given up on tried afresh — the move `executor reanalyze`
    /// makes in bulk. Refused, saying why, for any other task.
    pub async fn requeue_task(&self, gid: &TaskGid, by: impl Into<By<'_>>, reason: &str) -> Result<Requeued> {
        let before = self.task(gid).await?;
        if self.send_back_for_analysis(std::slice::from_ref(gid), by, reason).await? == 0 {
            before.status.check(QueueStatus::Pending)?;
            return Err(StoreError::Refused(match before.status {
                QueueStatus::Pending => {
                    format!("{gid} is pending and its analysis has not failed: the analyzer will take it")
                }
                status => format!("{gid} is {status} and was not sent back (it changed meanwhile?)"),
            }));
        }
        Ok(Requeued { task: self.task(gid).await?, from: before.status })
    }
}

/// What a run abandoned by a human records as its reason (and its tracker is told).
pub fn human_abandon_reason(reason: &str) -> String {
    format!("abandoned by a human: {reason}")
}
