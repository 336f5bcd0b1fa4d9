//! A supervised worker's record: what it reports as it runs is written into its worker session as it
//! happens, and how it ended when it ends. Used by the runner's pool, by adoption after a crash, and by
//! `executor worker`.

use std::future::Future;

use tokio::sync::mpsc;

use crate::domain::{Actor, BudgetCap, ReviewVerdict, WorkerKind};
use crate::redact::Redactor;
use crate::store::{Answer, Store, WorkerEnd};
use crate::worker::replies::{self, Refusal, Reply};
use crate::worker::result::{ParsedResult, Verdict};
use crate::worker::{self, EndReason, WorkerOutcome, WorkerUpdate};

/// The worker session a supervised worker is recorded on, and what its end means for the run.
pub(crate) struct Recording {
    pub store: Store,
    pub session: i64,
    pub run_id: i64,
    pub kind: WorkerKind,
    /// The runner writing it (its writes hold only while it holds the run's lease); `None` by hand.
    pub holder: Option<String>,
    /// The config's secrets, replaced in the worker's replies before they are recorded.
    pub redactor: Redactor,
}

/// Supervises a worker (`start` is [`worker::run`], [`worker::adopt`] or [`worker::collect`] given the
/// update channel), writing its updates as they come and its end when it ends.
pub(crate) async fn supervise_recorded<F, Fut>(
    rec: Recording,
    start: F,
) -> Result<WorkerOutcome, worker::WorkerError>
where
    F: FnOnce(mpsc::UnboundedSender<WorkerUpdate>) -> Fut,
    Fut: Future<Output = Result<WorkerOutcome, worker::WorkerError>>,
{
    let (tx, rx) = mpsc::unbounded_channel();
    let persist = tokio::spawn(persist_updates(rec.store.clone(), rec.session, rec.holder.clone(), rx));
    let outcome = start(tx).await;
    // Ends once every sender is gone, i.e. the worker's last update is written.
    let _ = persist.await;
    finish(&rec, &outcome).await;
    outcome
}

/// Writes what a running worker reports into the database.
async fn persist_updates(
    store: Store,
    session: i64,
    holder: Option<String>,
    mut rx: mpsc::UnboundedReceiver<WorkerUpdate>,
) {
    let holder = holder.as_deref();
    while let Some(update) = rx.recv().await {
        let result = match update {
            WorkerUpdate::Started { pid, pid_start_time, output_path, log_path, .. } => {
                store
                    .set_worker_process(
                        session,
                        holder,
                        pid,
                        i64::try_from(pid_start_time).ok(),
                        &output_path.display().to_string(),
                        &log_path.display().to_string(),
                    )
                    .await
            }
            WorkerUpdate::SessionId(id) => store.set_worker_agent_session(session, holder, &id).await,
            WorkerUpdate::Output { at, offset } => {
                store
                    .touch_worker_output(session, holder, at, i64::try_from(offset).unwrap_or(i64::MAX))
                    .await
            }
            // Written as it comes, so a runner that dies and the daily budget see the spend so far.
            WorkerUpdate::Usage { cost_usd, input_tokens, output_tokens, cost_estimated } => {
                let tokens = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
                store
                    .set_worker_usage(
                        session,
                        holder,
                        cost_usd,
                        tokens(input_tokens),
                        tokens(output_tokens),
                        cost_estimated,
                    )
                    .await
            }
            WorkerUpdate::Ended(_) => Ok(()),
        };
        if let Err(e) = result {
            tracing::warn!(session, "recording a worker update: {e}");
        }
    }
}

