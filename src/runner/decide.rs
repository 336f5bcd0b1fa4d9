//! `decide`: given a run, what the runner observed and the policy, the one next step. Pure: no I/O, no
//! clock (the caller passes `now`), so every row of the seed's pr sub-logic is a table test.
//!
//! Precedence, first match wins:
//!
//!  1. `abandoned` → wait (final).
//!  2. `pr` and the PR was merged → `complete`; `pr` or `complete` and the PR was closed unmerged →
//!     `abandoned`, human told (rather than watched forever). The world has spoken, so this beats a live
//!     worker (which is stopped: its work is moot).
//!  3. A live worker for the run → wait. Never a second worker for one run, never act under a worker.
//!  4. A worker's question nobody has answered → tell the human once, remind once after
//!     `question_reminder`, wait (see [`waiting_for_answer`]).
//!  5. By state:
//!     - `queued`: when the task needs a plan, a `plan` worker writes one (and rewrites it when sent
//!       back), and the run waits for a person's approval (see [`plan_gate`]); then, with a free slot →
//!       start `queued` worker, moving to `in_progress`; else wait.
//!     - `in_progress`: a PR exists for the branch → `pr`, recording it; the branch has commits → open a
//!       draft one (code, not the agent, opens pull requests on every forge); else resume with an
//!       `in_progress` worker.
//!     - `pr`, in this order: no PR visible → wait for a human; draft missing required labels → add
//!       them; conflicts with its base → `fix_conflicts` (or abandon after `max_conflict_attempts`); no
//!       check at the head → after `check_grace`, trigger CI once per head sha, then wait; CI pending → wait; a
//!       check could not run (infrastructure) → tell the human once per head and wait, never `fix_ci`;
//!       CI failed → `fix_ci` (or abandon after `max_ci_attempts`; an interrupted `fix_ci` does not use
//!       up its attempt); unresolved trusted comments → `fix_comments`; a required check missing at the
//!       head → wait; the forge still computing mergeability → wait; green review at this head →
//!       `complete`, human told; failed review at this head → `fix_comments` on its findings, for up to
//!       `max_review_rounds` failed reviews, then tell the human once and wait (see
//!       [`after_failed_review`]); otherwise → `pr_review`.
//!       Every wait for checks (none reported after the trigger, one pending, a required one missing)
//!       tells the human once per head when the head has waited `check_timeout`, and goes on waiting;
//!       the wait and that notice say what the trigger did, and name it as the likely cause when it
//!       triggered nothing (see [`trigger_words`]).
//!     - `complete`: an open draft PR with an unresolved trusted comment that the observation which
//!       completed the run did not show (by id, never by time: see [`new_since_completion`]) → back to
//!       `pr`; otherwise wait.
//!
//! Every worker start goes through the same gate, in order: retry limits (→ `abandoned`, human told),
//! then back-off after an unsuccessful worker (→ wait), then a budget cap (→ wait, saying which cap and
//! by how much), then a free slot (→ wait). A worker that did its
//! job is progress, not an attempt: a reviewer who keeps commenting, each round answered, never runs
//! into the limit of back-to-back `fix_comments` workers (see [`LastWorker::streak`]).

use chrono::{DateTime, SubsecRound, TimeDelta, Utc};

use super::decision::{
    Action, Decision, LastWorker, Notice, NoticeKind, Observation, OpenQuestion, PlanStage, Policy,
    WorkerOutcome,
};
use crate::domain::{ChangeWords, ReviewVerdict, Run, RunState, WorkerKind};
use crate::forge::{Check, CheckStatus, CiRollup, Comment, Mergeable, PrSnapshot, PrState};

/// The back-off doubles per attempt up to this many times (64 × the base delay).
const MAX_BACKOFF_DOUBLINGS: u32 = 6;
/// How much of a check's own summary a notice quotes.
const SUMMARY_IN_NOTICE: usize = 300;

