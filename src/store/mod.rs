//! The database. Every read and write of executor's state goes through `Store`, whose operations are
//! named for what they mean (`set_run_state_if`, `create_run_for_task`, `claim_run`) rather than being
//! general updates.
//!
//! Architecture invariant: only `store` writes SQL, and SQL text is always a literal in this module:
//! values (task text above all) travel as bound parameters, never spliced into a statement.
//!
//! One code path serves SQLite and PostgreSQL: queries use `$1` placeholders, which both accept, and the
//! `on_pool!` macro expands the same body once per backend, so each expansion is fully typed.

mod analysis;
mod analysis_sessions;
mod approve;
mod board;
mod change_mark;
mod clock;
mod columns;
mod day_flows;
mod events;
mod filter_skips;
mod forge_cache;
mod forge_records;
mod github_usage;
mod human_actions;
mod import;
mod insights;
mod local_forge;
mod lost_spend;
mod migrate;
mod needs_you;
mod notices;
mod open;
mod pending_detail;
mod person_comments;
mod plans;
mod replies;
mod reverts;
mod row;
mod run_fields;
mod run_view;
mod runners;
mod runs;
mod seen;
mod shared_blocks;
mod source_cursors;
mod statistics;
mod tasks;
mod users;
mod webhooks;
mod worker_stats;
mod workers;
mod writebacks;
#[cfg(test)]
pub(crate) use workers::test_session;

pub use analysis::Triage;
pub use analysis_sessions::{AnalysisEnd, AnalysisSession};
pub use approve::Approval;
pub use board::{BoardQuery, BoardRow, ENDED_STATES, LastWorker, LiveWorker, TASK_TEXT_CHARS, WorkerTotals};
pub use events::{Event, EventFilter};
pub use filter_skips::{FilterSkip, PendingPage};
pub use forge_records::AgentComments;
pub use github_usage::{GITHUB_GRAPHQL, GitHubHour};
pub use human_actions::{REQUEUE_REASON, RETRY_REASON, Requeued, human_abandon_reason};
pub use import::ImportedRun;
pub use insights::{DayCost, DayFlow, RunLead, RunOutcome, WorkerEnds, labels_of};
pub use local_forge::{LocalCheck, LocalComment, LocalPr, NewComment};
pub use lost_spend::Spent;
pub use migrate::{KNOWN_VERSION, MigrateReport};
pub use needs_you::{
    FailedSource, Listed, NeedNotice, NeedsYou, NeedsYouLimits, PlanNeed, QuestionNeed, RunNeed,
};
pub use notices::Notice;
pub use open::{pg_connect_options, redact_url, unreachable_postgres};
pub use pending_detail::PendingDetail;
pub use person_comments::PersonComments;
pub use plans::{PlanVerdict, RunPlan, RunQuestion};
pub use replies::{AgentReply, Answer, OfferTally};
pub use reverts::{ExpensiveFailure, MergedRun};
pub use run_fields::RunMemory;
pub use runners::{Heartbeat, HostRunner, LostRunner, RunnerRegistration, RunnerStatus};
pub use runs::{RunFilter, StatusCounts};
pub use source_cursors::SourceCursor;
pub use statistics::STATISTICS_AFTER_ROWS;
pub use tasks::{
    Intake, IntakeResult, MAX_SEARCH_WORDS, NewTask, TaskFilter, TaskSort, Upserted, age_cutoff, search_words,
};
pub use users::User;
pub use webhooks::{Delivery, PrOwner, WakeState};
pub use worker_stats::WorkerDurations;
pub use workers::{SLOT_LOCK, SessionStart, WorkerBegin, WorkerEnd, WorkerSession, WorkerSlot};
pub use writebacks::{NewWriteback, Writeback};

use chrono::{DateTime, SubsecRound, Utc};
use sqlx::{PgPool, SqlitePool};

