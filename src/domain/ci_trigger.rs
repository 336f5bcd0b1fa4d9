//! What executor did when a head had no check after its grace: recorded with the head it was for, so
//! that a wait says what was (not) done and the checks-overdue notice can name the likely cause.

/// The outcome of triggering CI at one head (`repos.NAME.ci_trigger`, or the local forge's CI).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CiTrigger {
    /// `ci_trigger` is empty: CI is expected to start on push, and nothing was triggered.
    NotConfigured,
    /// A `workflow_dispatch` was sent (`workflow:FILE`, or `rerun:FILE` on a head with no run).
    Dispatched,
    /// The failed jobs of the head's last workflow run were re-run (`rerun`).
    Rerun,
    /// `rerun` found no workflow run at the head to re-run, and names no workflow to dispatch instead:
    /// nothing was triggered.
    NothingToRerun,
    /// The local forge started its CI command (`repos.NAME.ci_command`).
    LocalCi,
}

super::named_enum!(CiTrigger, "CI trigger outcome", {
    NotConfigured => "not_configured",
    Dispatched => "dispatched",
    Rerun => "rerun",
    NothingToRerun => "nothing_to_rerun",
    LocalCi => "local_ci",
});

impl CiTrigger {
    /// Whether something was asked to run CI at the head (else only a push starts it).
    pub fn started_something(self) -> bool {
        !matches!(self, CiTrigger::NotConfigured | CiTrigger::NothingToRerun)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_round_trips_through_its_stored_name() {
        for t in CiTrigger::ALL {
            assert_eq!(t.as_str().parse::<CiTrigger>().unwrap(), *t);
        }
        assert!(!CiTrigger::NothingToRerun.started_something() && CiTrigger::Rerun.started_something());
    }
}
