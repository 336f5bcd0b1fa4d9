//! Versioned migrations, embedded in the binary, one file per version and backend with the same meaning.

use super::{BeginWrite, Pool, Result, Store, StoreError, now, on_pool};

struct Migration {
    version: i64,
    sqlite: &'static str,
    postgres: &'static str,
}

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sqlite: include_str!("../../migrations/sqlite/0001_init.sql"),
        postgres: include_str!("../../migrations/postgres/0001_init.sql"),
    },
    Migration {
        version: 2,
        sqlite: include_str!("../../migrations/sqlite/0002_runner.sql"),
        postgres: include_str!("../../migrations/postgres/0002_runner.sql"),
    },
    Migration {
        version: 3,
        sqlite: include_str!("../../migrations/sqlite/0003_hardening.sql"),
        postgres: include_str!("../../migrations/postgres/0003_hardening.sql"),
    },
    Migration {
        version: 4,
        sqlite: include_str!("../../migrations/sqlite/0004_github.sql"),
        postgres: include_str!("../../migrations/postgres/0004_github.sql"),
    },
    Migration {
        version: 5,
        sqlite: include_str!("../../migrations/sqlite/0005_analyzer.sql"),
        postgres: include_str!("../../migrations/postgres/0005_analyzer.sql"),
    },
    Migration {
        version: 6,
        sqlite: include_str!("../../migrations/sqlite/0006_cluster.sql"),
        postgres: include_str!("../../migrations/postgres/0006_cluster.sql"),
    },
    Migration {
        version: 7,
        sqlite: include_str!("../../migrations/sqlite/0007_replies.sql"),
        postgres: include_str!("../../migrations/postgres/0007_replies.sql"),
    },
    Migration {
        version: 8,
        sqlite: include_str!("../../migrations/sqlite/0008_human_decisions.sql"),
        postgres: include_str!("../../migrations/postgres/0008_human_decisions.sql"),
    },
    Migration {
        version: 9,
        sqlite: include_str!("../../migrations/sqlite/0009_forge_cache.sql"),
        postgres: include_str!("../../migrations/postgres/0009_forge_cache.sql"),
    },
    Migration {
        version: 10,
        sqlite: include_str!("../../migrations/sqlite/0010_webhooks.sql"),
        postgres: include_str!("../../migrations/postgres/0010_webhooks.sql"),
    },
    Migration {
        version: 11,
        sqlite: include_str!("../../migrations/sqlite/0011_writeback.sql"),
        postgres: include_str!("../../migrations/postgres/0011_writeback.sql"),
    },
    Migration {
        version: 12,
        sqlite: include_str!("../../migrations/sqlite/0012_needs_you.sql"),
        postgres: include_str!("../../migrations/postgres/0012_needs_you.sql"),
    },
    Migration {
        version: 13,
        sqlite: include_str!("../../migrations/sqlite/0013_find.sql"),
        postgres: include_str!("../../migrations/postgres/0013_find.sql"),
    },
    Migration {
        version: 14,
        sqlite: include_str!("../../migrations/sqlite/0014_insights.sql"),
        postgres: include_str!("../../migrations/postgres/0014_insights.sql"),
    },
    Migration {
        version: 15,
        sqlite: include_str!("../../migrations/sqlite/0015_ended_runners.sql"),
        postgres: include_str!("../../migrations/postgres/0015_ended_runners.sql"),
    },
    Migration {
        version: 16,
        sqlite: include_str!("../../migrations/sqlite/0016_reply_in_flight.sql"),
        postgres: include_str!("../../migrations/postgres/0016_reply_in_flight.sql"),
    },
    Migration {
        version: 17,
        sqlite: include_str!("../../migrations/sqlite/0017_ci_trigger_outcome.sql"),
        postgres: include_str!("../../migrations/postgres/0017_ci_trigger_outcome.sql"),
    },
    Migration {
        version: 18,
        sqlite: include_str!("../../migrations/sqlite/0018_merged_at.sql"),
        postgres: include_str!("../../migrations/postgres/0018_merged_at.sql"),
    },
    Migration {
        version: 19,
        sqlite: include_str!("../../migrations/sqlite/0019_notice_in_flight.sql"),
        postgres: include_str!("../../migrations/postgres/0019_notice_in_flight.sql"),
    },
    Migration {
        version: 20,
        sqlite: include_str!("../../migrations/sqlite/0020_plans_questions.sql"),
        postgres: include_str!("../../migrations/postgres/0020_plans_questions.sql"),
    },
    Migration {
        version: 21,
        sqlite: include_str!("../../migrations/sqlite/0021_users.sql"),
        postgres: include_str!("../../migrations/postgres/0021_users.sql"),
    },
    Migration {
        version: 22,
        sqlite: include_str!("../../migrations/sqlite/0022_person_comments.sql"),
        postgres: include_str!("../../migrations/postgres/0022_person_comments.sql"),
    },
    Migration {
        version: 23,
        sqlite: include_str!("../../migrations/sqlite/0023_fast_counts.sql"),
        postgres: include_str!("../../migrations/postgres/0023_fast_counts.sql"),
    },
    Migration {
        version: 24,
        sqlite: include_str!("../../migrations/sqlite/0024_gitlab_deliveries.sql"),
        postgres: include_str!("../../migrations/postgres/0024_gitlab_deliveries.sql"),
    },
];

