//! Runs one worker to its end: starts (or adopts) the agent process, tails its output, enforces the
//! idle and hard timeouts, the cost cap and the caller's stop request, and makes sure no process it
//! started is left behind ([`super::tree`]), also when it ends on its own.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc::UnboundedSender, watch};

use super::agent::AgentResult;
use super::outcome::{EndReason, WorkerOutcome, WorkerUpdate};
use super::process;
use super::replies;
use super::result::{self, ParsedResult};
use super::tail::Tail;
use super::tree::{StoppedProcess, WorkerTree};
use super::{PromptKind, Timeouts};
use crate::domain::WorkerKind;

/// How often `Output` updates may be sent while output keeps coming. Once it pauses, the offset reached
/// is sent at once: a line logged but not covered by the persisted offset would be logged twice by
/// whoever adopts the worker after a crash.
const OUTPUT_UPDATE_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ExitInfo {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

/// The process being watched: our own child, or one adopted after a restart.
pub(super) enum Proc {
    Child(tokio::process::Child, Option<ExitInfo>),
    Adopted { pid: i32, start_time: u64 },
}

impl Proc {
    pub fn pid(&self) -> i32 {
        match self {
            Proc::Child(c, _) => c.id().map(|p| p as i32).unwrap_or(0),
            Proc::Adopted { pid, .. } => *pid,
        }
    }

    /// `Some` once the process has exited. For an adopted process (not our child) the exit status
    /// cannot be collected, only that it is gone.
    fn poll(&mut self) -> Option<ExitInfo> {
        match self {
            Proc::Child(child, done) => {
                if done.is_none() {
                    *done = match child.try_wait() {
                        Ok(Some(status)) => Some(ExitInfo { code: status.code(), signal: status.signal() }),
                        Ok(None) => None,
                        Err(_) => Some(ExitInfo { code: None, signal: None }),
                    };
                }
                *done
            }
            Proc::Adopted { pid, start_time } => (!process::is_same_process(*pid, *start_time))
                .then_some(ExitInfo { code: None, signal: None }),
        }
    }
}

#[derive(Clone)]
pub(super) struct Watch {
    pub kind: PromptKind,
    pub timeouts: Timeouts,
    pub cost_cap_usd: Option<f64>,
    /// When the agent started (earlier than now for an adopted worker).
    pub started_at: DateTime<Utc>,
    /// How long ago the output last changed, as far as we know at the start.
    pub idle_for: Duration,
    pub output_path: PathBuf,
    /// At this size of the output file (where the kernel stops its writer) the worker is stopped
    /// (`OutputLimit`); a file written past it by an agent of an older executor is cut back.
    pub max_output_bytes: u64,
}

/// The supervision loop shared by a fresh start and an adoption.
pub(super) async fn supervise(
    mut proc: Proc,
    mut tail: Tail,
    w: Watch,
    updates: UnboundedSender<WorkerUpdate>,
    mut cancel: watch::Receiver<bool>,
) -> WorkerOutcome {
    // Its start time now, while the pid is still the agent (our unreaped child, or checked on adoption).
    let leader = match &proc {
        Proc::Child(..) => (proc.pid(), process::pid_start_time(proc.pid())),
        Proc::Adopted { pid, start_time } => (*pid, *start_time),
    };
    let files_dir = w.output_path.parent().unwrap_or(std::path::Path::new(""));
    let tree = WorkerTree::of_worker(Some(leader), files_dir);
    let mut stopped: Vec<StoppedProcess> = Vec::new();
    let now = Instant::now();
    let already = (Utc::now() - w.started_at).to_std().unwrap_or_default();
    let start = now.checked_sub(already).unwrap_or(now);
    let mut last_output = now.checked_sub(w.idle_for).unwrap_or(now);
    let mut last_update: Option<Instant> = None;
    let mut sent_offset = tail.offset();
    let mut output_at = Utc::now();
    let mut cancel_open = true;
    let mut stop: Option<EndReason> = None;

    let exit = loop {
        let grew = match tail.poll().await {
            Ok(grew) => grew,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read worker output");
                false
            }
        };
        if grew {
            last_output = Instant::now();
            output_at = Utc::now();
        }
        let offset = tail.offset();
        if offset != sent_offset && (!grew || last_update.is_none_or(|t| t.elapsed() >= OUTPUT_UPDATE_EVERY))
        {
            last_update = Some(Instant::now());
            sent_offset = offset;
            let _ = updates.send(WorkerUpdate::Output { at: output_at, offset });
        }
        if let Some(exit) = proc.poll() {
            break exit;
        }
        stop = if *cancel.borrow() {
            Some(EndReason::Interrupted)
        } else if last_output.elapsed() >= w.timeouts.idle {
            Some(EndReason::IdleTimeout)
        } else if start.elapsed() >= w.timeouts.hard {
            Some(EndReason::HardTimeout)
        } else if over_cap(tail.totals.cost_usd, w.cost_cap_usd) {
            Some(EndReason::BudgetExceeded)
        } else if output_size(&w).await >= w.max_output_bytes {
            Some(EndReason::OutputLimit)
        } else {
            None
        };
        if let Some(reason) = stop {
            tail.log.note(&format!("stopping the worker's processes: {}", reason.describe()));
            stopped = tree
                .stop(w.timeouts.grace, || {
                    proc.poll();
                })
                .await;
            // The leader is gone (or unkillable, which SIGKILL rules out); collect its status if ours.
            break proc.poll().unwrap_or(ExitInfo { code: None, signal: None });
        }
        if cancel_open {
            tokio::select! {
                _ = tokio::time::sleep(w.timeouts.poll) => {}
                changed = cancel.changed() => cancel_open = changed.is_ok(),
            }
        } else {
            tokio::time::sleep(w.timeouts.poll).await;
        }
    };

    // The leader has exited; anything it left running (a server, `sleep &`, a command in a session of
    // its own) goes too: nothing of a worker outlives it. The output writer ends once its pipe does, so
    // its last lines reach the file before the tail reads it.
    let leftovers = tree.stop(w.timeouts.grace, || {}).await;
    if !leftovers.is_empty() {
        let outside = leftovers.iter().filter(|p| !p.in_group).count();
        let where_ = match outside {
            0 => " in its group".to_string(),
            n => format!(", {n} of them outside its group"),
        };
        tail.log.note(&format!(
            "the agent exited but left {} process(es){where_}; they were stopped (see the outcome)",
            leftovers.len()
        ));
    }
    stopped.extend(leftovers);
    // The writer stops at the cap (the agent then dies writing to a closed pipe), also while nobody
    // watched: the cap is why it ended, whatever the exit looked like.
    if stop.is_none() && output_size(&w).await >= w.max_output_bytes {
        stop = Some(EndReason::OutputLimit);
    }

    cap_output(&w, &mut tail).await;
    if let Err(e) = tail.finish(exit.code).await {
        tracing::warn!(error = %e, "cannot read the end of the worker output");
    }
    let mut outcome = outcome(stop, exit, &tail, &w);
    outcome.stopped = stopped;
    tail.log.footer(&outcome);
    tail.log.flush();
    let _ = updates.send(WorkerUpdate::Ended(Box::new(outcome.clone())));
    outcome
}

