//! The demo's running commentary: what the runner and its workers did, told as it happens, read from
//! the database the way `runs show` reads it (workers, CI, comments, notices, state changes).

use std::collections::HashSet;

use chrono::{DateTime, Utc};

use crate::domain::{RunState, TaskGid, WorkerKind};
use crate::store::{EventFilter, Store, StoreError};

/// What has been told already, so each thing is told once.
#[derive(Default)]
pub struct Narrator {
    started: HashSet<i64>,
    ended: HashSet<i64>,
    checks: HashSet<i64>,
    comments: HashSet<i64>,
    notices: HashSet<i64>,
    events: HashSet<i64>,
    waiting: Option<String>,
}

impl Narrator {
    /// Tells what happened to the task's run since the last call, in the order it happened.
    pub async fn catch_up(&mut self, store: &Store, gid: &TaskGid) -> Result<(), StoreError> {
        let Some(run_id) = store.task(gid).await?.executor_run_id else { return Ok(()) };
        let mut told: Vec<(DateTime<Utc>, String)> = Vec::new();
        for e in store.events(&EventFilter { task_gid: Some(gid.clone()), ..Default::default() }).await? {
            if e.run_id == Some(run_id) && e.kind == "run_state" && self.events.insert(e.id) {
                let (from, to) = (e.from_state.unwrap_or_default(), e.to_state.unwrap_or_default());
                told.push((
                    e.at,
                    format!("run #{run_id}: {from} → {to}  ({})", e.reason.unwrap_or_default()),
                ));
            }
        }
        for w in store.worker_sessions(run_id).await? {
            if self.started.insert(w.id) {
                told.push((w.started_at, format!("▶ {} worker started: {}", w.kind, why(w.kind))));
            }
            if let (Some(reason), Some(at)) = (w.end_reason, w.ended_at)
                && self.ended.insert(w.id)
            {
                let verdict = w.verdict.map(|v| format!(", review verdict: {v}")).unwrap_or_default();
                told.push((at, format!("■ {} worker ended: {reason}{verdict}", w.kind)));
            }
        }
        if let Some(pr) = store.local_pr_for_run(run_id).await? {
            for c in store.local_checks(pr.id).await? {
                if let Some(at) = c.finished_at
                    && self.checks.insert(c.id)
                {
                    let sha: String = c.sha.chars().take(7).collect();
                    let tail = c.output_tail.as_deref().unwrap_or("").lines().last().unwrap_or("").trim();
                    let mark = if c.status == "success" { "✓" } else { "✗" };
                    told.push((at, format!("{mark} CI {} at {sha}: {tail}", c.status)));
                }
            }
            for c in store.local_comments(pr.id).await? {
                if self.comments.insert(c.id) {
                    let body = c.body.split_whitespace().collect::<Vec<_>>().join(" ");
                    told.push((c.created_at, format!("💬 {}: {body:?}", c.author)));
                }
            }
        }
        for n in store.notices(Some(run_id)).await? {
            if self.notices.insert(n.id) {
                told.push((n.created_at, format!("@ notice ({}) sent to the human", n.kind)));
            }
        }
        // Waiting is told once per head, after what led to it.
        let decision = store.run_memory(run_id).await?.last_decision.unwrap_or_default();
        let waiting = store.run(run_id).await?.state == RunState::Pr && decision.starts_with("CI is running");
        told.sort_by_key(|(at, _)| *at);
        for (_, line) in told {
            say!("  {line}");
        }
        if waiting && self.waiting.as_ref() != Some(&decision) {
            say!("  … {decision}");
            self.waiting = Some(decision);
        }
        Ok(())
    }
}

/// Why the runner starts a worker of this kind (the pure decision's reason, in a few words).
fn why(kind: WorkerKind) -> &'static str {
    match kind {
        WorkerKind::Queued => "a new run: implement the task and commit",
        WorkerKind::InProgress => "the work is not finished: continue it",
        WorkerKind::FixCi => "CI failed at the head: fix it",
        WorkerKind::FixComments => "a trusted reviewer's comment is unresolved: answer it",
        WorkerKind::PrReview => "CI is green and nothing is unresolved: review the head",
        WorkerKind::FixConflicts => "the pull request conflicts with its base: merge it",
        WorkerKind::Plan => "the task needs an approved plan: write one, reading only",
    }
}