pub fn decide(run: &Run, obs: &Observation, policy: &Policy, now: DateTime<Utc>) -> Decision {
    if run.state == RunState::Abandoned {
        return Decision::wait("The run is abandoned; nothing more to do.");
    }
    if matches!(run.state, RunState::Pr | RunState::Complete)
        && let Some(pr) = &obs.pr
        && let Some(decision) = merged_or_closed(run.state, pr, obs.worker_alive, policy.words)
    {
        return decision;
    }
    if obs.worker_alive {
        let pid = run.worker_pid.map_or(String::new(), |pid| format!(" (pid {pid})"));
        return Decision::wait(format!("A worker is alive for this run{pid}; never a second one."));
    }
    if let Some(question) = &obs.open_question {
        return waiting_for_answer(run, question, obs, policy, now);
    }
    match run.state {
        RunState::Queued => plan_gate(run, obs, policy, now).unwrap_or_else(|| {
            start_worker(
                Start::new(WorkerKind::Queued, "The run is queued.").moving_to(RunState::InProgress),
                run,
                obs,
                policy,
                now,
            )
        }),
        RunState::InProgress => in_progress(run, obs, policy, now),
        RunState::Pr => match &obs.pr {
            Some(pr) => pr_open(run, pr, obs, policy, now),
            None => Decision::wait(format!(
                "The run is in pr but the forge shows no {} for branch {}; waiting for a human.",
                policy.words.noun,
                branch(run)
            )),
        },
        RunState::Complete => complete(run, obs, policy),
        RunState::Abandoned => Decision::wait("The run is abandoned; nothing more to do."),
    }
}

/// A worker asked a question: the human is told once (Needs you, the tracker, the pull request), reminded
/// once after `question_reminder`, and the run waits, whatever else changes, until someone answers.
fn waiting_for_answer(
    run: &Run,
    question: &OpenQuestion,
    obs: &Observation,
    policy: &Policy,
    now: DateTime<Utc>,
) -> Decision {
    let how = format!(
        "answer on the run page, with `executor answer {} \"…\"`, or in a comment on the {}",
        run.id, policy.words.noun
    );
    let key = format!("question:{}", question.id);
    if !obs.notices_sent.contains(&key) {
        let text = format!(
            "A worker of run {} (task {}) asks:\n\n{}\n\nThe run waits for your answer: {how}.",
            run.id, run.task_gid, question.text
        );
        return Decision {
            action: Action::Notify { notice: notice(NoticeKind::Question, &key, &text) },
            why: format!(
                "A worker asked question {}; telling the human and waiting for the answer.",
                question.id
            ),
        };
    }
    let reminder = format!("question_reminder:{}", question.id);
    let due = TimeDelta::from_std(policy.question_reminder).unwrap_or(TimeDelta::MAX);
    if now - question.asked_at >= due && !obs.notices_sent.contains(&reminder) {
        let text = format!(
            "Run {} (task {}) has waited {} for an answer to its worker's question:\n\n{}\n\nIt keeps \
             waiting and will not remind you again: {how}.",
            run.id,
            run.task_gid,
            humantime::format_duration(policy.question_reminder),
            question.text
        );
        return Decision {
            action: Action::Notify { notice: notice(NoticeKind::NeedsHuman, &reminder, &text) },
            why: format!("Question {} is still unanswered; reminding the human once.", question.id),
        };
    }
    Decision::wait(format!("Waiting for an answer to question {} ({how}).", question.id))
}

