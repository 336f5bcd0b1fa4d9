//! The runner: every tick it observes each active run, asks the pure [`decide`] function what to do, and
//! performs the answer, keeping up to `runner.max_workers` agent processes busy.

mod budget;
mod cluster;
mod decide;
mod decision;
mod engine;
mod launch;
mod notify;
mod reconcile;
mod step;

pub(crate) use budget::{MIN_WORKER_BUDGET_USD, budget_left};
pub use decide::decide;
pub use decision::{Action, Decision, LastWorker, Notice, NoticeKind, Observation, Policy, WorkerOutcome};
pub use engine::{Runner, RunnerError, TickReport, load_prompts, shutdown_on_signals};
pub(crate) use engine::{forge_for, repo_for};
pub(crate) use launch::{
    Recording, WorkerInputs, build_spec, session_to_resume, supervise_recorded, worker_env,
};
pub use launch::{agent_config, worker_timeouts};
