//! What a wait with no check at the head says triggering CI there did (or did not do): "CI was
//! triggered" only when something was, so that the human reading the wait, and the notice at
//! `runner.check_timeout`, see the trigger as the likely cause when nothing was.

use crate::domain::CiTrigger;

/// The wait at `head`, for which the runner triggered CI (`trigger`: what that did, `None` when it was
/// not recorded) and at which no check has reported.
pub(super) fn no_check_after_trigger(trigger: Option<CiTrigger>, head: &str) -> String {
    let nothing =
        |why: &str| format!("No check has reported at {head}, and executor triggered no CI: {why}.");
    match trigger {
        Some(CiTrigger::Dispatched | CiTrigger::LocalCi) => {
            format!("CI was triggered at {head} but no check has reported yet.")
        }
        Some(CiTrigger::Rerun) => format!(
            "CI was triggered at {head} (the failed jobs of its last workflow run re-run) but no check has \
             reported yet."
        ),
        Some(CiTrigger::NotConfigured) => nothing("ci_trigger is empty, so only a push starts CI"),
        Some(CiTrigger::NothingToRerun) => {
            nothing("ci_trigger = \"rerun\" found no workflow run at this head to re-run")
        }
        None => format!("CI was asked for at {head} but no check has reported yet."),
    }
}

/// For the checks-overdue notice when no check reported at all: the trigger, when it triggered nothing.
pub(super) fn likely_cause(trigger: Option<CiTrigger>, repo: &str) -> Option<String> {
    let key = format!("repos.{repo}.ci_trigger");
    match trigger? {
        CiTrigger::NotConfigured => Some(format!(
            "The likely cause: executor triggered no CI at this head ({key} is empty) and none started on \
             push; set {key} = \"workflow:FILE\" to have FILE dispatched, or push a commit."
        )),
        CiTrigger::NothingToRerun => Some(format!(
            "The likely cause: executor triggered no CI at this head ({key} = \"rerun\" found no workflow \
             run at it to re-run); \"rerun:FILE\" would dispatch FILE instead, or push a commit."
        )),
        CiTrigger::Dispatched | CiTrigger::Rerun | CiTrigger::LocalCi => None,
    }
}