/// A run whose task needs an approved plan: a `plan` worker writes one (again, after changes were
/// asked for), a person is told of each revision once, and code starts only once one is approved.
/// `None` when no plan is needed or it is approved.
fn plan_gate(run: &Run, obs: &Observation, policy: &Policy, now: DateTime<Utc>) -> Option<Decision> {
    let write = |reason: String| start_worker(Start::new(WorkerKind::Plan, reason), run, obs, policy, now);
    match obs.plan.as_ref()? {
        PlanStage::Approved => None,
        PlanStage::None => {
            Some(write("The task needs a plan approved before code; none is written yet.".into()))
        }
        PlanStage::ChangesRequested { revision } => Some(write(format!(
            "Plan revision {revision} was sent back with changes requested; revision {} is to be written.",
            revision + 1
        ))),
        PlanStage::Awaiting { id, revision } => {
            let key = format!("plan:{id}");
            let how = format!(
                "approve it on the run page or with `executor plan approve {0}`, or send it back with \
                 `executor plan revise {0} --comment \"…\"`",
                run.id
            );
            if obs.notices_sent.contains(&key) {
                return Some(Decision::wait(format!("Plan revision {revision} waits for a person: {how}.")));
            }
            let text = format!(
                "Plan revision {revision} for run {} (task {}) waits for your approval before any code is \
                 written: {how}.",
                run.id, run.task_gid
            );
            Some(Decision {
                action: Action::Notify { notice: notice(NoticeKind::Plan, &key, &text) },
                why: text,
            })
        }
    }
}

/// A merged PR completes a run in `pr` (a completed one stays so); a PR closed unmerged abandons a run in
/// `pr` or `complete`: nobody will merge that work, and an abandoned run no longer holds its task.
fn merged_or_closed(
    state: RunState,
    pr: &PrSnapshot,
    worker_alive: bool,
    w: ChangeWords,
) -> Option<Decision> {
    let (to, notify, why) = match pr.state {
        PrState::Open => return None,
        PrState::Merged if state == RunState::Complete => return None,
        PrState::Merged => (RunState::Complete, None, format!("{} was merged.", w.short_ref(pr.number))),
        PrState::Closed => {
            let after = if state == RunState::Complete { " after the run completed" } else { "" };
            let why = format!("{} was closed without merging{after}.", w.short_ref(pr.number));
            let notice = notice(NoticeKind::Abandoned, "abandoned", &why);
            (RunState::Abandoned, Some(notice), why)
        }
    };
    Some(Decision { action: Action::Transition { to, pr: None, notify, stop_worker: worker_alive }, why })
}

fn in_progress(run: &Run, obs: &Observation, policy: &Policy, now: DateTime<Utc>) -> Decision {
    let w = policy.words;
    if let Some(pr) = &obs.pr {
        return Decision {
            action: Action::Transition {
                to: RunState::Pr,
                pr: Some(pr.pr_ref()),
                notify: None,
                stop_worker: false,
            },
            why: format!("{} exists for branch {}; recording it.", w.short_ref(pr.number), branch(run)),
        };
    }
    if obs.branch_has_commits {
        return Decision {
            action: Action::OpenPr,
            why: format!("Branch {} has commits and no {}; opening one.", branch(run), w.noun),
        };
    }
    let reason = format!("No live worker and no {} for branch {} yet.", w.noun, branch(run));
    start_worker(Start::new(WorkerKind::InProgress, reason), run, obs, policy, now)
}

