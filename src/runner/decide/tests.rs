//! The decision table: one named row per rule of the pr sub-logic, plus the back-off and limit rules.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, TimeZone, Utc};

use super::decide;
use crate::budget::BudgetStop;
use crate::config::Trust;
use crate::domain::{BudgetCap, ChangeWords, CiTrigger, Run, RunState, TaskGid, WorkerKind};
use crate::forge::{Check, CheckStatus, Comment, Mergeable, PrRef, PrSnapshot, PrState};
use crate::runner::decision::{OpenQuestion, PlanStage};
use crate::runner::{Action, Decision, LastWorker, Notice, NoticeKind, Observation, Policy, WorkerOutcome};

const HEAD: &str = "abc1234def5678";
const OLD: &str = "0001112223334";

fn at(minute: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 5, 1, 12, minute, 0).unwrap()
}

fn now() -> DateTime<Utc> {
    at(30)
}

fn run(state: RunState) -> Run {
    Run {
        id: 1,
        task_gid: TaskGid::parse("1207").unwrap(),
        repo: Some("app".into()),
        worktree_path: None,
        branch_name: Some("executor/1207-fix-login".into()),
        pr_url: None,
        pr_number: None,
        thread_id: None,
        started_at: at(0),
        updated_at: at(0),
        completed_at: None,
        state,
        ci_attempts: 0,
        worker_session_id: None,
        worker_last_update: None,
        worker_pid: None,
        worker_stuck_count: 0,
        head_sha: None,
        head_seen_at: None,
        cost_estimated: false,
        review_verdict: None,
        review_sha: None,
        lease_owner: None,
        lease_expires_at: None,
        cost_usd: 0.0,
        input_tokens: 0,
        output_tokens: 0,
    }
}

fn policy() -> Policy {
    Policy {
        max_stuck: 3,
        max_ci_attempts: 3,
        required_labels: vec!["executor".into()],
        required_checks: vec!["build".into()],
        trust: Trust::authors(&["alex".into()]),
        retry_backoff: Duration::from_secs(60),
        check_timeout: Duration::from_secs(2 * 3600),
        max_review_rounds: 2,
        max_conflict_attempts: 3,
        check_grace: Duration::ZERO,
        question_reminder: Duration::from_secs(24 * 3600),
        words: ChangeWords::PULL_REQUEST,
    }
}

fn obs() -> Observation {
    Observation {
        worker_alive: false,
        free_slot: true,
        pr: None,
        branch_has_commits: false,
        last_worker: None,
        ci_triggered_for: None,
        ci_trigger: None,
        notices_sent: vec![],
        failed_reviews: 0,
        conflict_attempts: 0,
        comments_at_completion: None,
        comment_rounds: 0,
        plan: None,
        open_question: None,
        budget: None,
    }
}

fn stop(cap: BudgetCap, limit: f64, spent: f64) -> BudgetStop {
    BudgetStop { cap, limit, spent, min_launch: 0.05 }
}

fn check(name: &str, status: CheckStatus) -> Check {
    Check { name: name.into(), status, sha: HEAD.into(), url: None, summary: None, job_id: None }
}

/// An open draft PR, labelled, with green required CI at HEAD and no comments.
fn pr() -> PrSnapshot {
    PrSnapshot {
        number: 7,
        url: "https://example.test/pr/7".into(),
        state: PrState::Open,
        draft: true,
        head_sha: HEAD.into(),
        labels: vec!["executor".into()],
        mergeable: Mergeable::Mergeable,
        checks: vec![check("build", CheckStatus::Success)],
        comments: vec![],
        observed_at: now(),
        diff: None,
    }
}

fn comment(id: &str, author: &str, minute: u32) -> Comment {
    Comment {
        id: id.into(),
        author: author.into(),
        body: "please rename this".into(),
        created_at: at(minute),
        path: Some("src/lib.rs".into()),
        line: Some(3),
        thread_id: None,
        thread_resolved: false,
        in_reply_to: None,
        by_agent: false,
        from_dashboard: false,
        author_association: None,
    }
}

/// 12:20:`second`.`millis` — a run's completion as the database stamps it (sub-second).
fn at_ms(second: u32, millis: u32) -> DateTime<Utc> {
    at(20) + TimeDelta::seconds(i64::from(second)) + TimeDelta::milliseconds(i64::from(millis))
}

/// A comment as GitHub stamps it: 12:20:`second`, in whole seconds.
fn github_comment(id: &str, second: u32) -> Comment {
    Comment { created_at: at(20) + TimeDelta::seconds(i64::from(second)), ..comment(id, "alex", 0) }
}

/// A completed run's observation: `comments` on the draft PR, `seen` the ids the completion recorded.
fn completed_seeing(seen: &[&str], comments: Vec<Comment>) -> Observation {
    Observation {
        comments_at_completion: Some(seen.iter().map(|s| s.to_string()).collect()),
        ..pr_obs(|p| p.comments = comments)
    }
}

fn with_pr(mut o: Observation, f: impl FnOnce(&mut PrSnapshot)) -> Observation {
    let mut snapshot = pr();
    f(&mut snapshot);
    o.pr = Some(snapshot);
    o
}

fn pr_obs(f: impl FnOnce(&mut PrSnapshot)) -> Observation {
    with_pr(obs(), f)
}

fn last(kind: WorkerKind, outcome: WorkerOutcome, minute: u32, streak: u32) -> Option<LastWorker> {
    Some(LastWorker { kind, agent: "claude".into(), ended_at: at(minute), outcome, streak })
}

fn reviewed(mut r: Run, verdict: &str, sha: &str) -> Run {
    r.review_verdict = Some(verdict.parse().unwrap());
    r.review_sha = Some(sha.into());
    r
}

/// The run recorded `sha` as its head this long before now.
fn at_head_for(mut r: Run, sha: &str, hours: i64) -> Run {
    r.head_sha = Some(sha.into());
    r.head_seen_at = Some(now() - TimeDelta::hours(hours));
    r
}