async fn output_size(w: &Watch) -> u64 {
    tokio::fs::metadata(&w.output_path).await.map(|m| m.len()).unwrap_or(0)
}

/// Once the group is gone nothing writes to the output any more: cut it back to the cap, so what an
/// agent that printed without pause leaves on disk is bounded (the cap, plus what it wrote between
/// two checks and during the stop, which is then removed).
async fn cap_output(w: &Watch, tail: &mut Tail) {
    if output_size(w).await <= w.max_output_bytes {
        return;
    }
    let cut = async {
        let f = tokio::fs::OpenOptions::new().write(true).open(&w.output_path).await?;
        f.set_len(w.max_output_bytes).await
    };
    match cut.await {
        Ok(()) => tail.log.note(&format!(
            "the raw output passed worker.max_output_bytes ({} bytes); the rest was discarded",
            w.max_output_bytes
        )),
        Err(e) => tracing::warn!(error = %e, "cannot cut the worker output back to its cap"),
    }
}

fn over_cap(cost: Option<f64>, cap: Option<f64>) -> bool {
    matches!((cost, cap), (Some(c), Some(cap)) if c > cap)
}

fn end_reason(stop: Option<EndReason>, exit: ExitInfo, result: Option<&AgentResult>) -> EndReason {
    if let Some(reason) = stop {
        return reason;
    }
    if result.is_some_and(|r| r.budget_exceeded) {
        return EndReason::BudgetExceeded;
    }
    if exit.signal.is_some() {
        return EndReason::Crashed;
    }
    match (exit.code, result) {
        (_, None) => EndReason::Crashed,
        (Some(0), Some(r)) if !r.is_error => EndReason::Finished,
        // Adopted, so the exit status is unknown: only the agent's own final word reads as success.
        // Without one it stopped before its end — killed, or crashed — while nobody watched.
        (None, Some(r)) if !r.reached_end => EndReason::Crashed,
        (None, Some(r)) if !r.is_error => EndReason::Finished,
        _ => EndReason::Failed,
    }
}

