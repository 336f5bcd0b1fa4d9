//! Which agent a run's next worker is (issue 34: another agent when one fails). Pure: the configured
//! order (`worker.agent`, then `worker.fallback`) and how the run's last worker ended decide it.
//!
//! A run keeps the agent that is getting its work done (a resumed session belongs to its agent); a
//! worker that ended stuck, failed or without progress hands the next attempt to the next agent in
//! the order, and after the last the first again. The run's attempt and budget limits count every
//! agent's workers alike, so the turning ends where a single agent's would.

use super::decision::{LastWorker, WorkerOutcome};

/// The agent a run's next worker runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NextAgent {
    pub name: String,
    /// Why it is not the last worker's agent, when it is not: for the run's decision and its history.
    pub turned: Option<String>,
}

/// The next worker's agent, and, when it is not the last worker's, why.
pub(super) fn next_agent(order: &[String], last: Option<&LastWorker>) -> NextAgent {
    let keep = |name: String| NextAgent { name, turned: None };
    let first = order.first().cloned().unwrap_or_default();
    let Some(last) = last else { return keep(first) };
    let Some(at) = order.iter().position(|a| *a == last.agent) else {
        // Its agent is no longer configured (the config changed): start the order again.
        return keep(first);
    };
    let gave_up_on = match last.outcome {
        WorkerOutcome::Failed => "failed",
        WorkerOutcome::Stuck => "was stuck",
        WorkerOutcome::NoProgress => "changed nothing",
        WorkerOutcome::Ok | WorkerOutcome::Interrupted => return keep(last.agent.clone()),
    };
    let name = order[(at + 1) % order.len()].clone();
    if name == last.agent {
        return keep(name);
    }
    let turned = format!("with {name}: the last {} worker ({}) {gave_up_on}", last.kind, last.agent);
    NextAgent { name, turned: Some(turned) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::WorkerKind;

    fn last(agent: &str, outcome: WorkerOutcome) -> LastWorker {
        LastWorker {
            kind: WorkerKind::Queued,
            agent: agent.into(),
            ended_at: chrono::Utc::now(),
            outcome,
            streak: 1,
        }
    }

    #[test]
    fn a_run_turns_to_the_next_agent_only_when_its_worker_did_not_get_it_done() {
        let order: Vec<String> = ["claude", "codex", "command"].map(String::from).to_vec();
        let next = |agent: &str, outcome| next_agent(&order, Some(&last(agent, outcome)));
        let kept = |name: &str| NextAgent { name: name.into(), turned: None };
        assert_eq!(next_agent(&order, None), kept("claude"), "a new run: the first");
        assert_eq!(next("codex", WorkerOutcome::Ok), kept("codex"), "a working agent is kept");
        assert_eq!(next("codex", WorkerOutcome::Interrupted), kept("codex"), "not its fault");
        assert_eq!(next("claude", WorkerOutcome::Failed).name, "codex");
        assert_eq!(next("codex", WorkerOutcome::Stuck).name, "command");
        assert_eq!(next("command", WorkerOutcome::NoProgress).name, "claude", "after the last, the first");
        assert_eq!(next("gone", WorkerOutcome::Failed), kept("claude"), "no longer configured");
        let turned = next("claude", WorkerOutcome::Failed).turned;
        assert_eq!(turned.as_deref(), Some("with codex: the last queued worker (claude) failed"));

        let alone = vec!["claude".to_string()];
        assert_eq!(next_agent(&alone, Some(&last("claude", WorkerOutcome::Failed))), kept("claude"));
    }
}