/// The pr sub-logic for an open pull request (merged and closed were handled before).
fn pr_open(run: &Run, pr: &PrSnapshot, obs: &Observation, policy: &Policy, now: DateTime<Utc>) -> Decision {
    let head = short(&pr.head_sha);
    let number = policy.words.short_ref(pr.number);
    if pr.draft {
        let missing = pr.missing_labels(&policy.required_labels);
        if !missing.is_empty() {
            return Decision {
                why: format!("Draft {number} lacks required labels: {}.", missing.join(", ")),
                action: Action::AddLabels { labels: missing },
            };
        }
    }
    if pr.mergeable == Mergeable::Conflicting {
        return fix_conflicts(run, pr, obs, policy, now);
    }
    match pr.ci() {
        CiRollup::None if obs.ci_triggered_for.as_deref() == Some(pr.head_sha.as_str()) => {
            let waiting = trigger_words::no_check_after_trigger(obs.ci_trigger, head);
            return wait_for_checks(run, pr, obs, policy, now, waiting);
        }
        CiRollup::None if in_check_grace(run, pr, policy, now) => {
            return Decision::wait(format!(
                "No check has reported at {head} yet; checks get {} to register after a push before CI is triggered.",
                humantime::format_duration(policy.check_grace)
            ));
        }
        CiRollup::None => {
            return Decision {
                action: Action::TriggerCi { sha: pr.head_sha.clone() },
                why: format!("No CI has run at {head}; triggering it."),
            };
        }
        CiRollup::Pending => {
            let waiting = format!(
                "CI is running at {head} (pending: {}).",
                pr.check_names_where(CheckStatus::is_pending).join(", ")
            );
            return wait_for_checks(run, pr, obs, policy, now, waiting);
        }
        CiRollup::Error => return ci_error(pr, obs, policy.words),
        CiRollup::Failure => return fix_ci(run, pr, obs, policy, now),
        CiRollup::Success => {}
    }
    let unresolved = pr.unresolved_trusted_comments(&policy.trust);
    if !unresolved.is_empty() {
        let mut authors: Vec<&str> = unresolved.iter().map(|c| c.author.as_str()).collect();
        authors.sort_unstable();
        authors.dedup();
        let authors = authors.join(", ");
        let mut reason =
            format!("{} unresolved comment(s) by {authors} on {number} at {head}", unresolved.len());
        if obs.comment_rounds > 0 {
            // A reviewer's stream of comments, each round answered: why the run goes on, in its words.
            reason.push_str(&format!(
                ": the {} round of comments by {authors} (the {} before were answered)",
                ordinal(obs.comment_rounds.saturating_add(1)),
                obs.comment_rounds
            ));
        }
        reason.push('.');
        return start_worker(Start::new(WorkerKind::FixComments, reason), run, obs, policy, now);
    }
    let not_green = pr.required_checks_not_green(&policy.required_checks);
    if !not_green.is_empty() {
        let waiting =
            format!("CI is green at {head} but required checks have not reported: {}.", not_green.join(", "));
        return wait_for_checks(run, pr, obs, policy, now, waiting);
    }
    if pr.mergeable == Mergeable::Unknown {
        return Decision::wait(format!(
            "CI is green at {head}, but the forge is still computing whether {number} can merge; observing again next tick."
        ));
    }
    let reviewed_here = run.review_sha.as_deref() == Some(pr.head_sha.as_str());
    match run.review_verdict {
        Some(ReviewVerdict::Pass) if reviewed_here => {
            let why = format!(
                "{number} is ready: CI and required checks green, nothing unresolved, review passed at {head}."
            );
            let key = format!("completed:{}", pr.head_sha);
            Decision {
                action: Action::Transition {
                    to: RunState::Complete,
                    pr: None,
                    notify: Some(notice(NoticeKind::Completed, &key, &why)),
                    stop_worker: false,
                },
                why,
            }
        }
        Some(ReviewVerdict::Fail) if reviewed_here && obs.failed_reviews <= policy.max_review_rounds => {
            let reason = format!(
                "The review failed at {head} (review round {} of {}); fix_comments works on its findings.",
                obs.failed_reviews.max(1),
                policy.max_review_rounds
            );
            start_worker(Start::new(WorkerKind::FixComments, reason), run, obs, policy, now)
        }
        Some(ReviewVerdict::Fail) if reviewed_here => after_failed_review(pr, obs, policy),
        _ => {
            let reason =
                format!("CI green and nothing unresolved at {head}, but no passing review of this head.");
            start_worker(Start::new(WorkerKind::PrReview, reason), run, obs, policy, now)
        }
    }
}

