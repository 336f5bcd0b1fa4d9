//! A pull request as observed at one moment, in terms every forge can fill in.
//!
//! The GitHub forge fills it from one batched GraphQL query (draft, state, labels, head oid, the check
//! rollup's contexts, review threads and conversation comments); the local forge from its own rows.
//! Nothing here does I/O: the derived facts the runner decides on (the CI rollup at the head, the
//! unresolved trusted comments) are methods, so they are computed one way and never stored twice.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::config::Trust;

/// A reply whose body starts with this marks the comment it answers as handled (seed: "Last comment =
/// [ACKNOWLEDGED: ...] → treated as resolved"). Workers write it when they address a comment.
pub const ACK_PREFIX: &str = "[ACKNOWLEDGED:";

/// Whether a pull request is still open. A merged PR is never also "closed" here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrState {
    Open,
    Merged,
    /// Closed without being merged.
    Closed,
}

/// The state of one CI check. Forges map their vocabularies onto this one; for GitHub: a `CheckRun`'s
/// status QUEUED/IN_PROGRESS/WAITING/PENDING/REQUESTED → `Pending`, its conclusion otherwise
/// (STARTUP_FAILURE → `Failure`, STALE → `Cancelled`); a `StatusContext`'s EXPECTED/PENDING → `Pending`,
/// ERROR → `Failure`. Nothing on GitHub maps to `Error` yet: STARTUP_FAILURE is usually a broken workflow
/// file, which the agent's branch can fix, so it stays a `Failure`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// Queued or running.
    Pending,
    Success,
    Failure,
    Cancelled,
    TimedOut,
    /// Needs a human (e.g. approving a workflow run) before it can finish.
    ActionRequired,
    Skipped,
    Neutral,
    /// The check could not run at all (the local forge could not start the CI command: its directory,
    /// its program, its checkout). An infrastructure problem for a human, not a code failure: no agent
    /// is started for it.
    Error,
}

impl CheckStatus {
    pub fn is_pending(self) -> bool {
        matches!(self, CheckStatus::Pending)
    }

    /// The status as a word for sentences (`pending`, `timed_out`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Pending => "pending",
            CheckStatus::Success => "success",
            CheckStatus::Failure => "failure",
            CheckStatus::Cancelled => "cancelled",
            CheckStatus::TimedOut => "timed_out",
            CheckStatus::ActionRequired => "action_required",
            CheckStatus::Skipped => "skipped",
            CheckStatus::Neutral => "neutral",
            CheckStatus::Error => "error",
        }
    }

    pub fn is_error(self) -> bool {
        matches!(self, CheckStatus::Error)
    }

    /// Follows GitHub's own rollup: a cancelled, timed-out or blocked check is not green.
    pub fn is_failing(self) -> bool {
        matches!(
            self,
            CheckStatus::Failure
                | CheckStatus::Cancelled
                | CheckStatus::TimedOut
                | CheckStatus::ActionRequired
        )
    }
}

/// Whether a pull request can merge into its base, as the forge computed it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mergeable {
    /// No conflict with the base (GitHub: MERGEABLE; the local forge does not check).
    #[default]
    Mergeable,
    /// Conflicts with its base branch (GitHub: CONFLICTING, or mergeStateStatus DIRTY).
    Conflicting,
    /// The forge is still computing it (GitHub: UNKNOWN, for a while after a push or a base change).
    Unknown,
}

/// One CI check as reported for one commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub status: CheckStatus,
    /// The commit the check ran at. Only checks at the PR's head count for decisions.
    pub sha: String,
    pub url: Option<String>,
    /// A short excerpt of the output (local forge) or the check's summary (GitHub).
    pub summary: Option<String>,
    /// GitHub Actions: the job behind this check run, whose log a `fix_ci` worker is shown.
    #[serde(default)]
    pub job_id: Option<i64>,
}

/// What the checks at the head still wait for, the required ones counted ([`PrSnapshot::checks_awaited`]).
/// A check registering or finishing does not change a pull request on GitHub, so an observation that
/// awaits anything is asked again every tick, whatever the listing of pull requests says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChecksAwaited {
    /// Every check at the head finished, and every required one registered: only a change to the pull
    /// request (a push, a comment) can change what is decided.
    Nothing,
    /// No check has registered at the head yet.
    AnyCheck,
    /// A check at the head is queued or running.
    Running,
    /// The checks at the head are green but a required one has not registered yet: a `needs:`-gated job,
    /// a second workflow, an external status that reports after the others.
    UnregisteredRequired,
}

