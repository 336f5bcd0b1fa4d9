//! The inputs and the output of [`super::decide`]: what the runner saw, the rules it follows, and the one
//! step it should take next. Plain data, serialisable, so the store can keep the last decision for
//! `runs show`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::config::Trust;
use crate::domain::{ChangeWords, CiTrigger, RunState, WorkerKind};
use crate::forge::{PrRef, PrSnapshot};

/// What the runner observed about one run this tick. The runner gathers it from the pool, the forge, the
/// git repository and the store; `decide` trusts it as the state of the world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// A live worker process exists for this run (checked by pid, not by the run's state).
    pub worker_alive: bool,
    /// The pool has room for one more worker.
    pub free_slot: bool,
    /// The pull request for the run's branch, if the forge has one (open, merged or closed).
    pub pr: Option<PrSnapshot>,
    /// The run's branch has commits that are not on the base branch.
    pub branch_has_commits: bool,
    /// The most recent worker of this run that has ended, for back-off and retry limits.
    pub last_worker: Option<LastWorker>,
    /// The head sha for which the runner last triggered CI, so CI is triggered once per head.
    pub ci_triggered_for: Option<String>,
    /// What triggering CI at `ci_triggered_for` did (maybe nothing: no `ci_trigger`, nothing to re-run);
    /// `None` when not recorded (a trigger from before schema v17).
    #[serde(default)]
    pub ci_trigger: Option<CiTrigger>,
    /// Keys ([`Notice::key`]) of the notices already sent for this run, so a notice goes out once.
    pub notices_sent: Vec<String>,
    /// Reviews of this run that failed: each is a round of `fix_comments` on its findings, up to
    /// [`Policy::max_review_rounds`].
    pub failed_reviews: u32,
    /// `fix_conflicts` workers started for this run (interrupted ones not counted).
    pub conflict_attempts: u32,
    /// A completed run: the ids of the comments in the observation that completed it, so that "new since
    /// the completion" is decided by id, not by time (GitHub stamps comments in whole seconds, so a
    /// comment posted just after the completion can carry an earlier time). `None` for a run completed
    /// before they were recorded: its comments are judged by time, to the whole second.
    #[serde(default)]
    pub comments_at_completion: Option<Vec<String>>,
    /// Rounds of trusted comments answered so far: `fix_comments` workers that were given comments no
    /// earlier worker had answered, and answered them. A reviewer who keeps commenting is why such a
    /// run keeps going, and the decision says so.
    #[serde(default)]
    pub comment_rounds: u32,
    /// Where the run's plan stands, when its task needs one approved before code (gathered for a
    /// `queued` run only: once code is being written the plan is settled). `None`: no plan needed.
    #[serde(default)]
    pub plan: Option<PlanStage>,
    /// The question a worker of this run asked that nobody has answered yet.
    #[serde(default)]
    pub open_question: Option<OpenQuestion>,
    /// A dollar cap that leaves too little for a worker (read only when one would start: the day's
    /// spend is a query). It comes before the free slot: a run no slot would let go on is not waiting
    /// for one.
    #[serde(default)]
    pub budget: Option<crate::budget::BudgetStop>,
}

/// Where a run that needs an approved plan stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "stage", rename_all = "snake_case")]
pub enum PlanStage {
    /// No plan written yet.
    None,
    /// This revision waits for a person (`id`: its row, the notice's key).
    Awaiting {
        id: i64,
        revision: i64,
    },
    /// This revision was sent back with changes requested: the next one is to be written.
    ChangesRequested {
        revision: i64,
    },
    Approved,
}

/// A question a worker ended with, unanswered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenQuestion {
    pub id: i64,
    pub asked_at: DateTime<Utc>,
    /// The question, as the notice quotes it.
    pub text: String,
}

/// The last worker of a run that has ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastWorker {
    pub kind: WorkerKind,
    /// The agent it ran (`claude`, `codex`, `command`): the next worker turns to the next one of
    /// `worker.fallback` when this one did not get its job done.
    #[serde(default)]
    pub agent: String,
    pub ended_at: DateTime<Utc>,
    pub outcome: WorkerOutcome,
    /// How many workers of this job ran back to back without getting it done, ending with this one
    /// (`queued` and `in_progress` are one job; interrupted workers are not counted). A `fix_comments`
    /// worker that answered a new round of comments got its job done: it ends the streak, so this is 0
    /// when it was the last one. Other jobs are done when the world says so (a pull request, green CI,
    /// a verdict acted on), so each of their workers counts.
    pub streak: u32,
}

