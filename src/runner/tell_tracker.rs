//! Telling the task's tracker (write-back): the runner records a message for each event its source
//! writes back — the pull request opened, the run completed, the run abandoned — before the step that
//! makes the event true, and delivers what is due once a tick through the outbox (`crate::writeback`).
//! A tracker's failure never fails the tick or holds a run back: a passing one is retried with a
//! back-off, a refusal is told to the human once per source and run.

use super::decision::{Notice, NoticeKind};
use super::state::{Runner, RunnerError};
use crate::domain::{Run, TaskGid, WritebackEvent};
use crate::forge::PrRef;
use crate::writeback::message;

impl Runner {
    /// Records the messages a step owes the tracker: `pr` recorded (the pull request opened), or
    /// `notice` a completion, an abandonment, a plan to approve or a worker's question. Before the step
    /// that makes it true, so a crash loses none; each once per run and key.
    pub(super) async fn record_writebacks(
        &self,
        run: &Run,
        pr: Option<&PrRef>,
        notice: Option<&Notice>,
    ) -> Result<(), RunnerError> {
        let mut events = Vec::new();
        let words = self.config.words_for(run.repo.as_deref());
        if let Some(pr) = pr {
            let branch = run.branch_name.as_deref().unwrap_or("?");
            events.push((
                WritebackEvent::PrOpened,
                "pr_opened".to_string(),
                message::pr_opened(words, &pr.url, branch),
            ));
        }
        match notice {
            Some(n) if n.kind == NoticeKind::Completed => {
                let url = pr.map(|p| p.url.as_str()).or(run.pr_url.as_deref());
                events.push((
                    WritebackEvent::Complete,
                    n.key.clone(),
                    message::complete(words, url, &n.text),
                ));
            }
            Some(n) if n.kind == NoticeKind::Abandoned => {
                let text = message::abandoned(run.task_gid.as_str(), &n.text, run.branch_name.as_deref());
                events.push((WritebackEvent::Abandoned, n.key.clone(), text));
            }
            Some(n) if n.kind == NoticeKind::Plan => {
                let plan = self.store.latest_plan(run.id).await?.map(|p| p.body).unwrap_or_default();
                events.push((WritebackEvent::Plan, n.key.clone(), message::plan(&plan, &n.text)));
            }
            Some(n) if n.kind == NoticeKind::Question => {
                events.push((WritebackEvent::Question, n.key.clone(), n.text.clone()));
            }
            _ => {}
        }
        if events.is_empty() {
            return Ok(());
        }
        let task = self.store.task(&run.task_gid).await?;
        for (event, key, text) in events {
            let key = format!("run:{}:{key}", run.id);
            let recorded = self
                .outbox
                .record(run.task_gid.as_str(), task.source.as_deref(), Some(run.id), event, &key, &text)
                .await?;
            if recorded {
                tracing::info!(run = run.id, task = %run.task_gid, "write-back recorded: {event}");
            }
        }
        Ok(())
    }

    /// Records that the run's pull request was merged (when the source asks), before the observation
    /// that shows it is recorded: once per run, however many ticks see it.
    pub(super) async fn record_merged(&self, run: &Run, url: &str) -> Result<(), RunnerError> {
        let task = self.store.task(&run.task_gid).await?;
        if self.outbox.source_for(task.source.as_deref(), WritebackEvent::Merged).is_none() {
            return Ok(());
        }
        let key = format!("run:{}:merged", run.id);
        let text = message::merged(self.config.words_for(run.repo.as_deref()), url);
        self.outbox
            .record(
                run.task_gid.as_str(),
                task.source.as_deref(),
                Some(run.id),
                WritebackEvent::Merged,
                &key,
                &text,
            )
            .await?;
        Ok(())
    }

    /// Records, for a task approved and about to get a run, that a human approved it — when its source
    /// writes `approved` back. Keyed by the number of runs the task had, so a retry's approval is told
    /// again and a replayed tick is not.
    pub(super) async fn record_approval(&self, gid: &TaskGid) -> Result<(), RunnerError> {
        let task = self.store.task(gid).await?;
        if self.outbox.source_for(task.source.as_deref(), WritebackEvent::Approved).is_none() {
            return Ok(());
        }
        let filter = crate::store::RunFilter { task_gid: Some(gid.clone()), ..Default::default() };
        let runs = self.store.list_runs(&filter).await?.len();
        let key = format!("approved:{runs}");
        self.outbox
            .record(
                gid.as_str(),
                task.source.as_deref(),
                None,
                WritebackEvent::Approved,
                &key,
                &message::approved(),
            )
            .await?;
        Ok(())
    }

    /// Delivers the write-backs that are due. Passing failures are logged (and retried later); a
    /// message settled undelivered is told to the human once per source and run.
    pub(super) async fn send_writebacks(&self) -> Result<(), RunnerError> {
        let report = self.outbox.deliver_due().await?;
        for r in report.refused {
            let Some(run_id) = r.writeback.run_id else {
                tracing::warn!(task = %r.writeback.task_gid, "{}", r.text);
                continue;
            };
            let run = self.store.run(run_id).await?;
            let notice = Notice { kind: NoticeKind::NeedsHuman, key: r.notice_key, text: r.text };
            self.notify(&run, &notice).await?;
        }
        Ok(())
    }
}
