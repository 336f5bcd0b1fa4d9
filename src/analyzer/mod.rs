//! The analyzer: takes tasks in from the sources, skips what the filters name, and has an agent triage
//! the rest into for_review, awaiting_go or skip.
//!
//! One pass ([`Analyzer::run_until_idle`]) loops while pending tasks remain (the seed's correction of
//! its v1 "one task per run"), `analyzer.concurrency` at a time. For each task:
//!
//! 0. first, once per pass and whatever the budget, the filters over every claimable task in pages
//!    ([`sweep`]): a match skips the task with the filter's name recorded, in bulk;
//! 1. claim it ([`Store::claim_for_analysis`]: pending, unclaimed, not backing off, not given up), so
//!    two analyzers never take the same task;
//! 2. the filters again, before any model call (the task may have arrived after the sweep);
//! 3. else the triage ([`triage::Triager`]): the agent reads the task and the code, read-only, and
//!    answers the schema (one retry with the error shown);
//! 4. the result is written in one transaction that holds only if the task is still pending and still
//!    this analyzer's — a human who decided meanwhile wins.
//!
//! Order: new tasks before re-analyzed ones (see [`crate::store`]'s `analysis` module), oldest first.

pub mod fields;
pub mod reanalyze;
pub mod sweep;
pub mod triage;

use std::sync::Arc;

use chrono::Utc;
use tokio::sync::{mpsc::UnboundedSender, watch};
use tokio::task::JoinSet;

use crate::config::Config;
use crate::domain::{QueueStatus, Task, TaskGid};
use crate::filter::Filters;
use crate::store::{Store, StoreError};
use triage::{TriageOutcome, Triager};

/// What happened to one task, as it happens (the CLI prints these).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Progress {
    /// An analysis began; `pending` tasks (including this one) were claimable when it did.
    Started { task_gid: TaskGid, title: String, pending: i64 },
    /// A filter skipped the task.
    Filtered { task_gid: TaskGid, rule: String, why: String },
    /// The agent triaged it.
    Triaged { task_gid: TaskGid, status: QueueStatus, priority: i32, summary: String },
    /// No usable answer; the task stays pending with the error (given up after `analyzer.max_attempts`).
    Failed { task_gid: TaskGid, error: String, attempts: i64, gave_up: bool },
    /// Someone else decided the task while it was analyzed (a human, or an analyzer that took over an
    /// expired claim): this result was dropped.
    Overtaken { task_gid: TaskGid },
}

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Summary {
    pub filtered: u64,
    pub triaged: u64,
    pub failed: u64,
    pub overtaken: u64,
    /// Why the pass stopped before the queue was empty (the daily budget, a stop signal), if it did.
    pub blocked: Option<triage::Blocked>,
}

#[derive(Debug, thiserror::Error)]
pub enum AnalyzerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the filters in the config do not compile: {0}")]
    Filters(#[from] crate::filter::FilterError),
    #[error("{0}")]
    Agent(String),
}

/// Who an analyzer process is, in claims and analysis sessions: `HOST:PID`, so that a later analyzer can
/// tell a dead one's leftovers from a live one's.
pub fn owner(config: &Config) -> String {
    format!("{}:{}", config.host_name(), std::process::id())
}

/// One analyzer process's loop.
#[derive(Clone)]
pub struct Analyzer {
    store: Store,
    config: Arc<Config>,
    filters: Arc<Filters>,
    triager: Triager,
    /// Who holds the claims: `host:pid`, so claims of a dead analyzer are known by their owner too.
    owner: String,
    /// Where a triage's skip is recorded for the task's tracker (when its source asks for it).
    outbox: Arc<crate::writeback::Outbox>,
}

impl Analyzer {
    /// `owner` is [`owner`]'s, the same the triager was given: it holds the claims and names the
    /// analysis sessions.
    pub fn new(
        config: Arc<Config>,
        store: Store,
        triager: Triager,
        owner: String,
    ) -> Result<Self, AnalyzerError> {
        let filters = Arc::new(config.compiled_filters()?);
        let outbox = Arc::new(crate::writeback::Outbox::new(config.clone(), store.clone(), None));
        Ok(Analyzer { store, config, filters, triager, owner, outbox })
    }