/// How a worker process ended, as the supervisor recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerOutcome {
    /// Exited on its own and reported success. Whether it reached its end state is for the world to say.
    Ok,
    /// Exited on its own and reported success, but changed nothing: the head is where it started (and a
    /// `fix_comments` worker answered none of the comments it was given). Not stuck, but no progress.
    NoProgress,
    /// Exited with an error, or reported one.
    Failed,
    /// Killed by the watchdog (no output for the idle timeout, or over the hard timeout).
    Stuck,
    /// Stopped by the runner's own shutdown. Not the worker's fault: resumed at once, not counted.
    Interrupted,
}

/// The rules for one repository, from the configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    /// Give up after this many stuck or failed workers, or this many back-to-back workers of one job
    /// that did not get it done ([`LastWorker::streak`]; `fix_ci` and `fix_conflicts` excepted: their
    /// own attempt limits bound them).
    pub max_stuck: u32,
    /// Give up when CI still fails after this many `fix_ci` workers.
    pub max_ci_attempts: u32,
    /// Labels a draft pull request must carry (the runner adds the missing ones).
    pub required_labels: Vec<String>,
    /// Checks that must have passed at the head before a run completes; a missing one is not green.
    pub required_checks: Vec<String>,
    /// Whose comments make a worker act.
    pub trust: Trust,
    /// The first retry delay; it doubles with each further attempt, up to 64 times this.
    pub retry_backoff: Duration,
    /// Rounds of `fix_comments` on a failed review's findings before the human is told instead.
    pub max_review_rounds: u32,
    /// `fix_conflicts` attempts before the run is abandoned.
    pub max_conflict_attempts: u32,
    /// How long a new head may have no check before CI is triggered (GitHub registers checks a few
    /// seconds after a push); zero triggers at once (the local forge runs CI only when asked).
    pub check_grace: Duration,
    /// How long checks may take at one head (no check at all after CI was triggered, a required check
    /// missing, a check still pending) before the human is told, once per head. The wait goes on.
    pub check_timeout: Duration,
    /// How long a question waits unanswered before the human is reminded, once.
    #[serde(default)]
    pub question_reminder: Duration,
    /// How the repository's forge names a run's change in the reasons and notices `decide` writes.
    #[serde(skip)]
    pub words: ChangeWords,
}

/// What `decide` concluded, and why in one sentence naming the facts. The runner records both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub action: Action,
    pub why: String,
}

/// One step for the runner to perform. Each is idempotent given the observation it came from: after a
/// crash the next tick observes the world again and decides the remaining steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Nothing to do for this run this tick.
    Wait,
    /// Start a worker of `kind` in the run's worktree (creating it if needed). First move the run to
    /// `move_to` if given; when `ci_attempt` is given, set the run's `ci_attempts` to that number (set,
    /// not increment, so that replaying the step after a crash counts once).
    StartWorker { kind: WorkerKind, move_to: Option<RunState>, ci_attempt: Option<i32> },
    /// Move the run to `to` (the state machine checks it is legal). `pr`: record the PR's number and url.
    /// `notify`: tell the human. `stop_worker`: a worker is still alive and its work is moot (the PR was
    /// merged or closed) — stop it.
    Transition { to: RunState, pr: Option<PrRef>, notify: Option<Notice>, stop_worker: bool },
    /// Open a (draft) pull request for the run's branch. The next decision records it.
    OpenPr,
    /// Add these labels to the pull request.
    AddLabels { labels: Vec<String> },
    /// Trigger CI at this head, then record `ci_triggered_for = sha` and what the trigger did.
    TriggerCi { sha: String },
    /// Tell the human something without changing state (sent once per `key`).
    Notify { notice: Notice },
}

/// A message for the human: a forge comment with the configured @mention, and the webhook if configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notice {
    pub kind: NoticeKind,
    /// Identifies the notice within the run (e.g. `completed:<sha>`); the runner records it once sent
    /// and reports it back in [`Observation::notices_sent`].
    pub key: String,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeKind {
    /// Green, reviewed, ready for the human.
    Completed,
    /// Given up.
    Abandoned,
    /// The run cannot go on by itself and waits for a human.
    NeedsHuman,
    /// A plan waits for a person's approval (the tracker hears the plan itself).
    Plan,
    /// A worker asked a question and the run waits for the answer (the tracker hears it too).
    Question,
}

impl Decision {
    pub fn wait(why: impl Into<String>) -> Self {
        Decision { action: Action::Wait, why: why.into() }
    }

    pub fn is_wait(&self) -> bool {
        self.action == Action::Wait
    }
}
