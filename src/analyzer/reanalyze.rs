//! `executor reanalyze` (the seed's Phase 7): runs the current filters over the skipped tasks and sends
//! back to pending those that now pass, so the analyzer triages them again.
//!
//! "Passes" means no filter of the config (nor the qualifying-sources gate) skips the task as it is
//! stored now. Who made the last decision to skip it (`Task::skipped_by`, recorded with the skip)
//! decides how it is counted, and whether it is looked at:
//! - a filter: its name (`skip_rule`);
//! - `"triage"`: the analyzer's agent skipped it. Such a task passed the filters then too, so by default
//!   every run sends it back for a new triage (one model call each);
//!   [`ReanalyzeOptions::include_triage_skips`] `false` leaves them be;
//! - `"imported"`: skipped in a v1 export, which names neither a rule nor who skipped it. Included:
//!   the v1 skips are what Phase 7 is about;
//! - `"human"`: a human skipped it (`executor skip`, the dashboard), whatever decided before — also a
//!   task the triage had sent for review. What a human decided stays decided: these are left alone
//!   (and counted in [`Report::human_skips_kept`]) unless `--rule human` asks for them.
//!
//! Sent-back tasks go one analysis round up, and the analyzer takes lower rounds first: new tasks are
//! always triaged before re-analyzed ones (see `store::analysis`).
//!
//! The report is built by a pure [`Tally`]; [`reanalyze`] only reads pages and writes the result.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::fields::{raw_of, task_fields};
use crate::domain::{Actor, QueueStatus, SkippedBy, Task, TaskGid};
use crate::filter::Filters;
use crate::store::{Store, StoreError};

/// How a skip the analyzer's agent made is counted.
pub const TRIAGE: &str = "triage";
/// How a human's skip is counted; only `--rule human` looks at them.
pub const HUMAN: &str = "human";
/// How a skip imported from a v1 export is counted.
pub const IMPORTED: &str = "imported";
/// How a pending task whose analysis was given up on is counted (`--failed`).
pub const GIVEN_UP: &str = "analysis_given_up";

/// Tasks read from the store at a time.
const PAGE: i64 = 1000;

/// Which tasks `reanalyze` looks at, and whether it writes.
#[derive(Debug, Clone)]
pub struct ReanalyzeOptions {
    /// Instead of skipped tasks, the pending ones whose analysis failed `max_attempts` times: they are
    /// tried afresh without evaluating the filters (the filters passed them when they arrived).
    pub failed: bool,
    /// `analyzer.max_attempts`, to tell a given-up task (`failed`).
    pub max_attempts: u32,
    /// Only tasks from these sources (empty: all).
    pub sources: Vec<String>,
    /// Only tasks skipped before by these rules: filter names, [`TRIAGE`], [`IMPORTED`] or [`HUMAN`]
    /// (empty: all but [`HUMAN`], whose skips are looked at only when named here).
    pub rules: Vec<String>,
    /// Only these tasks (empty: all).
    pub tasks: Vec<TaskGid>,
    /// Count, write nothing.
    pub dry_run: bool,
    /// Also send back the tasks the analyzer's agent skipped (they pass the filters by construction).
    /// Default `true`: the seed's Phase 7 wants every old skip looked at again under the new rules.
    pub include_triage_skips: bool,
}

impl Default for ReanalyzeOptions {
    fn default() -> Self {
        ReanalyzeOptions {
            failed: false,
            max_attempts: 3,
            sources: Vec::new(),
            rules: Vec::new(),
            tasks: Vec::new(),
            dry_run: false,
            include_triage_skips: true,
        }
    }
}

/// Counts for one source or one earlier rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    /// No current filter skips them: they go (or would go) back to pending.
    pub would_pass: u64,
    /// A current filter still skips them.
    pub still_skipped: u64,
    /// The still-skipped ones by the rule that skips them now.
    pub still_skipped_by: BTreeMap<String, u64>,
}

impl Counts {
    fn add(&mut self, now_rule: Option<&str>) {
        match now_rule {
            None => self.would_pass += 1,
            Some(rule) => {
                self.still_skipped += 1;
                *self.still_skipped_by.entry(rule.to_string()).or_default() += 1;
            }
        }
    }
}

/// What `reanalyze` found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    /// `"skip"`, or `"failed"` for pending tasks whose analysis was given up on.
    pub looked_at: &'static str,
    pub dry_run: bool,
    /// Tasks examined (after narrowing by source, rule and gid).
    pub examined: u64,
    pub totals: Counts,
    /// By the task's source (`"-"` when it has none).
    pub by_source: BTreeMap<String, Counts>,
    /// By what skipped it before: a filter's name, [`TRIAGE`], [`IMPORTED`], [`HUMAN`] (or [`GIVEN_UP`]).
    pub by_rule: BTreeMap<String, Counts>,
    /// Tasks a human skipped, left as they are because no `--rule` was given (after narrowing by source
    /// and gid; not in `examined`). `--rule human` looks at them.
    pub human_skips_kept: u64,
    /// Moved to pending by this run; 0 on a dry run. Less than `totals.would_pass` when a task changed
    /// meanwhile (a human moved it).
    pub sent_back: u64,
}