fn notify(key: &str, text: &str) -> Action {
    Action::Notify { notice: Notice { kind: NoticeKind::NeedsHuman, key: key.into(), text: text.into() } }
}

fn start(kind: WorkerKind) -> Action {
    Action::StartWorker { kind, move_to: None, ci_attempt: None }
}

fn to(state: RunState) -> Action {
    Action::Transition { to: state, pr: None, notify: None, stop_worker: false }
}

fn told(state: RunState, kind: NoticeKind, key: &str, text: &str) -> Action {
    Action::Transition {
        to: state,
        pr: None,
        notify: Some(Notice { kind, key: key.into(), text: text.into() }),
        stop_worker: false,
    }
}

struct Row {
    name: &'static str,
    run: Run,
    obs: Observation,
    policy: Policy,
    want: Action,
    why: &'static str,
}

fn row(name: &'static str, run: Run, obs: Observation, want: Action, why: &'static str) -> Row {
    Row { name, run, obs, policy: policy(), want, why }
}

fn rows() -> Vec<Row> {
    use CheckStatus::*;
    use RunState::*;
    use WorkerKind as K;
    use WorkerOutcome as O;

    let green_reviewed = reviewed(run(Pr), "pass", HEAD);
    let abandoned_text = "CI still fails at abc1234 (checks: build) after 3 fix_ci attempt(s) of 3.";
    let ready_text =
        "PR #7 is ready: CI and required checks green, nothing unresolved, review passed at abc1234.";
    let overdue_key = format!("checks_timeout:{HEAD}");
    let never_reported = "PR #7 has waited 3h at abc1234 for checks that have not finished: build (never \
        reported). No agent is started for this and executor keeps waiting; look at the CI (or raise \
        runner.check_timeout, now 2h).";
    let error_key = format!("ci_error:{HEAD}");
    let could_not_run = "CI could not run at abc1234 on PR #7 (checks: ci): CI could not start: CI program \
        \"make-ci\" was not found or is not executable. This is not a code failure, so no agent is started; \
        fix the CI setup, then a new commit on the branch runs CI again.";
    let errored = || Check {
        summary: Some(
            "CI could not start: CI program \"make-ci\" was not found or is not executable\nmore".into(),
        ),
        ..check("ci", Error)
    };
    let triggered_no_check = || Observation {
        ci_triggered_for: Some(HEAD.into()),
        ci_trigger: Some(CiTrigger::Dispatched),
        ..pr_obs(|p| p.checks = vec![])
    };

    vec![
        // queued
        row(
            "queued + free slot → queued worker, moving to in_progress",
            run(Queued),
            obs(),
            Action::StartWorker { kind: K::Queued, move_to: Some(InProgress), ci_attempt: None },
            "The run is queued. Starting a queued worker.",
        ),
        row(
            "queued + no free slot → wait",
            run(Queued),
            Observation { free_slot: false, ..obs() },
            Action::Wait,
            "No free worker slot",
        ),
        // any state with a live worker
        row(
            "in_progress with a live worker → wait",
            Run { worker_pid: Some(4242), ..run(InProgress) },
            Observation { worker_alive: true, ..obs() },
            Action::Wait,
            "A worker is alive for this run (pid 4242); never a second one.",
        ),
        row(
            "queued with a live worker (crash between start and transition) → wait",
            run(Queued),
            Observation { worker_alive: true, ..obs() },
            Action::Wait,
            "A worker is alive",
        ),
        row(
            "pr with failing CI but a live worker → wait",
            run(Pr),
            Observation { worker_alive: true, ..pr_obs(|p| p.checks = vec![check("build", Failure)]) },
            Action::Wait,
            "A worker is alive",
        ),
        // in_progress
        row(
            "in_progress, PR exists for the branch → pr, recording it",
            run(InProgress),
            pr_obs(|_| {}),
            Action::Transition {
                to: Pr,
                pr: Some(PrRef { number: 7, url: "https://example.test/pr/7".into() }),
                notify: None,
                stop_worker: false,
            },
            "PR #7 exists for branch executor/1207-fix-login; recording it.",
        ),
        row(
            "in_progress, no PR, branch has commits → the runner opens the PR (on every forge)",
            run(InProgress),
            Observation { branch_has_commits: true, ..obs() },
            Action::OpenPr,
            "Branch executor/1207-fix-login has commits and no pull request; opening one.",
        ),
        row(
            "in_progress, no PR, no commits → resume",
            run(InProgress),
            obs(),
            start(K::InProgress),
            "No live worker and no pull request for branch executor/1207-fix-login yet. Starting an in_progress worker.",
        ),
        row(
            "in_progress after the runner's shutdown interrupted the worker → resume at once",
            run(InProgress),
            Observation { last_worker: last(K::InProgress, O::Interrupted, 29, 1), ..obs() },
            start(K::InProgress),
            "Starting",
        ),
        row(
            "in_progress, queued worker ended just now without a PR → back off",
            run(InProgress),
            Observation { last_worker: last(K::Queued, O::Ok, 30, 1), ..obs() },
            Action::Wait,
            "Backing off: the last queued worker ended without reaching its goal at 12:30:00; retry after 12:31:00.",
        ),
        row(
            "in_progress, back-off elapsed → resume",
            run(InProgress),
            Observation { last_worker: last(K::Queued, O::Ok, 28, 1), ..obs() },
            start(K::InProgress),
            "Starting an in_progress worker.",
        ),
        row(
            "in_progress, back-off grows with failures (2 stuck → 2 min)",
            Run { worker_stuck_count: 2, ..run(InProgress) },
            Observation { last_worker: last(K::InProgress, O::Stuck, 29, 2), ..obs() },
            Action::Wait,
            "retry after 12:31:00",
        ),
        row(
            "queued, over the run's cap, no free slot → wait, the cap and the amounts said (issue 35, item 5)",
            run(Queued),
            Observation { free_slot: false, budget: Some(stop(BudgetCap::Run, 1.0, 0.96)), ..obs() },
            Action::Wait,
            "The run is queued. Run 1 has spent $0.96 of its $1.00 budget (budget.per_run_usd): $0.04 left is below the $0.05 minimum launch",
        ),
        row(
            "in_progress, the day's cap spent, free slot → wait until the day turns",
            run(InProgress),
            Observation { budget: Some(stop(BudgetCap::Day, 50.0, 50.5)), ..obs() },
            Action::Wait,
            "today of the $50.00 daily budget (budget.per_day_usd): $0.50 over; no worker starts until the day turns at 2026-05-02 00:00 UTC",
        ),
        row(
            "in_progress, back-off elapsed but no free slot → wait",
            run(InProgress),
            Observation { free_slot: false, ..obs() },
            Action::Wait,
            "No free worker slot.",
        ),
        row(
            "in_progress after max_stuck stuck or failed workers → abandoned, human told",
            Run { worker_stuck_count: 3, ..run(InProgress) },
            Observation { last_worker: last(K::InProgress, O::Failed, 1, 3), ..obs() },
            told(
                Abandoned,
                NoticeKind::Abandoned,
                "abandoned",
                "No live worker and no pull request for branch executor/1207-fix-login yet. Giving up: 3 worker(s) stuck or failed (limit 3).",
            ),
            "Giving up: 3 worker(s) stuck or failed (limit 3).",
        ),
        // pr: merged / closed come first, even over a live worker
        row(
            "pr, PR merged → complete",
            run(Pr),
            pr_obs(|p| p.state = PrState::Merged),
            to(Complete),
            "PR #7 was merged.",
        ),
        row(
            "pr, PR closed unmerged → abandoned, human told",
            run(Pr),
            pr_obs(|p| p.state = PrState::Closed),
            told(Abandoned, NoticeKind::Abandoned, "abandoned", "PR #7 was closed without merging."),
            "closed without merging",
        ),
        row(
            "pr, PR closed while a worker runs → abandoned and the worker stopped",
            run(Pr),
            Observation { worker_alive: true, ..pr_obs(|p| p.state = PrState::Closed) },
            Action::Transition {
                to: Abandoned,
                pr: None,
                notify: Some(Notice {
                    kind: NoticeKind::Abandoned,
                    key: "abandoned".into(),
                    text: "PR #7 was closed without merging.".into(),
                }),
                stop_worker: true,
            },
            "closed",
        ),
        row(
            "pr but the forge shows no PR → wait for a human",
            run(Pr),
            obs(),
            Action::Wait,
            "shows no pull request for branch executor/1207-fix-login",
        ),
        // pr: labels and CI trigger
        row(
            "pr, draft missing a required label → add it, no worker",
            run(Pr),
            pr_obs(|p| p.labels = vec!["bug".into()]),
            Action::AddLabels { labels: vec!["executor".into()] },
            "Draft PR #7 lacks required labels: executor.",
        ),
        row(
            "pr, ready (not draft) PR without the label → labels not enforced",
            reviewed(run(Pr), "pass", HEAD),
            pr_obs(|p| {
                p.draft = false;
                p.labels = vec![];
            }),
            told(Complete, NoticeKind::Completed, &format!("completed:{HEAD}"), ready_text),
            "ready",
        ),
        row(
            "pr, no CI at all for this head → trigger CI",
            run(Pr),
            pr_obs(|p| p.checks = vec![Check { sha: OLD.into(), ..check("build", Failure) }]),
            Action::TriggerCi { sha: HEAD.into() },
            "No CI has run at abc1234; triggering it.",
        ),
        Row {
            policy: Policy { check_grace: Duration::from_secs(60), ..policy() },
            ..row(
                "pr (GitHub), no check at a head first seen now → wait for checks to register",
                run(Pr),
                pr_obs(|p| p.checks = vec![]),
                Action::Wait,
                "No check has reported at abc1234 yet; checks get 1m to register after a push",
            )
        },
        Row {
            policy: Policy { check_grace: Duration::from_secs(60), ..policy() },
            ..row(
                "pr (GitHub), still no check after the grace period → trigger CI",
                at_head_for(run(Pr), HEAD, 1),
                pr_obs(|p| p.checks = vec![]),
                Action::TriggerCi { sha: HEAD.into() },
                "No CI has run at abc1234; triggering it.",
            )
        },
        row(
            "pr, conflicts with its base → fix_conflicts (before CI, which may not run on it)",
            run(Pr),
            pr_obs(|p| {
                p.mergeable = Mergeable::Conflicting;
                p.checks = vec![];
            }),
            start(K::FixConflicts),
            "PR #7 conflicts with its base branch at abc1234; fix_conflicts attempt 1 of 3.",
        ),
        row(
            "pr, still conflicting after max_conflict_attempts → abandoned, human told",
            run(Pr),
            Observation { conflict_attempts: 3, ..pr_obs(|p| p.mergeable = Mergeable::Conflicting) },
            told(
                Abandoned,
                NoticeKind::Abandoned,
                "abandoned",
                "PR #7 still conflicts with its base at abc1234 after 3 fix_conflicts attempt(s) of 3.",
            ),
            "after 3 fix_conflicts attempt(s)",
        ),
        row(
            "pr, a fix_conflicts worker just ended without resolving → back-off, not a streak abandon",
            run(Pr),
            Observation {
                conflict_attempts: 1,
                last_worker: last(K::FixConflicts, O::Ok, 59, 5),
                ..pr_obs(|p| p.mergeable = Mergeable::Conflicting)
            },
            Action::Wait,
            "Backing off",
        ),
        row(
            "pr, all green and reviewable but mergeability UNKNOWN → wait, observe again",
            reviewed(run(Pr), "pass", HEAD),
            pr_obs(|p| p.mergeable = Mergeable::Unknown),
            Action::Wait,
            "still computing whether PR #7 can merge",
        ),
        row(
            "pr, no CI yet but already triggered for this head → wait, not again",
            run(Pr),
            triggered_no_check(),
            Action::Wait,
            "CI was triggered at abc1234 but no check has reported yet.",
        ),
        row(
            "pr, triggered for an older head → trigger again for the new head",
            run(Pr),
            Observation { ci_triggered_for: Some(OLD.into()), ..pr_obs(|p| p.checks = vec![]) },
            Action::TriggerCi { sha: HEAD.into() },
            "triggering",
        ),
        // pr: waits for checks end with the human told (check_timeout at one head)
        row(
            "pr, CI triggered, no check within check_timeout → wait",
            at_head_for(run(Pr), HEAD, 1),
            triggered_no_check(),
            Action::Wait,
            "CI was triggered at abc1234 but no check has reported yet.",
        ),
        row(
            "pr, CI triggered, no check for check_timeout at this head → tell the human once",
            at_head_for(run(Pr), HEAD, 3),
            triggered_no_check(),
            notify(&overdue_key, never_reported),
            never_reported,
        ),
        row(
            "pr, checks overdue and the human was told → keep waiting",
            at_head_for(run(Pr), HEAD, 3),
            Observation { notices_sent: vec![overdue_key.clone()], ..triggered_no_check() },
            Action::Wait,
            "CI was triggered at abc1234 but no check has reported yet. The human was told the checks are overdue; still waiting.",
        ),
        row(
            "pr, told about an older head, overdue again at this one → tell again (key per head)",
            at_head_for(run(Pr), HEAD, 3),
            Observation { notices_sent: vec![format!("checks_timeout:{OLD}")], ..triggered_no_check() },
            notify(&overdue_key, never_reported),
            "has waited 3h",
        ),
        row(
            "pr, the run's head is older than the PR's (seen just now) → wait, the clock restarts",
            at_head_for(run(Pr), OLD, 30),
            triggered_no_check(),
            Action::Wait,
            "no check has reported yet.",
        ),
        row(
            "pr, when the head was first seen is unknown → wait",
            Run { head_sha: Some(HEAD.into()), ..run(Pr) },
            triggered_no_check(),
            Action::Wait,
            "no check has reported yet.",
        ),
        row(
            "pr, a check pending past check_timeout → tell the human",
            at_head_for(run(Pr), HEAD, 3),
            pr_obs(|p| p.checks = vec![check("build", Pending), check("lint", Success)]),
            notify(
                &overdue_key,
                "PR #7 has waited 3h at abc1234 for checks that have not finished: build (pending). No agent is \
                 started for this and executor keeps waiting; look at the CI (or raise runner.check_timeout, now 2h).",
            ),
            "build (pending)",
        ),
        row(
            "pr, green but a required check never reported for check_timeout → tell the human",
            at_head_for(green_reviewed.clone(), HEAD, 3),
            pr_obs(|p| p.checks = vec![check("lint", Success)]),
            notify(&overdue_key, never_reported),
            "build (never reported)",
        ),
        row(
            "pr, green but a required check skipped (drafts) for check_timeout → tell the human",
            at_head_for(run(Pr), HEAD, 3),
            pr_obs(|p| p.checks = vec![check("build", Skipped)]),
            notify(
                &overdue_key,
                "PR #7 has waited 3h at abc1234 for checks that have not finished: build (skipped). No agent is \
                 started for this and executor keeps waiting; look at the CI (or raise runner.check_timeout, now 2h).",
            ),
            "build (skipped)",
        ),
        // pr: CI that could not run is for a human, never for fix_ci
        row(
            "pr, a check could not run at head → tell the human once, no fix_ci",
            run(Pr),
            pr_obs(|p| p.checks = vec![errored()]),
            notify(&error_key, could_not_run),
            could_not_run,
        ),
        row(
            "pr, a check could not run and the human was told → wait",
            run(Pr),
            Observation { notices_sent: vec![error_key.clone()], ..pr_obs(|p| p.checks = vec![errored()]) },
            Action::Wait,
            "CI could not run at abc1234 (checks: ci) and the human was told",
        ),
        row(
            "pr, one check could not run and another failed → the human first, no fix_ci",
            run(Pr),
            pr_obs(|p| p.checks = vec![check("build", Failure), errored()]),
            notify(&error_key, could_not_run),
            "This is not a code failure",
        ),
        row(
            "pr, an older head's check could not run, the head failed → fix_ci",
            run(Pr),
            pr_obs(|p| p.checks = vec![Check { sha: OLD.into(), ..errored() }, check("build", Failure)]),
            Action::StartWorker { kind: K::FixCi, move_to: None, ci_attempt: Some(1) },
            "fix_ci attempt 1 of 3",
        ),
        // pr: CI
        row(
            "pr, CI running → wait this tick",
            run(Pr),
            pr_obs(|p| p.checks = vec![check("build", Pending), check("lint", Failure)]),
            Action::Wait,
            "CI is running at abc1234 (pending: build).",
        ),
        row(
            "pr, CI failed at head → fix_ci, attempt 1",
            run(Pr),
            pr_obs(|p| p.checks = vec![check("build", Failure), check("lint", Success)]),
            Action::StartWorker { kind: K::FixCi, move_to: None, ci_attempt: Some(1) },
            "CI failed at abc1234 (checks: build); fix_ci attempt 1 of 3. Starting a fix_ci worker.",
        ),
        row(
            "pr, CI still failing right after a fix_ci ended → back off before attempt 2",
            Run { ci_attempts: 1, ..run(Pr) },
            Observation {
                last_worker: last(K::FixCi, O::Ok, 30, 1),
                ..pr_obs(|p| p.checks = vec![check("build", TimedOut)])
            },
            Action::Wait,
            "fix_ci attempt 2 of 3. Backing off",
        ),
        row(
            "pr, CI failed, fix_ci attempts left and back-off over → fix_ci attempt 3",
            Run { ci_attempts: 2, ..run(Pr) },
            Observation {
                last_worker: last(K::FixCi, O::Ok, 20, 2),
                ..pr_obs(|p| p.checks = vec![check("build", Failure)])
            },
            Action::StartWorker { kind: K::FixCi, move_to: None, ci_attempt: Some(3) },
            "fix_ci attempt 3 of 3",
        ),
        row(
            "pr, CI failed after an interrupted fix_ci → the same attempt again, at once",
            Run { ci_attempts: 1, ..run(Pr) },
            Observation {
                last_worker: last(K::FixCi, O::Interrupted, 30, 1),
                ..pr_obs(|p| p.checks = vec![check("build", Failure)])
            },
            Action::StartWorker { kind: K::FixCi, move_to: None, ci_attempt: Some(1) },
            "fix_ci attempt 1 of 3",
        ),
        row(
            "pr, last fix_ci attempt interrupted → not abandoned, attempt 3 again",
            Run { ci_attempts: 3, ..run(Pr) },
            Observation {
                last_worker: last(K::FixCi, O::Interrupted, 30, 1),
                ..pr_obs(|p| p.checks = vec![check("build", Failure)])
            },
            Action::StartWorker { kind: K::FixCi, move_to: None, ci_attempt: Some(3) },
            "fix_ci attempt 3 of 3",
        ),
        row(
            "pr, CI failed and ci_attempts exhausted → abandoned, human told",
            Run { ci_attempts: 3, ..run(Pr) },
            pr_obs(|p| p.checks = vec![check("build", Failure)]),
            told(Abandoned, NoticeKind::Abandoned, "abandoned", abandoned_text),
            abandoned_text,
        ),
        // pr: comments
        row(
            "pr, CI green, unresolved trusted comment → fix_comments",
            run(Pr),
            pr_obs(|p| p.comments = vec![comment("c1", "alex", 5)]),
            start(K::FixComments),
            "1 unresolved comment(s) by alex on PR #7 at abc1234.",
        ),
        row(
            "pr, CI failed and comments unresolved → fix_ci first",
            run(Pr),
            pr_obs(|p| {
                p.checks = vec![check("build", Failure)];
                p.comments = vec![comment("c1", "alex", 5)];
            }),
            Action::StartWorker { kind: K::FixCi, move_to: None, ci_attempt: Some(1) },
            "CI failed",
        ),
        row(
            "pr, only an untrusted comment → ignored, review",
            run(Pr),
            pr_obs(|p| p.comments = vec![comment("c1", "mallory", 5)]),
            start(K::PrReview),
            "no passing review of this head",
        ),
        row(
            "pr, fix_comments left comments unresolved 3 times in a row → abandoned",
            run(Pr),
            Observation {
                last_worker: last(K::FixComments, O::NoProgress, 1, 3),
                ..pr_obs(|p| p.comments = vec![comment("c1", "alex", 5)])
            },
            told(
                Abandoned,
                NoticeKind::Abandoned,
                "abandoned",
                "1 unresolved comment(s) by alex on PR #7 at abc1234. Giving up: 3 fix_comments worker(s) in a row did not get it done (limit 3).",
            ),
            "in a row",
        ),
        // pr: a reviewer's stream of comments (issue 37, item 4)
        row(
            "pr, a 4th round of comments after 3 rounds answered → fix_comments at once, saying why",
            run(Pr),
            Observation {
                last_worker: last(K::FixComments, O::Ok, 30, 0),
                comment_rounds: 3,
                ..pr_obs(|p| p.comments = vec![comment("c4", "alex", 29)])
            },
            start(K::FixComments),
            "1 unresolved comment(s) by alex on PR #7 at abc1234: the 4th round of comments by alex (the 3 \
             before were answered). Starting a fix_comments worker.",
        ),
        row(
            "pr, a 12th round of two comments → fix_comments, the ordinal right",
            run(Pr),
            Observation {
                last_worker: last(K::FixComments, O::Ok, 30, 0),
                comment_rounds: 11,
                ..pr_obs(|p| p.comments = vec![comment("c12", "alex", 29), comment("c13", "alex", 29)])
            },
            start(K::FixComments),
            "2 unresolved comment(s) by alex on PR #7 at abc1234: the 12th round of comments by alex (the 11 before",
        ),
        row(
            "pr, rounds answered, then a worker that changed nothing → back off, not abandoned",
            run(Pr),
            Observation {
                last_worker: last(K::FixComments, O::NoProgress, 30, 1),
                comment_rounds: 3,
                ..pr_obs(|p| p.comments = vec![comment("c4", "alex", 29)])
            },
            Action::Wait,
            "Backing off: the last fix_comments worker ended without changing anything at 12:30:00",
        ),
        row(
            "pr, rounds answered, then 3 workers in a row that did not get theirs done → abandoned",
            run(Pr),
            Observation {
                last_worker: last(K::FixComments, O::Failed, 1, 3),
                comment_rounds: 5,
                ..pr_obs(|p| p.comments = vec![comment("c6", "alex", 0)])
            },
            told(
                Abandoned,
                NoticeKind::Abandoned,
                "abandoned",
                "1 unresolved comment(s) by alex on PR #7 at abc1234: the 6th round of comments by alex (the 5 \
                 before were answered). Giving up: 3 fix_comments worker(s) in a row did not get it done \
                 (limit 3).",
            ),
            "Giving up: 3 fix_comments worker(s) in a row",
        ),
        // pr: review and completion
        row(
            "pr, CI green, nothing unresolved, never reviewed → pr_review",
            run(Pr),
            pr_obs(|_| {}),
            start(K::PrReview),
            "CI green and nothing unresolved at abc1234, but no passing review of this head. Starting a pr_review worker.",
        ),
        row(
            "pr, review passed but at an older head → pr_review again",
            reviewed(run(Pr), "pass", OLD),
            pr_obs(|_| {}),
            start(K::PrReview),
            "no passing review of this head",
        ),
        row(
            "pr, fix_comments just finished → pr_review starts without back-off",
            run(Pr),
            Observation { last_worker: last(K::FixComments, O::Ok, 30, 1), ..pr_obs(|_| {}) },
            start(K::PrReview),
            "Starting a pr_review worker.",
        ),
        row(
            "pr, green + reviewed green at head + required checks green → complete, human told",
            green_reviewed.clone(),
            pr_obs(|_| {}),
            told(Complete, NoticeKind::Completed, &format!("completed:{HEAD}"), ready_text),
            ready_text,
        ),
        row(
            "pr, green and reviewed but a required check is missing → wait",
            green_reviewed.clone(),
            pr_obs(|p| p.checks = vec![check("lint", Success)]),
            Action::Wait,
            "CI is green at abc1234 but required checks have not reported: build.",
        ),
        row(
            "pr, reviewed green at head but a trusted comment arrived since → fix_comments",
            green_reviewed,
            pr_obs(|p| p.comments = vec![comment("c1", "alex", 25)]),
            start(K::FixComments),
            "unresolved comment",
        ),
        row(
            "pr, first failed review at head → fix_comments on its findings (round 1 of 2)",
            reviewed(run(Pr), "fail", HEAD),
            Observation { failed_reviews: 1, ..pr_obs(|_| {}) },
            start(K::FixComments),
            "The review failed at abc1234 (review round 1 of 2); fix_comments works on its findings.",
        ),
        row(
            "pr, second failed review at head → fix_comments again (round 2 of 2)",
            reviewed(run(Pr), "fail", HEAD),
            Observation { failed_reviews: 2, ..pr_obs(|_| {}) },
            start(K::FixComments),
            "(review round 2 of 2)",
        ),
        row(
            "pr, review failed after max_review_rounds, nothing unresolved → tell the human once",
            reviewed(run(Pr), "fail", HEAD),
            Observation { failed_reviews: 3, ..pr_obs(|_| {}) },
            Action::Notify {
                notice: Notice {
                    kind: NoticeKind::NeedsHuman,
                    key: format!("review_failed:{HEAD}"),
                    text: "The review of PR #7 failed at abc1234 after 3 round(s) of fixes \
                           (runner.max_review_rounds = 2); a human must say what to fix."
                        .into(),
                },
            },
            "a human must say what to fix",
        ),
        row(
            "pr, review failed at head and the human was told → wait",
            reviewed(run(Pr), "fail", HEAD),
            Observation {
                notices_sent: vec![format!("review_failed:{HEAD}")],
                failed_reviews: 3,
                ..pr_obs(|_| {})
            },
            Action::Wait,
            "the human was told; waiting for a trusted comment or a new commit",
        ),
        row(
            "pr, review failed at head and a trusted human commented → fix_comments",
            reviewed(run(Pr), "fail", HEAD),
            pr_obs(|p| p.comments = vec![comment("c1", "alex", 25)]),
            start(K::FixComments),
            "unresolved",
        ),
        // complete
        row(
            "complete + draft + trusted comment after completion → back to pr",
            Run { completed_at: Some(at(20)), ..run(Complete) },
            pr_obs(|p| p.comments = vec![comment("old", "alex", 10), comment("new", "alex", 25)]),
            to(Pr),
            "alex commented on draft PR #7 after completion (1 new comment(s)); back to pr.",
        ),
        row(
            "complete + draft + only comments from before completion → nothing",
            Run { completed_at: Some(at(20)), ..run(Complete) },
            pr_obs(|p| p.comments = vec![comment("old", "alex", 10)]),
            Action::Wait,
            "no new trusted comment since",
        ),
        // Issue 20, item 9: GitHub stamps comments in whole seconds; the run completed at 12:20:31.468.
        row(
            "complete + trusted comment in the completion's second (whole-second stamp), not seen → back to pr",
            Run { completed_at: Some(at_ms(31, 468)), ..run(Complete) },
            completed_seeing(&["old"], vec![github_comment("old", 5), github_comment("new", 31)]),
            to(Pr),
            "alex commented on draft PR #7 after completion (1 new comment(s)); back to pr.",
        ),
        row(
            "complete + comment posted between the completing observation and the completion write → back to pr",
            Run { completed_at: Some(at_ms(31, 468)), ..run(Complete) },
            completed_seeing(&["old"], vec![github_comment("old", 5), github_comment("between", 30)]),
            to(Pr),
            "(1 new comment(s)); back to pr.",
        ),
        row(
            "complete + every comment seen at completion (same second included) → nothing",
            Run { completed_at: Some(at_ms(31, 468)), ..run(Complete) },
            completed_seeing(&["old", "same"], vec![github_comment("old", 5), github_comment("same", 31)]),
            Action::Wait,
            "no new trusted comment since",
        ),
        row(
            "complete before ids were recorded + comment in the completion's second → back to pr",
            Run { completed_at: Some(at_ms(31, 468)), ..run(Complete) },
            pr_obs(|p| p.comments = vec![github_comment("old", 5), github_comment("new", 31)]),
            to(Pr),
            "(1 new comment(s)); back to pr.",
        ),
        row(
            "complete before ids were recorded + comment a second before the completion → nothing",
            Run { completed_at: Some(at_ms(31, 468)), ..run(Complete) },
            pr_obs(|p| p.comments = vec![github_comment("old", 30)]),
            Action::Wait,
            "no new trusted comment since",
        ),
        row(
            "complete + ready (not draft) PR + new comment → nothing",
            Run { completed_at: Some(at(20)), ..run(Complete) },
            pr_obs(|p| {
                p.draft = false;
                p.comments = vec![comment("new", "alex", 25)];
            }),
            Action::Wait,
            "no open draft PR",
        ),
        row(
            "complete + merged PR → nothing, it stays complete",
            run(Complete),
            pr_obs(|p| p.state = PrState::Merged),
            Action::Wait,
            "The run is complete",
        ),
        row(
            "complete + PR closed without merging → abandoned, human told",
            Run { completed_at: Some(at(20)), ..run(Complete) },
            pr_obs(|p| p.state = PrState::Closed),
            told(
                Abandoned,
                NoticeKind::Abandoned,
                "abandoned",
                "PR #7 was closed without merging after the run completed.",
            ),
            "closed without merging after the run completed",
        ),
        // abandoned
        row(
            "abandoned → nothing, even with a new comment and a free slot",
            run(Abandoned),
            pr_obs(|p| p.comments = vec![comment("new", "alex", 25)]),
            Action::Wait,
            "The run is abandoned; nothing more to do.",
        ),
    ]
}

