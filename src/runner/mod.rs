//! The runner: every tick it observes each active run, asks the pure [`decide`] function what to do, and
//! performs the answer. This module holds the decision; the tick loop and the pool live beside it.

mod decide;
mod decision;

pub use decide::decide;
pub use decision::{
    Action, Decision, LastWorker, Notice, NoticeKind, Observation, Policy, WorkerOutcome,
};
