//! A human's go on a task: the one path `executor approve` and the dashboard share, so both refuse and
//! record exactly the same way.

use super::{Result, Store, StoreError};
use crate::domain::{By, QueueStatus, Task, TaskGid};

/// What an approval did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Approval {
    pub task: Task,
    /// The task was approved already and its pending revision became its text.
    pub revision_approved: bool,
}

impl Approval {
    /// One element of `executor approve --json` (and of the API's answers): `{"gid", "ok": true,
    /// "revision_approved", "task"}`.
    pub fn result_json(&self) -> serde_json::Value {
        serde_json::json!({
            "gid": self.task.task_gid, "ok": true, "revision_approved": self.revision_approved, "task": self.task
        })
    }
}

impl Store {
    /// Approves a task (awaiting_go or for_review → approved), or accepts the pending revision of an
    /// approved one. A pending task is approved only with `skip_triage`, recorded as pending →
    /// awaiting_go → approved. Anything else is refused, saying why and what to do instead.
    pub async fn approve_task(
        &self,
        gid: &TaskGid,
        skip_triage: bool,
        by: impl Into<By<'_>>,
    ) -> Result<Approval> {
        let by = by.into();
        let task = self.task(gid).await?;
        if task.status == QueueStatus::Approved && task.revision_at.is_some() {
            let task = self.accept_task_revision(gid, by).await?;
            return Ok(Approval { task, revision_approved: true });
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
                self.set_task_status(gid, QueueStatus::AwaitingGo, by, Some("triage skipped by a human"))
                    .await?;
            }
            _ => {}
        }
        let task = self.set_task_status(gid, QueueStatus::Approved, by, Some("approved by a human")).await?;
        Ok(Approval { task, revision_approved: false })
    }
}