/// The review of this head failed, `max_review_rounds` rounds of fixes did not satisfy it, and no trusted
/// comment is unresolved. Another round would most likely go the same way, so a human decides: they are
/// told once per head, and a trusted comment (→ `fix_comments`) or a new commit (→ a new review) moves
/// the run on.
fn after_failed_review(pr: &PrSnapshot, obs: &Observation, policy: &Policy) -> Decision {
    let head = short(&pr.head_sha);
    let key = format!("review_failed:{}", pr.head_sha);
    if obs.notices_sent.contains(&key) {
        return Decision::wait(format!(
            "The review failed at {head} and the human was told; waiting for a trusted comment or a new commit."
        ));
    }
    let why = format!(
        "The review of {} failed at {head} after {} round(s) of fixes (runner.max_review_rounds = {}); a \
         human must say what to fix.",
        policy.words.short_ref(pr.number),
        obs.failed_reviews,
        policy.max_review_rounds
    );
    Decision { action: Action::Notify { notice: notice(NoticeKind::NeedsHuman, &key, &why) }, why }
}

/// A wait for checks at this head. Once the head has waited `check_timeout`, the human is told once per
/// head which checks are overdue and for how long; the wait goes on either way, since CI may still
/// report (a required check skipped on drafts, a runner queue that is only slow).
fn wait_for_checks(
    run: &Run,
    pr: &PrSnapshot,
    obs: &Observation,
    policy: &Policy,
    now: DateTime<Utc>,
    waiting: String,
) -> Decision {
    let timeout = TimeDelta::from_std(policy.check_timeout).unwrap_or(TimeDelta::MAX);
    let Some(waited) = time_at_head(run, pr, now).filter(|waited| *waited >= timeout) else {
        return Decision::wait(waiting);
    };
    let key = crate::domain::checks_timeout_key(&pr.head_sha);
    if obs.notices_sent.contains(&key) {
        return Decision::wait(format!(
            "{waiting} The human was told the checks are overdue; still waiting."
        ));
    }
    let waited = std::time::Duration::from_secs(u64::try_from(waited.num_seconds()).unwrap_or(0));
    // With no check at all after a trigger that triggered nothing, the trigger is the likely cause.
    let triggered_here = obs.ci_triggered_for.as_deref() == Some(pr.head_sha.as_str());
    let cause = match pr.ci() {
        CiRollup::None if triggered_here => {
            trigger_words::likely_cause(obs.ci_trigger, run.repo.as_deref().unwrap_or("NAME"))
        }
        _ => None,
    };
    let text = format!(
        "{} has waited {} at {} for checks that have not finished: {}.{} No agent is started for this \
         and executor keeps waiting; look at the CI (or raise runner.check_timeout, now {}).",
        policy.words.short_ref(pr.number),
        humantime::format_duration(waited),
        short(&pr.head_sha),
        overdue_checks(pr, &policy.required_checks),
        cause.map_or(String::new(), |c| format!(" {c}")),
        humantime::format_duration(policy.check_timeout),
    );
    Decision { action: Action::Notify { notice: notice(NoticeKind::NeedsHuman, &key, &text) }, why: text }
}

/// A new head with no check yet, within the grace period in which the forge registers its checks.
fn in_check_grace(run: &Run, pr: &PrSnapshot, policy: &Policy, now: DateTime<Utc>) -> bool {
    if policy.check_grace.is_zero() {
        return false;
    }
    let grace = TimeDelta::from_std(policy.check_grace).unwrap_or(TimeDelta::MAX);
    time_at_head(run, pr, now).is_none_or(|waited| waited < grace)
}

/// How long the run has been at the PR's head, when the run recorded this head and when it first saw it.
/// The `run` is read before this tick recorded a new head, so a head it has not recorded is brand new.
fn time_at_head(run: &Run, pr: &PrSnapshot, now: DateTime<Utc>) -> Option<TimeDelta> {
    if run.head_sha.as_deref() != Some(pr.head_sha.as_str()) {
        return None;
    }
    run.head_seen_at.map(|seen| now - seen)
}