/// The CI verdict for the PR's head, derived from its checks by [`PrSnapshot::ci`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CiRollup {
    /// No check at all has reported for the head commit (GitHub: a null rollup).
    None,
    /// At least one check is still running. Takes precedence over failures so that a fix starts from the
    /// whole picture and does not push while other jobs still run.
    Pending,
    /// At least one check could not run (infrastructure). Beats failure: with CI itself broken, a code
    /// fix cannot be judged, so a human is told before any agent works on it.
    Error,
    Failure,
    Success,
}

/// A comment on the pull request: a conversation comment, or one in a review thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comment {
    /// The forge's id (GitHub node id; local forge row id).
    pub id: String,
    /// The author's login.
    pub author: String,
    pub body: String,
    pub created_at: DateTime<Utc>,
    /// File and line for review comments on code.
    pub path: Option<String>,
    pub line: Option<i64>,
    /// The review thread this comment belongs to; `None` for conversation comments.
    pub thread_id: Option<String>,
    /// The thread was marked resolved on the forge.
    pub thread_resolved: bool,
    /// The comment this one answers (local forge replies; GitHub review replies).
    pub in_reply_to: Option<String>,
    /// Written by one of our agents, or by executor itself: known from the ids executor recorded when it
    /// posted them, never from the author or the text. Such comments never make a worker act.
    pub by_agent: bool,
    /// Written by a person on executor's dashboard (`author` is then that person): known from the ids
    /// executor recorded when it posted them, never from the author or the text. Trusted whatever
    /// `repos.NAME.trusted_authors` says, since only someone let in to the dashboard can post one.
    #[serde(default)]
    pub from_dashboard: bool,
    /// GitHub: the author's association with the repository (`OWNER`, `MEMBER`, `COLLABORATOR`,
    /// `CONTRIBUTOR`, `NONE`, …), for `repos.NAME.trust_associations`.
    #[serde(default)]
    pub author_association: Option<String>,
}

impl Comment {
    pub fn is_acknowledgement(&self) -> bool {
        self.body.trim_start().starts_with(ACK_PREFIX)
    }

    /// Trusted means: not an agent, and written on executor's dashboard, or the author is a configured login (compared ignoring case, as
    /// forge logins are) or has a configured association with the repository. Nothing configured
    /// trusts nobody.
    pub fn is_by_trusted_human(&self, trust: &Trust) -> bool {
        !self.by_agent
            && (self.from_dashboard || trust.trusts(&self.author, self.author_association.as_deref()))
    }

    /// Does `reply` acknowledge this comment? It must start with [`ACK_PREFIX`], come from an agent or a
    /// trusted human (so a stranger cannot silence a reviewer), and either answer this comment directly
    /// or come later in the same review thread (an acknowledgement at the end of a thread covers the
    /// thread up to that point).
    fn is_acknowledged_by(&self, reply: &Comment, trust: &Trust) -> bool {
        if reply.id == self.id || !reply.is_acknowledgement() {
            return false;
        }
        if !(reply.by_agent || reply.is_by_trusted_human(trust)) {
            return false;
        }
        let answers_directly = reply.in_reply_to.as_deref() == Some(self.id.as_str());
        let later_in_thread = self.thread_id.is_some()
            && reply.thread_id == self.thread_id
            && reply.created_at >= self.created_at;
        answers_directly || later_in_thread
    }
}

/// A pull request's identity, recorded on the run when it reaches `pr`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrRef {
    pub number: i64,
    pub url: String,
}

/// A pull request as observed at `observed_at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrSnapshot {
    pub number: i64,
    pub url: String,
    pub state: PrState,
    pub draft: bool,
    pub head_sha: String,
    pub labels: Vec<String>,
    #[serde(default)]
    pub mergeable: Mergeable,
    /// Checks as the forge reported them; may include checks at older commits (the local forge keeps
    /// history). When one name appears twice at the head, the later entry is the newer run.
    pub checks: Vec<Check>,
    /// In the order the forge returned them; decisions use `created_at`, not the order.
    pub comments: Vec<Comment>,
    pub observed_at: DateTime<Utc>,
    /// What the pull request changes against its base, when the forge said (snapshots stored before
    /// this was observed have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<DiffStat>,
}

