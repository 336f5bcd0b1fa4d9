//! How a worker ended, and a review's verdict: facts the runner decides on, stored as these names and
//! parsed back as these enums, never as free text.

/// Why a worker session ended. Recorded in `executor_worker_sessions.end_reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndReason {
    /// Exited 0 and reported a successful result.
    Finished,
    /// Exited non-zero, or its result says it failed (max turns, execution error, failed turn).
    Failed,
    /// No output for `idle_timeout`; the group was killed.
    IdleTimeout,
    /// Ran longer than `hard_timeout`; the group was killed.
    HardTimeout,
    /// Killed by a signal nobody here sent, or ended without a result.
    Crashed,
    /// Stopped on executor's own request (shutdown, a run abandoned by a human).
    Interrupted,
    /// The agent stopped at its budget, or its cost passed the caller's cap.
    BudgetExceeded,
    /// Its raw output passed `worker.max_output_bytes`; the group was killed.
    OutputLimit,
    /// The agent could not continue the session it was asked to resume (another host, a cleaned
    /// `~/.claude`): the next worker starts a fresh session.
    ResumeFailed,
    /// No agent process could be started: the worktree, the prompt files or the program itself.
    FailedToStart,
    /// The prompt template could not be rendered.
    PromptError,
    /// The runner died after opening the session and before the agent was allowed to run; nothing ran.
    NeverStarted,
    /// Its runner's host stopped heartbeating (a machine lost, or paused past its lease): another runner
    /// ended it and took the run over from its pushed branch.
    HostLost,
}

super::named_enum!(EndReason, "worker end reason", {
    Finished => "finished",
    Failed => "failed",
    IdleTimeout => "idle_timeout",
    HardTimeout => "hard_timeout",
    Crashed => "crashed",
    Interrupted => "interrupted",
    BudgetExceeded => "budget_exceeded",
    OutputLimit => "output_limit",
    ResumeFailed => "resume_failed",
    FailedToStart => "failed_to_start",
    PromptError => "prompt_error",
    NeverStarted => "never_started",
    HostLost => "host_lost",
});

/// What an ending means for the run's retry accounting. One definition, used by the store (the run's
/// `worker_stuck_count`) and by the decision (back-off, abandonment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndClass {
    /// The worker did its job (whether it reached its end state is for the world to say).
    Ok,
    /// The worker's own failure: counts against `max_stuck`, backs off.
    Failed,
    /// Killed by the watchdog: counts against `max_stuck`, backs off, and the human is told.
    Stuck,
    /// Not the worker's fault and nothing was spent on the task: try again at once, count nothing.
    Interrupted,
}

impl EndReason {
    pub fn class(self) -> EndClass {
        match self {
            EndReason::Finished => EndClass::Ok,
            EndReason::IdleTimeout | EndReason::HardTimeout | EndReason::OutputLimit => EndClass::Stuck,
            // A budget stop waits for a human through the run's budget flag; a failed resume and a
            // runner that died before the agent ran are retried at once, as a fresh session.
            EndReason::Interrupted
            | EndReason::BudgetExceeded
            | EndReason::ResumeFailed
            | EndReason::NeverStarted
            | EndReason::HostLost => EndClass::Interrupted,
            EndReason::Crashed | EndReason::Failed | EndReason::FailedToStart | EndReason::PromptError => {
                EndClass::Failed
            }
        }
    }

    /// The attempt counts against `runner.max_stuck`.
    pub fn counts_as_stuck(self) -> bool {
        matches!(self.class(), EndClass::Stuck | EndClass::Failed)
    }

    /// A sentence for work logs and humans.
    pub fn describe(self) -> &'static str {
        match self {
            EndReason::Finished => "finished",
            EndReason::Failed => "failed",
            EndReason::IdleTimeout => "killed: no output for the idle timeout",
            EndReason::HardTimeout => "killed: ran past the hard timeout",
            EndReason::Crashed => "crashed (killed by a signal or ended without a result)",
            EndReason::Interrupted => "killed: interrupted by executor",
            EndReason::BudgetExceeded => "stopped: budget exceeded",
            EndReason::OutputLimit => "killed: its output passed worker.max_output_bytes",
            EndReason::ResumeFailed => {
                "the agent session to resume was not found; the next worker starts afresh"
            }
            EndReason::FailedToStart => "the agent could not be started",
            EndReason::PromptError => "the prompt could not be rendered",
            EndReason::NeverStarted => "the runner died before the agent was allowed to run",
            EndReason::HostLost => "its host stopped heartbeating; another runner took the run over",
        }
    }
}

/// A `pr_review` worker's verdict on the commit it reviewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReviewVerdict {
    Pass,
    Fail,
}

super::named_enum!(ReviewVerdict, "review verdict", {
    Pass => "pass",
    Fail => "fail",
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_round_trips_through_its_stored_name() {
        for r in EndReason::ALL {
            assert_eq!(r.as_str().parse::<EndReason>().unwrap(), *r);
        }
        assert!("pass ".parse::<ReviewVerdict>().is_err());
    }

    #[test]
    fn only_the_workers_own_failures_count_as_stuck() {
        assert!(EndReason::IdleTimeout.counts_as_stuck());
        assert!(EndReason::FailedToStart.counts_as_stuck());
        assert!(!EndReason::Interrupted.counts_as_stuck());
        assert!(!EndReason::NeverStarted.counts_as_stuck());
        assert!(!EndReason::Finished.counts_as_stuck());
    }
}

/// How a runner process ended. Recorded in `executor_runners.end_reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunnerEnd {
    /// It ended itself (idle, or stopped by a signal) and let go of its runs.
    Stopped,
    /// Its process vanished from its host (killed, crashed); a runner of the same host saw it.
    Died,
    /// Its heartbeat lapsed for longer than its lease: another host took its runs over.
    Lost,
}

super::named_enum!(RunnerEnd, "runner end", {
    Stopped => "stopped",
    Died => "died",
    Lost => "lost",
});