/// Runs migration `$m` (its `$sql`) in `$tx` unless the version seen under the lock already has it, and
/// records it; evaluates to whether it ran.
macro_rules! apply {
    ($tx:ident, $current:expr, $m:expr, $sql:expr) => {{
        if $current >= $m.version {
            false
        } else {
            sqlx::raw_sql($sql).execute(&mut *$tx).await?;
            sqlx::query("INSERT INTO executor_schema (version, applied_at) VALUES ($1, $2)")
                .bind($m.version)
                .bind(now())
                .execute(&mut *$tx)
                .await?;
            $tx.commit().await?;
            true
        }
    }};
}

/// The newest schema this build knows.
pub const KNOWN_VERSION: i64 = MIGRATIONS[MIGRATIONS.len() - 1].version;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MigrateReport {
    pub from: i64,
    pub to: i64,
    pub applied: Vec<i64>,
}

impl Store {
    /// The schema version recorded in the database; 0 for an empty database.
    pub async fn schema_version(&self) -> Result<i64> {
        let exists: i64 =
            match &self.pool {
                Pool::Sqlite(p) => sqlx::query_scalar(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'executor_schema'",
                )
                .fetch_one(p)
                .await?,
                Pool::Postgres(p) => {
                    sqlx::query_scalar(
                        "SELECT count(*) FROM information_schema.tables \
                     WHERE table_schema = current_schema() AND table_name = 'executor_schema'",
                    )
                    .fetch_one(p)
                    .await?
                }
            };
        if exists == 0 {
            return Ok(0);
        }
        let v: Option<i64> = on_pool!(self, |p| {
            sqlx::query_scalar("SELECT max(version) FROM executor_schema").fetch_one(p).await?
        });
        Ok(v.unwrap_or(0))
    }

    /// Refuses a database that is newer than this build, before anything is written.
    pub async fn refuse_newer_schema(&self) -> Result<i64> {
        let found = self.schema_version().await?;
        if found > KNOWN_VERSION {
            return Err(StoreError::TooNew { found, known: KNOWN_VERSION });
        }
        Ok(found)
    }

    /// Fails unless the schema is exactly the one this build knows.
    pub async fn check_schema(&self) -> Result<()> {
        let found = self.refuse_newer_schema().await?;
        if found < KNOWN_VERSION {
            return Err(StoreError::NeedsMigration { found, known: KNOWN_VERSION });
        }
        Ok(())
    }

    /// Applies every migration newer than the database, each in its own transaction. Safe to run from
    /// several processes at once: the write lock (SQLite) or an advisory lock (PostgreSQL) serializes
    /// them, and each re-reads the version under the lock.
    pub async fn migrate(&self) -> Result<MigrateReport> {
        let from = self.refuse_newer_schema().await?;
        let mut applied = Vec::new();
        for m in MIGRATIONS.iter().filter(|m| m.version > from) {
            let done = match &self.pool {
                Pool::Sqlite(p) => {
                    let mut tx = p.begin_write().await?;
                    let current = current_in_tx_sqlite(&mut tx).await?;
                    apply!(tx, current, m, m.sqlite)
                }
                Pool::Postgres(p) => {
                    let mut tx = p.begin_write().await?;
                    // Any constant shared by all executors works as the lock key.
                    sqlx::query("SELECT pg_advisory_xact_lock(7411939)").execute(&mut *tx).await?;
                    let current = current_in_tx_pg(&mut tx).await?;
                    apply!(tx, current, m, m.postgres)
                }
            };
            if done {
                applied.push(m.version);
            }
        }
        let to = self.refuse_newer_schema().await?;
        Ok(MigrateReport { from, to, applied })
    }
}

/// The schema version seen inside a migration's transaction (0 before the first), for either backend.
macro_rules! version_in_tx {
    ($tx:expr, $exists_sql:literal) => {{
        let exists: i64 = sqlx::query_scalar($exists_sql).fetch_one(&mut **$tx).await?;
        if exists == 0 {
            Ok(0)
        } else {
            let v: Option<i64> =
                sqlx::query_scalar("SELECT max(version) FROM executor_schema").fetch_one(&mut **$tx).await?;
            Ok(v.unwrap_or(0))
        }
    }};
}

async fn current_in_tx_sqlite(tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>) -> Result<i64> {
    version_in_tx!(tx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'executor_schema'")
}

async fn current_in_tx_pg(tx: &mut sqlx::Transaction<'static, sqlx::Postgres>) -> Result<i64> {
    version_in_tx!(
        tx,
        "SELECT count(*) FROM information_schema.tables \
         WHERE table_schema = current_schema() AND table_name = 'executor_schema'"
    )
}
impl Store {
    /// Test support: pretend a future executor migrated this database.
    #[doc(hidden)]
    pub async fn force_schema_version_for_tests(&self, version: i64) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query("INSERT INTO executor_schema (version, applied_at) VALUES ($1, $2)")
                .bind(version)
                .bind(now())
                .execute(p)
                .await?;
        });
        Ok(())
    }
}