/// A pull request's change against its base: files changed, lines added and removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffStat {
    pub files: i64,
    pub additions: i64,
    pub deletions: i64,
}

impl PrSnapshot {
    /// Marks the comments people posted from the dashboard (by the ids executor recorded) as theirs: the
    /// person is the author, whatever login the forge shows (on GitHub, executor's token's).
    pub fn mark_dashboard_comments(&mut self, people: &crate::store::PersonComments) {
        for c in &mut self.comments {
            if let Some(person) = people.get(&c.id) {
                c.author.clone_from(person);
                c.from_dashboard = true;
                c.by_agent = false;
            }
        }
    }

    pub fn pr_ref(&self) -> PrRef {
        PrRef { number: self.number, url: self.url.clone() }
    }

    /// The latest check of each name that ran at the head commit, in first-seen order.
    pub fn checks_at_head(&self) -> Vec<&Check> {
        let mut latest: Vec<&Check> = Vec::new();
        for check in self.checks.iter().filter(|c| c.sha == self.head_sha) {
            match latest.iter_mut().find(|c| c.name == check.name) {
                Some(slot) => *slot = check,
                None => latest.push(check),
            }
        }
        latest
    }

    /// The CI verdict at the head: pending beats error beats failure beats success; no checks at all is
    /// `None`.
    pub fn ci(&self) -> CiRollup {
        let checks = self.checks_at_head();
        if checks.is_empty() {
            CiRollup::None
        } else if checks.iter().any(|c| c.status.is_pending()) {
            CiRollup::Pending
        } else if checks.iter().any(|c| c.status.is_error()) {
            CiRollup::Error
        } else if checks.iter().any(|c| c.status.is_failing()) {
            CiRollup::Failure
        } else {
            CiRollup::Success
        }
    }

    /// Names of the head's checks in the given condition, for human-readable reasons.
    pub fn check_names_where(&self, pred: impl Fn(CheckStatus) -> bool) -> Vec<String> {
        self.checks_at_head().into_iter().filter(|c| pred(c.status)).map(|c| c.name.clone()).collect()
    }

    /// Required checks that are not green at the head: missing, pending or failing. A required check
    /// that never reported is not green — "nothing failed" is not "it passed".
    pub fn required_checks_not_green(&self, required: &[String]) -> Vec<String> {
        let at_head = self.checks_at_head();
        required
            .iter()
            .filter(|name| !at_head.iter().any(|c| &c.name == *name && c.status == CheckStatus::Success))
            .cloned()
            .collect()
    }

    /// What the checks at the head still wait for. A required check missing while others failed or
    /// could not run awaits nothing: the run acts on the failure, and its fix is a push.
    pub fn checks_awaited(&self, required: &[String]) -> ChecksAwaited {
        match self.ci() {
            CiRollup::None => ChecksAwaited::AnyCheck,
            CiRollup::Pending => ChecksAwaited::Running,
            CiRollup::Error | CiRollup::Failure => ChecksAwaited::Nothing,
            CiRollup::Success => {
                let at_head = self.checks_at_head();
                match required.iter().all(|name| at_head.iter().any(|c| &c.name == name)) {
                    true => ChecksAwaited::Nothing,
                    false => ChecksAwaited::UnregisteredRequired,
                }
            }
        }
    }

    /// Required labels the PR does not carry (compared ignoring case, as GitHub does).
    pub fn missing_labels(&self, required: &[String]) -> Vec<String> {
        required
            .iter()
            .filter(|want| !self.labels.iter().any(|l| l.eq_ignore_ascii_case(want)))
            .cloned()
            .collect()
    }

    /// Comments by trusted humans that still ask for work: not in a resolved thread, not themselves an
    /// acknowledgement, and not acknowledged by a later reply. Agent and untrusted comments never count.
    pub fn unresolved_trusted_comments(&self, trust: &Trust) -> Vec<&Comment> {
        self.comments
            .iter()
            .filter(|c| c.is_by_trusted_human(trust))
            .filter(|c| !c.thread_resolved && !c.is_acknowledgement())
            .filter(|c| !self.comments.iter().any(|reply| c.is_acknowledged_by(reply, trust)))
            .collect()
    }
}

#[cfg(test)]
mod tests;