/// The checks a wait is for, in words: pending ones, and required ones missing or not green at the head.
fn overdue_checks(pr: &PrSnapshot, required: &[String]) -> String {
    let at_head = pr.checks_at_head();
    let mut overdue: Vec<String> =
        at_head.iter().filter(|c| c.status.is_pending()).map(|c| format!("{} (pending)", c.name)).collect();
    for name in pr.required_checks_not_green(required) {
        match at_head.iter().find(|c| c.name == name) {
            None => overdue.push(format!("{name} (never reported)")),
            Some(c) if c.status.is_pending() => {}
            Some(c) => overdue.push(format!("{name} ({})", c.status.as_str())),
        }
    }
    if overdue.is_empty() { "no check has reported at all".into() } else { overdue.join(", ") }
}

/// A check at the head could not run: CI itself is broken, so an agent could not tell whether its fix
/// works. The human is told once per head; a new commit (which triggers CI again) moves the run on.
fn ci_error(pr: &PrSnapshot, obs: &Observation, w: ChangeWords) -> Decision {
    let head = short(&pr.head_sha);
    let errored: Vec<&Check> = pr.checks_at_head().into_iter().filter(|c| c.status.is_error()).collect();
    let names = errored.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ");
    let key = format!("ci_error:{}", pr.head_sha);
    if obs.notices_sent.contains(&key) {
        return Decision::wait(format!(
            "CI could not run at {head} (checks: {names}) and the human was told; waiting for CI to be fixed and a new commit."
        ));
    }
    let reason = errored
        .iter()
        .filter_map(|c| c.summary.as_deref())
        .map(|s| s.lines().next().unwrap_or("").chars().take(SUMMARY_IN_NOTICE).collect::<String>())
        .find(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "no reason given".into());
    let text = format!(
        "CI could not run at {head} on {} (checks: {names}): {reason}. This is not a code failure, so no \
         agent is started; fix the CI setup, then a new commit on the branch runs CI again.",
        w.short_ref(pr.number)
    );
    Decision { action: Action::Notify { notice: notice(NoticeKind::NeedsHuman, &key, &text) }, why: text }
}

fn fix_ci(run: &Run, pr: &PrSnapshot, obs: &Observation, policy: &Policy, now: DateTime<Utc>) -> Decision {
    let head = short(&pr.head_sha);
    let failed = pr.check_names_where(CheckStatus::is_failing).join(", ");
    // An interrupted fix_ci (our own shutdown) did not use up its attempt: the next one takes its number.
    let interrupted = obs
        .last_worker
        .as_ref()
        .is_some_and(|w| w.kind == WorkerKind::FixCi && w.outcome == WorkerOutcome::Interrupted);
    let done = (run.ci_attempts.max(0) as u32).saturating_sub(u32::from(interrupted));
    if done >= policy.max_ci_attempts {
        return abandon(format!(
            "CI still fails at {head} (checks: {failed}) after {done} fix_ci attempt(s) of {}.",
            policy.max_ci_attempts
        ));
    }
    let attempt = done + 1;
    let reason = format!(
        "CI failed at {head} (checks: {failed}); fix_ci attempt {attempt} of {}.",
        policy.max_ci_attempts
    );
    let start = Start {
        ci_attempt: Some(i32::try_from(attempt).unwrap_or(i32::MAX)),
        ..Start::new(WorkerKind::FixCi, reason)
    };
    start_worker(start, run, obs, policy, now)
}

