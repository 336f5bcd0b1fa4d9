//! A plan a human approves before any code is written, and a question an agent asks instead of guessing:
//! the two ways a run waits on a person's word. Stored as these names, never parsed from text.

/// Where a plan revision stands (`executor_run_plans.status`). The newest revision of a run counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlanStatus {
    /// Written; no human has said yes or asked for changes yet. The run waits.
    AwaitingApproval,
    /// A human approved it: the implementation starts with it in its prompt.
    Approved,
    /// A human sent it back with what should change: a `plan` worker writes the next revision.
    ChangesRequested,
}

super::named_enum!(PlanStatus, "plan status", {
    AwaitingApproval => "awaiting_approval",
    Approved => "approved",
    ChangesRequested => "changes_requested",
});

/// Whether a task's run writes a plan for approval first: the repository's `plan`, or a task's own
/// setting (`executor_queue.plan_mode`), which wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PlanMode {
    /// A plan is written and approved before code.
    Required,
    /// Work starts at once.
    #[default]
    Off,
}

super::named_enum!(PlanMode, "plan mode", {
    Required => "required",
    Off => "off",
});

/// How a question's answer reached executor (`executor_run_questions.answered_via`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AnswerVia {
    /// `executor answer` on the command line.
    Cli,
    /// The dashboard or its API.
    Web,
    /// A trusted author's comment on the run's pull request.
    Forge,
    /// A comment in the task's tracker by one of its source's `answerers`.
    Tracker,
}

super::named_enum!(AnswerVia, "answer source", {
    Cli => "cli",
    Web => "web",
    Forge => "forge",
    Tracker => "tracker",
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_names_round_trip() {
        for s in PlanStatus::ALL {
            assert_eq!(s.as_str().parse::<PlanStatus>().unwrap(), *s);
        }
        for m in PlanMode::ALL {
            assert_eq!(m.as_str().parse::<PlanMode>().unwrap(), *m);
        }
        for v in AnswerVia::ALL {
            assert_eq!(v.as_str().parse::<AnswerVia>().unwrap(), *v);
        }
        assert!("maybe".parse::<PlanMode>().unwrap_err().to_string().contains("required, off"));
    }
}