use crate::domain::IllegalTransition;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The cause is in the message and deliberately not a `source`: printed as a chain it would repeat.
    #[error("cannot open database {url}: {cause}")]
    Open { url: String, cause: sqlx::Error },
    #[error("cannot open database {url}: {why}")]
    Unreachable { url: String, why: String },
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
    #[error("no task with gid '{0}' (see `executor queue list`)")]
    UnknownTask(String),
    #[error("no run with id {0} (see `executor runs list`)")]
    UnknownRun(i64),
    #[error("no notice with id {0} (see `executor runs show RUN_ID`)")]
    UnknownNotice(i64),
    #[error(transparent)]
    Illegal(#[from] IllegalTransition),
    #[error(
        "{0} was changed by another process at the same moment; nothing was written, run the command again"
    )]
    Conflict(String),
    #[error(
        "the database is at schema version {found}, newer than this executor knows (up to {known}); \
         upgrade executor. Nothing was written."
    )]
    TooNew { found: i64, known: i64 },
    #[error(
        "the database is at schema version {found} and needs migrating to {known}: run `executor migrate`"
    )]
    NeedsMigration { found: i64, known: i64 },
    /// A runner wrote to a run whose lease it no longer holds (it was paused or cut off past its lease,
    /// and another runner may have taken the run over): nothing was written.
    #[error(
        "run {0}: this runner no longer holds its lease (another runner may have taken it over); nothing was written"
    )]
    LeaseLost(i64),
    /// The operation does not apply to this record as it is; the message says why.
    #[error("{0}")]
    Refused(String),
    #[error("unreadable value in the database: {0}")]
    Corrupt(String),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Which database holds the state. Chosen by `database.url`.
#[derive(Clone, Debug)]
pub(crate) enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

#[derive(Clone, Debug)]
pub struct Store {
    pub(crate) pool: Pool,
    pub(crate) scrub: Scrub,
}

/// What the caller replaces in every event's reason before it is written: secrets (tokens, webhook
/// URLs) that an error message or a note may quote. The store knows no secrets itself; `cli` gives it
/// the config's redaction ([`Store::scrubbing`]).
#[derive(Clone, Default)]
pub struct Scrub(Option<std::sync::Arc<ScrubFn>>);

type ScrubFn = dyn Fn(&str) -> String + Send + Sync;

impl Scrub {
    pub(crate) fn apply(&self, text: &str) -> String {
        match &self.0 {
            Some(f) => f(text),
            None => text.to_string(),
        }
    }
}

impl std::fmt::Debug for Scrub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Scrub(set)" } else { "Scrub(none)" })
    }
}

impl Store {
    /// This store, replacing secrets in every event reason it writes with `scrub`.
    pub fn scrubbing(mut self, scrub: impl Fn(&str) -> String + Send + Sync + 'static) -> Store {
        self.scrub = Scrub(Some(std::sync::Arc::new(scrub)));
        self
    }
}

/// Expands `$body` once for each backend with `$pool` bound to that backend's pool, so one text serves
/// both and the compiler checks each expansion with its own types.
macro_rules! on_pool {
    ($store:expr, |$pool:ident| $body:expr) => {
        match &$store.pool {
            $crate::store::Pool::Sqlite($pool) => $body,
            $crate::store::Pool::Postgres($pool) => $body,
        }
    };
}
pub(crate) use on_pool;

/// Starts a transaction that will write. SQLite takes the write lock up front (`BEGIN IMMEDIATE`), so a
/// transaction that reads before it writes waits for other writers through the busy timeout instead of
/// failing with SQLITE_BUSY when it upgrades.
pub(crate) trait BeginWrite {
    type Db: sqlx::Database;
    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, Self::Db>>;
}

impl BeginWrite for SqlitePool {
    type Db = sqlx::Sqlite;
    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>> {
        Ok(self.begin_with("BEGIN IMMEDIATE").await?)
    }
}

impl BeginWrite for PgPool {
    type Db = sqlx::Postgres;
    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Postgres>> {
        Ok(self.begin().await?)
    }
}

/// The current time at the precision both databases keep (microseconds), so a value read back equals the
/// value written.
pub fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}

/// Midnight UTC of `t`'s day: where the daily budget starts counting.
pub fn start_of_day(t: DateTime<Utc>) -> DateTime<Utc> {
    t.date_naive().and_hms_opt(0, 0, 0).map(|d| d.and_utc()).unwrap_or(t)
}

impl Store {
    pub fn backend(&self) -> &'static str {
        match self.pool {
            Pool::Sqlite(_) => "sqlite",
            Pool::Postgres(_) => "postgres",
        }
    }

    pub async fn close(&self) {
        on_pool!(self, |p| p.close().await)
    }
}