/// The pull request conflicts with its base branch: CI may not even run on it (GitHub runs no
/// `pull_request` workflow on a conflicting PR), and a human cannot merge it. Capped like `fix_ci`.
fn fix_conflicts(
    run: &Run,
    pr: &PrSnapshot,
    obs: &Observation,
    policy: &Policy,
    now: DateTime<Utc>,
) -> Decision {
    let head = short(&pr.head_sha);
    if obs.conflict_attempts >= policy.max_conflict_attempts {
        return abandon(format!(
            "{} still conflicts with its base at {head} after {} fix_conflicts attempt(s) of {}.",
            policy.words.short_ref(pr.number),
            obs.conflict_attempts,
            policy.max_conflict_attempts
        ));
    }
    let reason = format!(
        "{} conflicts with its base branch at {head}; fix_conflicts attempt {} of {}.",
        policy.words.short_ref(pr.number),
        obs.conflict_attempts + 1,
        policy.max_conflict_attempts
    );
    start_worker(Start::new(WorkerKind::FixConflicts, reason), run, obs, policy, now)
}

fn complete(run: &Run, obs: &Observation, policy: &Policy) -> Decision {
    let Some(pr) = obs.pr.as_ref().filter(|pr| pr.state == PrState::Open && pr.draft) else {
        return Decision::wait(format!(
            "The run is complete; no open draft {} to watch for new comments.",
            policy.words.short
        ));
    };
    let new: Vec<_> = pr
        .unresolved_trusted_comments(&policy.trust)
        .into_iter()
        .filter(|c| new_since_completion(c, run, obs))
        .collect();
    let Some(first) = new.first() else {
        return Decision::wait("The run is complete; no new trusted comment since.");
    };
    Decision {
        action: Action::Transition { to: RunState::Pr, pr: None, notify: None, stop_worker: false },
        why: format!(
            "{} commented on draft {} after completion ({} new comment(s)); back to pr.",
            first.author,
            policy.words.short_ref(pr.number),
            new.len()
        ),
    }
}

/// Whether a comment on a completed run's pull request came after the completion. By id: every comment
/// the completing observation saw was recorded with the completion, so any other one is new — also one
/// stamped in the completion's second (GitHub's whole seconds) or posted between that observation and
/// the completion's write. A run completed before the ids were recorded falls back to time, to the
/// whole second, so a comment in the completion's second still counts (it was not unresolved when the
/// run completed, or the run would not have completed).
fn new_since_completion(c: &Comment, run: &Run, obs: &Observation) -> bool {
    match &obs.comments_at_completion {
        Some(seen) => !seen.contains(&c.id),
        None => run.completed_at.is_none_or(|done| c.created_at >= done.trunc_subsecs(0)),
    }
}

/// A worker the decision wants to start, and why.
struct Start {
    kind: WorkerKind,
    reason: String,
    move_to: Option<RunState>,
    ci_attempt: Option<i32>,
}

impl Start {
    fn new(kind: WorkerKind, reason: impl Into<String>) -> Self {
        Start { kind, reason: reason.into(), move_to: None, ci_attempt: None }
    }

    fn moving_to(self, state: RunState) -> Self {
        Start { move_to: Some(state), ..self }
    }
}

/// The gate every worker start passes: limits, then back-off, then the budget, then a free slot.
fn start_worker(start: Start, run: &Run, obs: &Observation, policy: &Policy, now: DateTime<Utc>) -> Decision {
    let kind = start.kind;
    let reason = start.reason;
    let stuck = run.worker_stuck_count.max(0) as u32;
    if stuck >= policy.max_stuck {
        return abandon(format!(
            "{reason} Giving up: {stuck} worker(s) stuck or failed (limit {}).",
            policy.max_stuck
        ));
    }
    if let Some(last) = &obs.last_worker {
        // fix_ci and fix_conflicts have their own attempt limits.
        let repeats =
            same_job(last.kind, kind) && !matches!(kind, WorkerKind::FixCi | WorkerKind::FixConflicts);
        if repeats && last.outcome != WorkerOutcome::Interrupted && last.streak >= policy.max_stuck {
            return abandon(format!(
                "{reason} Giving up: {} {kind} worker(s) in a row did not get it done (limit {}).",
                last.streak, policy.max_stuck
            ));
        }
        if let Some(until) = backoff_until(last, kind, stuck, policy)
            && now < until
        {
            return Decision::wait(format!(
                "{reason} Backing off: the last {} worker ended {} at {}; retry after {}.",
                last.kind,
                outcome_word(last.outcome),
                last.ended_at.format("%H:%M:%S"),
                until.format("%H:%M:%S")
            ));
        }
    }
    if let Some(stop) = &obs.budget {
        return Decision::wait(format!("{reason} {}", stop.describe(run.id, now)));
    }
    if !obs.free_slot {
        return Decision::wait(format!("{reason} No free worker slot."));
    }
    Decision {
        action: Action::StartWorker { kind, move_to: start.move_to, ci_attempt: start.ci_attempt },
        why: format!("{reason} Starting {} {kind} worker.", article(kind)),
    }
}

