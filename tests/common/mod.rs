//! Test databases: a fresh SQLite file, or a fresh schema in the PostgreSQL named by
//! `EXECUTOR_TEST_DATABASE_URL`, so tests run in parallel without seeing each other.
#![allow(dead_code)]

use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};

use executor::store::Store;

pub const PG_ENV: &str = "EXECUTOR_TEST_DATABASE_URL";

/// A database for one test. Keeps the temporary directory alive as long as the test holds it; a
/// PostgreSQL schema is dropped when the test is done with it.
pub struct TestDb {
    pub url: String,
    _dir: Option<tempfile::TempDir>,
    /// (server URL, schema) of a PostgreSQL test database.
    schema: Option<(String, String)>,
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let Some((base, schema)) = self.schema.take() else { return };
        // Drop runs inside the test's runtime, which cannot be blocked on: a thread of its own, with a
        // runtime of its own, drops the schema and is waited for.
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
            rt.block_on(drop_schema(&base, &schema));
        })
        .join();
    }
}

async fn drop_schema(base: &str, schema: &str) {
    if let Ok(admin) = sqlx::PgPool::connect(base).await {
        let _ = sqlx::raw_sql(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).execute(&admin).await;
        admin.close().await;
    }
}

/// Schemas left by test processes that died before dropping theirs (`t<pid>_…` of a pid gone).
async fn sweep_dead_schemas(admin: &sqlx::PgPool) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    let mut first = false;
    ONCE.call_once(|| first = true);
    if !first {
        return;
    }
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT nspname::text FROM pg_namespace WHERE nspname ~ '^t[0-9]+_[0-9]+_[0-9]+$'",
    )
    .fetch_all(admin)
    .await
    .unwrap_or_default();
    for name in names {
        let pid: Option<i32> = name[1..].split('_').next().and_then(|p| p.parse().ok());
        let alive = pid.is_some_and(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists());
        if !alive {
            let _ = sqlx::raw_sql(&format!("DROP SCHEMA IF EXISTS {name} CASCADE")).execute(admin).await;
        }
    }
}

impl TestDb {
    pub async fn open(&self) -> Store {
        let store = Store::open(&self.url).await.expect("open test database");
        store.migrate().await.expect("migrate test database");
        store
    }

    /// Runs `sql` on a connection of its own: a state no store call makes (a caller killed half-way), or
    /// one that would take thousands of calls to make.
    pub async fn execute(&self, sql: &str) {
        if self.url.starts_with("postgres") {
            let pool = sqlx::PgPool::connect(&self.url).await.expect("connect to the test database");
            sqlx::raw_sql(sql).execute(&pool).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
            pool.close().await;
        } else {
            let pool = sqlx::SqlitePool::connect(&self.url).await.expect("connect to the test database");
            sqlx::raw_sql(sql).execute(&pool).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
            pool.close().await;
        }
    }
}

pub fn sqlite() -> TestDb {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("executor.db").display());
    TestDb { url, _dir: Some(dir), schema: None }
}

/// A PostgreSQL database with its own schema, or `None` (after saying so) when no URL is configured.
/// In CI (`CI` set) a missing URL or a failed connection fails the test instead of skipping it.
pub async fn postgres(test: &str) -> Option<TestDb> {
    let base = match std::env::var(PG_ENV) {
        Ok(url) if !url.is_empty() => url,
        _ => {
            if std::env::var_os("CI").is_some() {
                panic!("{PG_ENV} is not set, and CI must run the PostgreSQL suite");
            }
            // Written to the stderr handle rather than with eprintln!, which the test harness captures and
            // hides for passing tests: a skipped suite must be seen.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED (PostgreSQL): {test} — set {PG_ENV} to run the PostgreSQL suite"
            );
            return None;
        }
    };
    static N: AtomicU32 = AtomicU32::new(0);
    let schema = format!("t{}_{}_{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst), nanos());
    let admin =
        sqlx::PgPool::connect(&base).await.unwrap_or_else(|e| panic!("cannot connect to {PG_ENV}: {e}"));
    sweep_dead_schemas(&admin).await;
    sqlx::raw_sql(&format!("CREATE SCHEMA {schema}")).execute(&admin).await.expect("create schema");
    admin.close().await;
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}options[search_path]={schema}");
    Some(TestDb { url, _dir: None, schema: Some((base, schema)) })
}

fn nanos() -> u32 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0)
}

/// Declares each listed async test body `fn NAME(db: TestDb)` twice: `sqlite::NAME` and `postgres::NAME`.
#[macro_export]
macro_rules! on_both_databases {
    ($($name:ident),+ $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name(super::common::sqlite()).await;
                }
            )+
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                #[cfg_attr(not(pg_tests), ignore = "needs PostgreSQL: set EXECUTOR_TEST_DATABASE_URL (see README)")]
                async fn $name() {
                    if let Some(db) = super::common::postgres(stringify!($name)).await {
                        super::$name(db).await;
                    }
                }
            )+
        }
    };
}