#[test]
fn decision_table() {
    let mut failures = Vec::new();
    for row in rows() {
        let got = decide(&row.run, &row.obs, &row.policy, now());
        if got.action != row.want || !got.why.contains(row.why) {
            failures.push(format!(
                "{}\n   want {:?} / why containing {:?}\n   got  {:?} / {:?}",
                row.name, row.want, row.why, got.action, got.why
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// On GitLab every reason and notice of the table names the merge request as GitLab does, and says
/// the same as on GitHub otherwise.
#[test]
fn on_gitlab_every_reason_says_merge_request_and_bang() {
    let as_gitlab = |text: &str| {
        text.replace("PR #7", "MR !7")
            .replace("pull request", "merge request")
            .replace("draft PR ", "draft MR ")
    };
    let json = |action: &Action| serde_json::to_string(action).expect("actions serialise");
    for row in rows() {
        let hub = decide(&row.run, &row.obs, &row.policy, now());
        let gitlab = Policy { words: ChangeWords::MERGE_REQUEST, ..row.policy.clone() };
        let lab = decide(&row.run, &row.obs, &gitlab, now());
        assert_eq!(lab.why, as_gitlab(&hub.why), "{}", row.name);
        assert_eq!(json(&lab.action), as_gitlab(&json(&hub.action)), "{}", row.name);
        for text in [lab.why.as_str(), json(&lab.action).as_str()] {
            assert!(!text.contains("PR") && !text.contains("pull request"), "{}: {text}", row.name);
        }
    }
}

#[test]
fn every_transition_decided_is_legal_from_its_state() {
    for row in rows() {
        let got = decide(&row.run, &row.obs, &row.policy, now());
        let target = match got.action {
            Action::Transition { to, .. } => Some(to),
            Action::StartWorker { move_to, .. } => move_to,
            _ => None,
        };
        if let Some(to) = target {
            assert!(row.run.state.check(to).is_ok(), "{}: {} → {to}", row.name, row.run.state);
        }
    }
}

#[test]
fn back_off_is_capped_and_huge_delays_do_not_panic() {
    let mut r = run(RunState::InProgress);
    r.worker_stuck_count = 2;
    let policy = Policy { max_stuck: 100, retry_backoff: Duration::from_secs(u64::MAX), ..policy() };
    let o = Observation { last_worker: last(WorkerKind::InProgress, WorkerOutcome::Failed, 0, 50), ..obs() };
    assert!(decide(&r, &o, &policy, now()).is_wait());

    // 50 attempts with a 1 s base: capped at 64 s, so 30 minutes later it starts.
    let policy = Policy { max_stuck: 100, retry_backoff: Duration::from_secs(1), ..policy };
    assert_eq!(decide(&r, &o, &policy, now()).action, start(WorkerKind::InProgress));
}

#[test]
fn decisions_serialise_for_the_store() {
    let d = decide(&run(RunState::Queued), &obs(), &policy(), now());
    let json = serde_json::to_value(&d).unwrap();
    assert_eq!(json["action"]["action"], "start_worker");
    assert_eq!(json["action"]["kind"], "queued");
    assert_eq!(json["action"]["move_to"], "in_progress");
    let back: crate::runner::Decision = serde_json::from_value(json).unwrap();
    assert_eq!(back, d);
}

/// Issue 34: the wait and the checks-overdue notice say what triggering CI did, and name the trigger as
/// the likely cause when it triggered nothing.
#[test]
fn a_wait_after_a_trigger_says_what_the_trigger_did() {
    let triggered = |trigger: Option<CiTrigger>| Observation {
        ci_triggered_for: Some(HEAD.into()),
        ci_trigger: trigger,
        ..pr_obs(|p| p.checks = vec![])
    };
    let waiting = |trigger| decide(&run(RunState::Pr), &triggered(trigger), &policy(), now());
    let cases = [
        (Some(CiTrigger::Dispatched), "CI was triggered at abc1234 but no check has reported yet."),
        (
            Some(CiTrigger::Rerun),
            "CI was triggered at abc1234 (the failed jobs of its last workflow run re-run) but no check has \
             reported yet.",
        ),
        (Some(CiTrigger::LocalCi), "CI was triggered at abc1234 but no check has reported yet."),
        (
            Some(CiTrigger::NotConfigured),
            "No check has reported at abc1234, and executor triggered no CI: ci_trigger is empty, so only a \
             push starts CI.",
        ),
        (
            Some(CiTrigger::NothingToRerun),
            "No check has reported at abc1234, and executor triggered no CI: ci_trigger = \"rerun\" found no \
             workflow run at this head to re-run.",
        ),
        // Recorded before schema v17: what the trigger did is not known, so it is not claimed.
        (None, "CI was asked for at abc1234 but no check has reported yet."),
    ];
    for (trigger, want) in cases {
        let got = waiting(trigger);
        assert_eq!((got.action, got.why.as_str()), (Action::Wait, want), "{trigger:?}");
    }

    // At check_timeout, the notice names a trigger that triggered nothing as the likely cause.
    let mut overdue = at_head_for(run(RunState::Pr), HEAD, 3);
    overdue.repo = Some("app".into());
    let notice = |trigger| match decide(&overdue, &triggered(trigger), &policy(), now()).action {
        Action::Notify { notice } => notice.text,
        other => panic!("{trigger:?}: not a notice: {other:?}"),
    };
    let head = "PR #7 has waited 3h at abc1234 for checks that have not finished: build (never reported).";
    let tail = "No agent is started for this and executor keeps waiting; look at the CI (or raise \
                runner.check_timeout, now 2h).";
    assert_eq!(
        notice(Some(CiTrigger::NotConfigured)),
        format!(
            "{head} The likely cause: executor triggered no CI at this head (repos.app.ci_trigger is empty) \
             and none started on push; set repos.app.ci_trigger = \"workflow:FILE\" to have FILE dispatched, \
             or push a commit. {tail}"
        )
    );
    assert_eq!(
        notice(Some(CiTrigger::NothingToRerun)),
        format!(
            "{head} The likely cause: executor triggered no CI at this head (repos.app.ci_trigger = \"rerun\" \
             found no workflow run at it to re-run); \"rerun:FILE\" would dispatch FILE instead, or push a \
             commit. {tail}"
        )
    );
    for trigger in [Some(CiTrigger::Dispatched), Some(CiTrigger::Rerun), None] {
        assert_eq!(notice(trigger), format!("{head} {tail}"), "{trigger:?}: no cause claimed");
    }
}

#[test]
fn a_task_that_needs_a_plan_gets_one_written_approved_then_code() {
    let queued = run(RunState::Queued);
    let start_kind = |d: &Decision| match d.action {
        Action::StartWorker { kind, move_to, .. } => Some((kind, move_to)),
        _ => None,
    };
    let with = |stage: PlanStage| Observation { plan: Some(stage), ..obs() };
    // No plan yet: a plan worker, and the run stays queued.
    let d = decide(&queued, &with(PlanStage::None), &policy(), now());
    assert_eq!(start_kind(&d), Some((WorkerKind::Plan, None)), "{}", d.why);
    // A plan waits: the human is told once, by a plan notice, then the run waits.
    let awaiting = with(PlanStage::Awaiting { id: 9, revision: 1 });
    let d = decide(&queued, &awaiting, &policy(), now());
    let Action::Notify { notice } = &d.action else { panic!("{d:?}") };
    assert_eq!((notice.kind, notice.key.as_str()), (NoticeKind::Plan, "plan:9"));
    assert!(notice.text.contains("executor plan approve 1"), "{}", notice.text);
    let told = Observation { notices_sent: vec!["plan:9".into()], ..awaiting };
    let d = decide(&queued, &told, &policy(), now());
    assert!(d.is_wait() && d.why.contains("Plan revision 1 waits for a person"), "{}", d.why);
    // Sent back: the next revision is written.
    let d = decide(&queued, &with(PlanStage::ChangesRequested { revision: 1 }), &policy(), now());
    assert_eq!(start_kind(&d), Some((WorkerKind::Plan, None)));
    assert!(d.why.contains("revision 2"), "{}", d.why);
    // Approved, or no plan needed: the implementation starts, moving the run on.
    for o in [with(PlanStage::Approved), obs()] {
        let d = decide(&queued, &o, &policy(), now());
        assert_eq!(start_kind(&d), Some((WorkerKind::Queued, Some(RunState::InProgress))), "{}", d.why);
    }
}

#[test]
fn an_open_question_is_told_once_reminded_once_and_waits() {
    let asked_at = now() - TimeDelta::hours(1);
    let q = OpenQuestion { id: 4, asked_at, text: "v1 or v2?".into() };
    // Whatever the pull request says (here CI failed), the run waits for the answer.
    let failing = pr_obs(|p| p.checks = vec![check("build", CheckStatus::Failure)]);
    let o = Observation { open_question: Some(q.clone()), ..failing };
    let d = decide(&run(RunState::Pr), &o, &policy(), now());
    let Action::Notify { notice } = &d.action else { panic!("{d:?}") };
    assert_eq!((notice.kind, notice.key.as_str()), (NoticeKind::Question, "question:4"));
    assert!(
        notice.text.contains("v1 or v2?") && notice.text.contains("executor answer 1"),
        "{}",
        notice.text
    );
    let told = Observation { notices_sent: vec!["question:4".into()], ..o };
    let d = decide(&run(RunState::Pr), &told, &policy(), now());
    assert!(d.is_wait() && d.why.contains("Waiting for an answer to question 4"), "{}", d.why);
    // After question_reminder, one reminder; after it, only waiting.
    let late = now() + TimeDelta::hours(24);
    let d = decide(&run(RunState::Pr), &told, &policy(), late);
    let Action::Notify { notice } = &d.action else { panic!("{d:?}") };
    assert_eq!((notice.kind, notice.key.as_str()), (NoticeKind::NeedsHuman, "question_reminder:4"));
    let reminded =
        Observation { notices_sent: vec!["question:4".into(), "question_reminder:4".into()], ..told };
    let d = decide(&run(RunState::Pr), &reminded, &policy(), late + TimeDelta::days(30));
    assert!(d.is_wait(), "never loops: {}", d.why);
    // A merged pull request still completes the run, question or not; a live worker is never doubled.
    let merged = with_pr(reminded.clone(), |p| p.state = PrState::Merged);
    let d = decide(&run(RunState::Pr), &merged, &policy(), now());
    assert!(matches!(d.action, Action::Transition { to: RunState::Complete, .. }), "{}", d.why);
}