/// When the next worker may start after `last`, or `None` if it may start now. A worker that failed, got
/// stuck, changed nothing, or is about to be retried for the same job did not reach its end state: wait
/// the base delay, doubled per further attempt. An interrupted worker was our shutdown, not a failure;
/// one that got its job done (a streak of 0: a round of comments answered) leaves new work, not a retry.
fn backoff_until(last: &LastWorker, next: WorkerKind, stuck: u32, policy: &Policy) -> Option<DateTime<Utc>> {
    let failed =
        matches!(last.outcome, WorkerOutcome::Failed | WorkerOutcome::Stuck | WorkerOutcome::NoProgress);
    let retry = same_job(last.kind, next) && last.streak > 0;
    if last.outcome == WorkerOutcome::Interrupted || !(failed || retry) {
        return None;
    }
    let attempts = if retry { last.streak } else { 1 }.max(stuck).max(1);
    let doublings = (attempts - 1).min(MAX_BACKOFF_DOUBLINGS);
    // A delay too large for chrono is as good as "never"; saturate instead of failing.
    let base = TimeDelta::from_std(policy.retry_backoff).unwrap_or(TimeDelta::MAX);
    let delay = base.checked_mul(1 << doublings).unwrap_or(TimeDelta::MAX);
    Some(last.ended_at.checked_add_signed(delay).unwrap_or(DateTime::<Utc>::MAX_UTC))
}

fn same_job(a: WorkerKind, b: WorkerKind) -> bool {
    let first_work = |k| matches!(k, WorkerKind::Queued | WorkerKind::InProgress);
    a == b || (first_work(a) && first_work(b))
}

fn abandon(why: String) -> Decision {
    Decision {
        action: Action::Transition {
            to: RunState::Abandoned,
            pr: None,
            notify: Some(notice(NoticeKind::Abandoned, "abandoned", &why)),
            stop_worker: false,
        },
        why,
    }
}

fn notice(kind: NoticeKind, key: &str, text: &str) -> Notice {
    Notice { kind, key: key.to_string(), text: text.to_string() }
}

fn outcome_word(outcome: WorkerOutcome) -> &'static str {
    match outcome {
        WorkerOutcome::Ok => "without reaching its goal",
        WorkerOutcome::NoProgress => "without changing anything",
        WorkerOutcome::Failed => "failed",
        WorkerOutcome::Stuck => "stuck",
        WorkerOutcome::Interrupted => "interrupted",
    }
}

/// 1st, 2nd, 3rd, 4th, … 11th, 12th, 13th, … 21st.
fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

fn article(kind: WorkerKind) -> &'static str {
    if kind == WorkerKind::InProgress { "an" } else { "a" }
}

fn branch(run: &Run) -> &str {
    run.branch_name.as_deref().unwrap_or("(none yet)")
}

/// Seven characters of a sha, as git abbreviates them, for sentences.
fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

mod trigger_words;

#[cfg(test)]
mod tests;