    /// Analyzes until no pending task can be taken, `analyzer.concurrency` at a time; each task's outcome
    /// goes to `progress` as it happens. A store error stops the pass (the claims it held expire).
    pub async fn run_until_idle(
        &self,
        progress: UnboundedSender<Progress>,
        stop: watch::Receiver<bool>,
    ) -> Result<Summary, AnalyzerError> {
        // Without its program every triage would fail, task after task, each one counted: said once instead.
        crate::worker::agent_config(&self.config).check_program().map_err(AnalyzerError::Agent)?;
        // `worker.sandbox = "landlock"` where the kernel cannot: no triage runs uncontained.
        crate::worker::sandbox::check_at_start(self.config.worker.sandbox)
            .map_err(|e| AnalyzerError::Agent(e.to_string()))?;
        let orphans = self.triager.stop_orphans().await?;
        if orphans > 0 {
            tracing::warn!("ended {orphans} analysis session(s) left open by an analyzer that died");
        }
        let mut summary = Summary::default();
        // The free filters first, over every claimable task and whatever the budget: what a rule skips
        // never waits behind a task that needs the model.
        let max_attempts = self.config.analyzer.max_attempts;
        summary.filtered =
            sweep::filter_pending(&self.store, &self.filters, max_attempts, &progress, &stop).await?;
        // Counted once (a count per claim cost 45 ms at 100,000 tasks), then counted down.
        let mut pending = self.store.count_claimable(max_attempts).await?;
        let mut running: JoinSet<Result<Done, AnalyzerError>> = JoinSet::new();
        let slots = self.config.analyzer.concurrency.max(1) as usize;
        let mut exhausted = false;
        loop {
            while !exhausted && summary.blocked.is_none() && running.len() < slots && !*stop.borrow() {
                match self.claim().await? {
                    Some(task) => {
                        let title = fields::title(&task);
                        let _ = progress.send(Progress::Started {
                            task_gid: task.task_gid.clone(),
                            title,
                            pending: pending.max(1),
                        });
                        pending -= 1;
                        let (me, tx, stop) = (self.clone(), progress.clone(), stop.clone());
                        running.spawn(async move { me.analyze(task, tx, stop).await });
                    }
                    None => exhausted = true,
                }
            }
            let Some(joined) = running.join_next().await else { break };
            let done =
                joined.map_err(|e| StoreError::Corrupt(format!("an analysis task panicked: {e}")))??;
            match done {
                Done::Filtered => summary.filtered += 1,
                Done::Triaged => summary.triaged += 1,
                Done::Failed => summary.failed += 1,
                Done::Overtaken => summary.overtaken += 1,
                Done::Blocked(why) => summary.blocked = Some(why),
            }
            // A finished slot may find work the claim missed while all slots were busy.
            exhausted = false;
        }
        if summary.blocked.is_none() && *stop.borrow() {
            summary.blocked =
                Some(triage::Blocked { by: triage::BlockedBy::Stop, why: "stopped by a signal".into() });
        }
        Ok(summary)
    }

    async fn claim(&self) -> Result<Option<Task>, StoreError> {
        let a = &self.config.analyzer;
        // Long enough for both runs of a triage to reach their hard timeout, and the write after.
        let ttl = chrono::Duration::from_std(a.hard_timeout.std() * 2 + std::time::Duration::from_secs(120))
            .unwrap_or(chrono::Duration::hours(1));
        self.store.claim_for_analysis(&self.owner, ttl, a.max_attempts).await
    }

    /// Filters, then triage, then the write, for one claimed task.
    async fn analyze(
        self,
        task: Task,
        progress: UnboundedSender<Progress>,
        stop: watch::Receiver<bool>,
    ) -> Result<Done, AnalyzerError> {
        let gid = task.task_gid.clone();
        let raw = fields::raw_of(&task);
        if let Some(skip) = self.filters.skip_reason(&fields::task_fields(&task, raw.as_ref()), Utc::now()) {
            if !self.store.record_filter_skip(&gid, &self.owner, &skip.rule, &skip.why).await? {
                let _ = progress.send(Progress::Overtaken { task_gid: gid });
                return Ok(Done::Overtaken);
            }
            let _ = progress.send(Progress::Filtered { task_gid: gid, rule: skip.rule, why: skip.why });
            return Ok(Done::Filtered);
        }
        let notes: Vec<String> =
            self.filters.names().map(|n| format!("the task passed the skip filter `{n}`")).collect();
        match self.triager.triage(&task, &notes, stop).await {
            TriageOutcome::Decided(t) => {
                if t.status == crate::domain::QueueStatus::Skip {
                    // Recorded before the skip is written (a crash in between loses nothing); its
                    // delivery checks the task is still skipped, so a skip that never landed is not told.
                    let key = format!("skipped:{}", crate::writeback::new_marker());
                    let text = crate::writeback::message::skipped(&t.summary);
                    let (event, source) = (crate::domain::WritebackEvent::Skipped, task.source.as_deref());
                    self.outbox.record(gid.as_str(), source, None, event, &key, &text).await?;
                }
                if !self.store.record_triage(&gid, &self.owner, &t).await? {
                    let _ = progress.send(Progress::Overtaken { task_gid: gid });
                    return Ok(Done::Overtaken);
                }
                let _ = progress.send(Progress::Triaged {
                    task_gid: gid,
                    status: t.status,
                    priority: t.priority,
                    summary: t.summary,
                });
                Ok(Done::Triaged)
            }
            TriageOutcome::Failed(error) => {
                let retry_at = Utc::now()
                    + chrono::Duration::from_std(self.config.analyzer.retry_backoff.std())
                        .unwrap_or(chrono::Duration::hours(1));
                if !self.store.record_analysis_failure(&gid, &self.owner, &error, retry_at).await? {
                    let _ = progress.send(Progress::Overtaken { task_gid: gid });
                    return Ok(Done::Overtaken);
                }
                let attempts = self.store.task(&gid).await?.analysis_attempts;
                let gave_up = attempts >= i64::from(self.config.analyzer.max_attempts);
                let _ = progress.send(Progress::Failed { task_gid: gid, error, attempts, gave_up });
                Ok(Done::Failed)
            }
            TriageOutcome::Blocked(why) => {
                self.store.release_claim(&gid, &self.owner).await?;
                Ok(Done::Blocked(why))
            }
        }
    }
}

enum Done {
    Filtered,
    Triaged,
    Failed,
    Overtaken,
    Blocked(triage::Blocked),
}