/// What skipped `task` before, by who made the last decision (`skipped_by`, never its reason): its
/// filter's name, [`TRIAGE`], [`IMPORTED`] or [`HUMAN`]. A skip that says nothing of who made it counts
/// as a human's, so that it stands unless asked for.
pub fn prior_rule(task: &Task) -> &str {
    match task.skipped_by {
        Some(SkippedBy::Filter) => task.skip_rule.as_deref().unwrap_or("filter"),
        Some(SkippedBy::Triage) => TRIAGE,
        Some(SkippedBy::Imported) => IMPORTED,
        Some(SkippedBy::Human) | None => HUMAN,
    }
}

/// The pure part: decides task by task and counts, keeping the gids to send back by earlier rule.
#[derive(Debug)]
pub struct Tally<'a> {
    filters: &'a Filters,
    opts: &'a ReanalyzeOptions,
    now: DateTime<Utc>,
    report: Report,
    /// The tasks that pass, by what skipped them before (each group gets its own event reason).
    passing: BTreeMap<String, Vec<TaskGid>>,
}

impl<'a> Tally<'a> {
    pub fn new(filters: &'a Filters, opts: &'a ReanalyzeOptions, now: DateTime<Utc>) -> Tally<'a> {
        let report = Report {
            looked_at: if opts.failed { "failed" } else { "skip" },
            dry_run: opts.dry_run,
            ..Report::default()
        };
        Tally { filters, opts, now, report, passing: BTreeMap::new() }
    }

    /// Counts one page of tasks (those outside the options' narrowing are passed over).
    pub fn add_page(&mut self, tasks: &[Task]) {
        for task in tasks {
            self.add(task);
        }
    }

    fn add(&mut self, task: &Task) {
        let o = self.opts;
        let prior = if o.failed {
            if task.status != QueueStatus::Pending || task.analysis_attempts < i64::from(o.max_attempts) {
                return;
            }
            GIVEN_UP
        } else {
            if task.status != QueueStatus::Skip {
                return;
            }
            prior_rule(task)
        };
        let source = task.source.as_deref().unwrap_or("-");
        if (!o.sources.is_empty() && !o.sources.iter().any(|s| s == source))
            || (!o.tasks.is_empty() && !o.tasks.contains(&task.task_gid))
        {
            return;
        }
        let asked_for = o.rules.iter().any(|r| r == prior);
        if !o.rules.is_empty() && !asked_for {
            return;
        }
        if prior == HUMAN && !asked_for {
            // What a human decided stays decided, unless `--rule human` asks.
            self.report.human_skips_kept += 1;
            return;
        }
        if !o.include_triage_skips && prior == TRIAGE {
            return;
        }
        // A given-up task passed the filters when it arrived; it is tried again as it is.
        let now_skip = if o.failed {
            None
        } else {
            let raw = raw_of(task);
            self.filters.skip_reason(&task_fields(task, raw.as_ref()), self.now)
        };
        let now_rule = now_skip.as_ref().map(|s| s.rule.as_str());
        let r = &mut self.report;
        r.examined += 1;
        r.totals.add(now_rule);
        r.by_source.entry(source.to_string()).or_default().add(now_rule);
        r.by_rule.entry(prior.to_string()).or_default().add(now_rule);
        if now_rule.is_none() {
            self.passing.entry(prior.to_string()).or_default().push(task.task_gid.clone());
        }
    }

    /// The report so far, and the passing gids grouped by what skipped them before.
    pub fn finish(self) -> (Report, BTreeMap<String, Vec<TaskGid>>) {
        (self.report, self.passing)
    }
}

/// Runs the current filters over the skipped tasks (or, with `failed`, takes the given-up pending
/// ones), page by page, and unless `dry_run` sends the passing ones back to pending, each with an event
/// whose reason names this command and what skipped the task before.
pub async fn reanalyze(
    store: &Store,
    filters: &Filters,
    opts: &ReanalyzeOptions,
) -> Result<Report, StoreError> {
    let mut tally = Tally::new(filters, opts, Utc::now());
    let status = if opts.failed { QueueStatus::Pending } else { QueueStatus::Skip };
    store
        .for_each_task_page(status, PAGE, |page| {
            tally.add_page(&page);
            Ok(())
        })
        .await?;
    let (mut report, passing) = tally.finish();
    if opts.dry_run {
        return Ok(report);
    }
    for (prior, gids) in &passing {
        let reason = send_back_reason(prior);
        for chunk in gids.chunks(PAGE as usize) {
            report.sent_back += store.send_back_for_analysis(chunk, Actor::Cli, &reason).await?;
        }
    }
    Ok(report)
}

/// The event's reason for tasks that went back to pending.
fn send_back_reason(prior: &str) -> String {
    match prior {
        GIVEN_UP => "executor reanalyze --failed: analysis given up on, tried afresh".to_string(),
        TRIAGE => "executor reanalyze: skipped by triage before; triaged again".to_string(),
        HUMAN => "executor reanalyze --rule human: skipped by a human before; passes the current filters"
            .to_string(),
        IMPORTED => "executor reanalyze: imported skipped from v1; passes the current filters".to_string(),
        rule => format!("executor reanalyze: skipped by filter {rule} before; passes the current filters"),
    }
}

#[cfg(test)]
mod tests;
