use chrono::{DateTime, Utc};

use super::{IllegalTransition, ReviewVerdict, TaskGid, illegal};

/// Where a concrete run stands (table `executor_runs`, column `state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunState {
    /// Created for an approved task; no worker has started yet.
    Queued,
    /// A worker is (or was) working and no pull request exists yet.
    InProgress,
    /// A pull request exists; the pr sub-logic drives it.
    Pr,
    /// Reviewed, green, human told. Can come back to `pr` when a human comments on a draft, and is
    /// abandoned when its pull request is closed without merging (so the task can be worked again).
    Complete,
    /// Given up: closed unmerged, or out of attempts. Final.
    Abandoned,
}

super::named_enum!(RunState, "run state", {
    Queued => "queued",
    InProgress => "in_progress",
    Pr => "pr",
    Complete => "complete",
    Abandoned => "abandoned",
});

impl RunState {
    /// The states this one may move to. This table is the run's state machine.
    pub fn next(self) -> &'static [RunState] {
        use RunState::*;
        match self {
            Queued => &[InProgress, Abandoned],
            InProgress => &[Pr, Abandoned],
            Pr => &[Complete, Abandoned],
            Complete => &[Pr, Abandoned],
            Abandoned => &[],
        }
    }

    pub fn check(self, to: RunState) -> Result<(), IllegalTransition> {
        if self.next().contains(&to) {
            Ok(())
        } else {
            Err(illegal("run", self, to, self.next().iter().copied()))
        }
    }

    /// Active runs are the ones the runner still drives; a task has at most one active run.
    pub fn is_active(self) -> bool {
        !matches!(self, RunState::Abandoned)
    }

    pub const ACTIVE_SQL_LIST: &'static str = "('queued','in_progress','pr','complete')";
}

/// One row of `executor_runs`: a concrete attempt at a task, in one worktree, on one branch.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Run {
    pub id: i64,
    pub task_gid: TaskGid,
    pub repo: Option<String>,
    pub worktree_path: Option<String>,
    pub branch_name: Option<String>,
    pub pr_url: Option<String>,
    pub pr_number: Option<i64>,
    pub thread_id: Option<String>,
    pub started_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
    pub state: RunState,
    pub ci_attempts: i32,
    pub worker_session_id: Option<String>,
    pub worker_last_update: Option<DateTime<Utc>>,
    pub worker_pid: Option<i32>,
    pub worker_stuck_count: i32,
    pub head_sha: Option<String>,
    /// When `head_sha` was first observed: how long CI has had to report at this head.
    pub head_seen_at: Option<DateTime<Utc>>,
    pub review_verdict: Option<ReviewVerdict>,
    pub review_sha: Option<String>,
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<DateTime<Utc>>,
    pub cost_usd: f64,
    /// Some of `cost_usd` is executor's estimate from tokens, not an agent's own figure.
    pub cost_estimated: bool,
    pub input_tokens: i64,
    pub output_tokens: i64,
}

#[cfg(test)]
mod tests {
    use super::RunState::{self, *};

    const LEGAL: &[(RunState, RunState)] = &[
        (Queued, InProgress),
        (Queued, Abandoned),
        (InProgress, Pr),
        (InProgress, Abandoned),
        (Pr, Complete),
        (Pr, Abandoned),
        (Complete, Pr),
        (Complete, Abandoned),
    ];

    #[test]
    fn every_pair_is_legal_exactly_when_the_table_says_so() {
        for &from in RunState::ALL {
            for &to in RunState::ALL {
                let expected = LEGAL.contains(&(from, to));
                assert_eq!(from.check(to).is_ok(), expected, "{from} -> {to}");
            }
        }
    }

    #[test]
    fn a_completed_run_can_be_abandoned_but_an_abandoned_one_goes_nowhere() {
        assert!(Complete.check(Abandoned).is_ok(), "a completed PR closed unmerged gives the run up");
        assert!(Abandoned.next().is_empty());
    }

    #[test]
    fn refusal_names_the_allowed_moves() {
        let err = Queued.check(Pr).unwrap_err().to_string();
        assert_eq!(err, "run cannot go from queued to pr; from queued it can go to: in_progress, abandoned");
    }

    #[test]
    fn active_list_matches_is_active() {
        for &s in RunState::ALL {
            assert_eq!(RunState::ACTIVE_SQL_LIST.contains(&format!("'{s}'")), s.is_active(), "{s}");
        }
    }
}
