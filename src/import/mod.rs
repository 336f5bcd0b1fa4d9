//! `executor import`: v1's `executor_queue` and `executor_runs` rows brought into executor (the seed's
//! Phase 1 migration). Three steps, each testable alone: [`read`] the export (JSON or a CSV pair),
//! [`plan`] the mapping (pure: statuses, states, `ci_running` → `pr`, `user_context` → notes, refusals),
//! and [`apply`] it through the store's ordinary operations, so every change is a legal transition with
//! its event, and a second import finds nothing to do.

pub mod apply;
pub mod plan;
pub mod read;

pub use apply::{ImportReport, TableCounts, UnknownColumn, import};
pub use plan::{EarlierRun, Plan, Refusal, map_state, map_status, plan};
pub use read::{V1Export, V1Row, parse_json, read_export};

use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{0}")]
    Io(String),
    #[error("invalid JSON: {0}")]
    Json(String),
    #[error("invalid CSV: {0}")]
    Csv(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}