/// Records how a worker ended, with a review's verdict (the store writes it for the head the session
/// started at, in the same transaction), and a budget stop.
async fn finish(rec: &Recording, outcome: &Result<WorkerOutcome, worker::WorkerError>) {
    let (store, session, run_id) = (&rec.store, rec.session, rec.run_id);
    if let Ok(o) = outcome
        && let Err(e) = async {
            record_replies(rec, o).await?;
            record_plan_or_question(rec, o).await
        }
        .await
    {
        // The end is not recorded either, so the next runner collects the worker and records them.
        tracing::warn!(session, "recording a worker's replies, plan or question: {e}");
        return;
    }
    let end = match outcome {
        Ok(o) => worker_end(o, rec.kind),
        Err(e) => WorkerEnd::failed(EndReason::FailedToStart, e.to_string()),
    };
    let recorded = store.end_worker_session(session, rec.holder.as_deref(), &end).await;
    if let Err(e) = &recorded {
        tracing::warn!(session, "recording the end of a worker: {e}");
    }
    let Ok(o) = outcome else { return };
    // The raw output (and the prompt file) served adoption after a crash; once the end is recorded the
    // redacted work log is the record, and the raw stream, which may hold secrets an agent printed, goes.
    if recorded.is_ok()
        && let Some(dir) = o.output_path.parent()
    {
        let _ = tokio::fs::remove_dir_all(dir).await;
    }
    if o.reason == EndReason::BudgetExceeded {
        // The worker was given what was left of both caps; which one it ran into is the runner's to
        // record on its next look at both (`budget_block`), which corrects this first guess.
        let _ = store.set_budget_stop(run_id, rec.holder.as_deref(), Some(BudgetCap::Run)).await;
    }
}

/// Records the replies a worker handed back (before its end, so that a supervisor that dies in between
/// leaves them to the next one, which collects the worker again): each checked against the comments
/// its prompt offered, redacted, and recorded once per comment for the runner to post. What is refused
/// is said on the run's history, without the reply's text.
async fn record_replies(rec: &Recording, o: &WorkerOutcome) -> Result<(), crate::store::StoreError> {
    if o.replies.is_empty() && o.reply_refusals.is_empty() {
        return Ok(());
    }
    let offered = rec.store.offered_comments(rec.session).await?;
    let mut refused: Vec<Refusal> = o.reply_refusals.clone();
    for reply in &o.replies {
        let reply = Reply { to: reply.to.clone(), body: rec.redactor.redact(&reply.body) };
        if let Err(why) = replies::check(&reply, &offered) {
            refused.push(why);
            continue;
        }
        match rec.store.answer_comment(rec.session, &reply.to, &reply.body).await? {
            Answer::Recorded | Answer::Unchanged => {}
            Answer::AlreadyAnswered => refused.push(Refusal::Duplicate { to: reply.to }),
            Answer::NotOffered => refused.push(Refusal::NotOffered { to: reply.to }),
        }
    }
    if !refused.is_empty() {
        let run = rec.store.run(rec.run_id).await?;
        let why: Vec<String> = refused.iter().map(ToString::to_string).collect();
        let note = format!("the {} worker's replies not posted: {}", rec.kind, why.join("; "));
        rec.store.record_note(Actor::Runner, Some(&run.task_gid), Some(rec.run_id), &note).await?;
    }
    Ok(())
}

/// Records the plan a `plan` worker wrote, or the question any worker ended with (before its end, like
/// its replies): the run then waits for a person. Redacted: both are shown on the page, the tracker and
/// the pull request.
async fn record_plan_or_question(rec: &Recording, o: &WorkerOutcome) -> Result<(), crate::store::StoreError> {
    let Some(parsed) = &o.parsed else { return Ok(()) };
    if let Some(question) = parsed.question() {
        let question = rec.redactor.redact(question);
        return rec.store.ask_question(rec.run_id, rec.session, rec.kind, &question).await;
    }
    if let ParsedResult::Plan(plan) = parsed {
        let body = rec.redactor.redact(&plan.to_markdown());
        rec.store.record_plan(rec.run_id, rec.session, &body).await?;
    }
    Ok(())
}

fn worker_end(o: &WorkerOutcome, kind: WorkerKind) -> WorkerEnd {
    let verdict = match (&o.parsed, kind) {
        (Some(ParsedResult::Review(review)), WorkerKind::PrReview) => Some(match review.verdict {
            Verdict::Pass => ReviewVerdict::Pass,
            Verdict::Fail => ReviewVerdict::Fail,
        }),
        _ => None,
    };
    WorkerEnd {
        reason: o.reason,
        exit_code: o.exit_code,
        num_turns: o.num_turns.map(i64::from),
        cost_usd: o.cost_usd.unwrap_or(0.0),
        input_tokens: i64::try_from(o.input_tokens()).unwrap_or(i64::MAX),
        output_tokens: i64::try_from(o.output_tokens()).unwrap_or(i64::MAX),
        result_json: o.result.as_ref().map(|v| v.to_string()),
        result_error: o.result_error.as_ref().map(|e| e.to_string()),
        verdict,
        cost_estimated: o.cost_estimated,
    }
}