fn outcome(stop: Option<EndReason>, exit: ExitInfo, tail: &Tail, w: &Watch) -> WorkerOutcome {
    let totals = &tail.totals;
    let r = totals.result.as_ref();
    let mut reason = end_reason(stop, exit, r);
    if reason == EndReason::Finished && over_cap(totals.cost_usd, w.cost_cap_usd) {
        reason = EndReason::BudgetExceeded;
    }
    if stop.is_none() && totals.never_started {
        reason = EndReason::NeverStarted;
    } else if totals.resume_failed && matches!(reason, EndReason::Crashed | EndReason::Failed) {
        reason = EndReason::ResumeFailed;
    }
    // What the agent answers is redacted where it is read: a review, a reply or a summary that echoes a
    // token it saw never reaches the database, a comment or a prompt.
    let redactor = tail.log.redactor();
    let structured = r.and_then(|r| r.structured.as_ref()).map(|v| redactor.redact_json(v));
    let text = r.and_then(|r| r.text.as_deref()).map(|t| redactor.redact(t));
    let parsed = match r {
        Some(_) => result::parse(w.kind, structured.as_ref(), text.as_deref()),
        None => Err(result::ResultError::Missing),
    };
    // A kind without a required result that simply has none is not an error worth recording.
    let (parsed, result_error) = match parsed {
        Ok(p) => (Some(p), None),
        Err(result::ResultError::Missing) if !result::requires_result(w.kind) => (None, None),
        Err(e) if result::schema(w.kind).is_some() => (None, Some(e)),
        Err(_) => (None, None),
    };
    // Read while the worker's files are still there: they are removed only once its end is recorded,
    // so a supervisor that dies first finds them again when it collects the worker.
    let (mut replies, reply_refusals) = match (w.kind, w.output_path.parent()) {
        (PromptKind::Worker(WorkerKind::FixComments), Some(dir)) => {
            replies::read_file(&replies::file_in(dir))
        }
        _ => (Vec::new(), Vec::new()),
    };
    if let Some(ParsedResult::Work(work)) = &parsed {
        replies.extend(work.replies.iter().cloned());
    }
    WorkerOutcome {
        reason,
        exit_code: exit.code,
        session_id: totals.session_id.clone(),
        num_turns: totals.num_turns,
        cost_usd: totals.cost_usd,
        cost_estimated: totals.cost_estimated,
        tokens: totals.tokens,
        result: structured,
        parsed,
        result_error,
        replies,
        reply_refusals,
        final_text: text.map(|t| t.chars().take(4000).collect()),
        duration: (Utc::now() - w.started_at).to_std().unwrap_or_default(),
        log_path: tail.log.path().to_path_buf(),
        output_path: w.output_path.clone(),
        stopped: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(is_error: bool) -> AgentResult {
        AgentResult { is_error, ..Default::default() }
    }

    #[test]
    fn end_reasons() {
        let ok = ExitInfo { code: Some(0), signal: None };
        let bad = ExitInfo { code: Some(3), signal: None };
        let killed = ExitInfo { code: None, signal: Some(9) };
        let unknown = ExitInfo { code: None, signal: None };
        assert_eq!(end_reason(None, ok, Some(&res(false))), EndReason::Finished);
        assert_eq!(end_reason(None, ok, Some(&res(true))), EndReason::Failed);
        assert_eq!(end_reason(None, bad, Some(&res(false))), EndReason::Failed);
        assert_eq!(end_reason(None, bad, None), EndReason::Crashed);
        assert_eq!(end_reason(None, killed, Some(&res(false))), EndReason::Crashed);
        let ended = AgentResult { reached_end: true, ..Default::default() };
        assert_eq!(end_reason(None, unknown, Some(&ended)), EndReason::Finished);
        assert_eq!(end_reason(None, unknown, Some(&res(false))), EndReason::Crashed);
        assert_eq!(end_reason(None, unknown, None), EndReason::Crashed);
        let budget = AgentResult { budget_exceeded: true, is_error: true, ..Default::default() };
        assert_eq!(end_reason(None, ok, Some(&budget)), EndReason::BudgetExceeded);
        assert_eq!(end_reason(Some(EndReason::IdleTimeout), killed, None), EndReason::IdleTimeout);
    }
}
