//! A human's approval, the one path for `executor approve` and the dashboard: a task awaiting a decision
//! becomes approved, or an approved task's pending revision becomes its text.

use crate::domain::{Actor, QueueStatus, Task, TaskGid};
use crate::store::{Result, Store, StoreError};

/// What an approval did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Approved {
    /// The task as it is now.
    pub task: Task,
    /// `true` when the task was already approved and its pending revision was accepted instead.
    pub revision_approved: bool,
}

impl Store {
    /// Approves a task (for_review or awaiting_go → approved), or accepts the pending revision of an
    /// approved one. A pending task is approved only with `skip_triage` (recorded as pending →
    /// awaiting_go → approved). A done task, a pending one without `skip_triage`, or any illegal move
    /// is refused with the reason and nothing is written.
    pub async fn approve_task(&self, gid: &TaskGid, skip_triage: bool, actor: Actor) -> Result<Approved> {
        let task = self.task(gid).await?;
        if task.status == QueueStatus::Approved && task.revision_at.is_some() {
            let task = self.accept_task_revision(gid, actor).await?;
            return Ok(Approved { task, revision_approved: true });
        }
        match task.status {
            QueueStatus::Done => {
                return Err(StoreError::Refused(format!(
                    "it is done; if its completed pull request was closed unmerged (the run is then \
                     abandoned), `executor queue retry {gid}` works it again"
                )));
            }
            QueueStatus::Pending if !skip_triage => {
                return Err(StoreError::Refused(
                    "it is still pending: the analyzer triages it first, or approve it anyway with \
                     --skip-triage"
                        .into(),
                ));
            }
            QueueStatus::Pending => {
                self.set_task_status(gid, QueueStatus::AwaitingGo, actor, Some("triage skipped by a human"))
                    .await?;
            }
            _ => {}
        }
        let task =
            self.set_task_status(gid, QueueStatus::Approved, actor, Some("approved by a human")).await?;
        Ok(Approved { task, revision_approved: false })
    }
}
