//! What a worker reports while it runs and when it ends. These are the facts the caller persists (the
//! run's `worker_pid`, `worker_session_id`, `worker_last_update`, cost and tokens); this module writes
//! nothing but files.

use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use super::agent::Tokens;
use super::replies::{Refusal, Reply};
use super::result::{ParsedResult, ResultError};
use super::tree::StoppedProcess;

pub use crate::domain::EndReason;

/// Sent on the caller's channel as things happen, so they can be written to the database at once.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "update", rename_all = "snake_case")]
pub enum WorkerUpdate {
    /// The process is running. Persist all four: they are what [`super::adopt`] needs after a crash.
    Started {
        pid: i32,
        pid_start_time: u64,
        output_path: PathBuf,
        log_path: PathBuf,
        started_at: DateTime<Utc>,
    },
    /// The agent's session (Claude) or thread (Codex) id: what a later `in_progress` worker resumes.
    SessionId(String),
    /// New output arrived (at most about once a second). `offset` is how far the output file has been
    /// read; pass it to [`super::adopt`] to resume without re-logging.
    Output {
        at: DateTime<Utc>,
        offset: u64,
    },
    /// Cumulative usage of this worker so far. Tokens as the agent reports them; dollars estimated
    /// from the price table (`cost_estimated`) until the agent's own total arrives (Claude's final
    /// `result`; Codex never reports one).
    Usage {
        cost_usd: Option<f64>,
        input_tokens: u64,
        output_tokens: u64,
        cost_estimated: bool,
    },
    Ended(Box<WorkerOutcome>),
}

/// Everything known about a worker once it has ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkerOutcome {
    pub reason: EndReason,
    /// `None` when the process was killed by a signal, or was adopted (not our child, so its status
    /// cannot be collected).
    pub exit_code: Option<i32>,
    pub session_id: Option<String>,
    pub num_turns: Option<u32>,
    pub cost_usd: Option<f64>,
    /// `cost_usd` is (at least partly) executor's estimate from the price table, not the agent's figure.
    pub cost_estimated: bool,
    pub tokens: Tokens,
    /// The agent's structured result, as returned.
    pub result: Option<Value>,
    /// The structured result checked against the kind's schema.
    pub parsed: Option<ParsedResult>,
    pub result_error: Option<ResultError>,
    /// A `fix_comments` worker's replies, as it gave them: its replies file's, then its answer's. Not
    /// checked yet: the caller knows which comments were offered.
    #[serde(default)]
    pub replies: Vec<Reply>,
    /// What of its replies file could not be read.
    #[serde(default)]
    pub reply_refusals: Vec<Refusal>,
    /// The agent's final message (or error text), shortened.
    pub final_text: Option<String>,
    #[serde(with = "duration_secs")]
    pub duration: Duration,
    pub log_path: PathBuf,
    pub output_path: PathBuf,
    /// The processes executor stopped as the worker ended: the agent when it was stopped, and whatever
    /// it left running (the work log names them).
    pub stopped: Vec<StoppedProcess>,
}

impl WorkerOutcome {
    pub fn input_tokens(&self) -> u64 {
        self.tokens.input
    }
    pub fn output_tokens(&self) -> u64 {
        self.tokens.output
    }
}

mod duration_secs {
    pub fn serialize<S: serde::Serializer>(d: &std::time::Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}
