//! The runner: every tick it observes each active run, asks the pure [`decide`] function what to do, and
//! performs the answer, keeping up to `runner.max_workers` agent processes busy.

mod agent_choice;
mod branch_hold;
mod budget;
mod ci_wait;
mod cluster;
mod decide;
mod decision;
mod engine;
mod launch;
mod notify;
mod reconcile;
mod recording;
mod replies;
mod reverts;
mod state;
mod step;
mod sweep;
mod tell_tracker;
#[cfg(test)]
mod test_hosts;
mod unobserved;
mod wake;

pub use decide::decide;
pub use decision::{Action, Decision, LastWorker, Notice, NoticeKind, Observation, Policy, WorkerOutcome};
pub(crate) use engine::forge_for;
pub use engine::{load_prompts, shutdown_on_signals};
pub(crate) use launch::{WorkerInputs, asked_for, build_spec, offered_comments, session_to_resume};
pub(crate) use recording::{Recording, supervise_recorded};
pub use state::{Runner, RunnerError, TickReport};
