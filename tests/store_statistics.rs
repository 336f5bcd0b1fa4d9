//! The queue's planner statistics after a bulk write, on SQLite and PostgreSQL: `Store::refresh_statistics`
//! runs on both, a bulk intake leaves statistics behind, and a filter pass that skipped many refreshes
//! them, so that the next reader is planned by what the queue holds, not by a guess.

mod common;

use std::sync::Arc;

use common::TestDb;
use executor::analyzer::sweep::filter_pending;
use executor::config::Config;
use executor::filter::{Filters, RulesConfig, SEED_RULES};
use executor::store::Store;

on_both_databases!(
    refreshing_the_statistics_works_on_an_empty_and_a_full_queue,
    a_bulk_intake_and_then_a_filter_pass_leave_the_queues_statistics_current,
);

/// Tasks a bulk intake takes in: more than `STATISTICS_AFTER_ROWS`.
const TASKS: usize = 2400;

/// What the database's statistics say of the queue: PostgreSQL, the most common statuses it knows
/// (`None`: no statistics); SQLite, the `sqlite_stat1` row of the pending tasks' index.
async fn statistics(db: &TestDb) -> Option<String> {
    if db.url.starts_with("postgres") {
        let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
        let vals: Option<String> = sqlx::query_scalar(
            "SELECT most_common_vals::text FROM pg_stats \
             WHERE schemaname = current_schema() AND tablename = 'executor_queue' AND attname = 'status'",
        )
        .fetch_optional(&pool)
        .await
        .unwrap();
        pool.close().await;
        vals
    } else {
        let pool = sqlx::SqlitePool::connect(&db.url).await.unwrap();
        let exists: i64 =
            sqlx::query_scalar("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'")
                .fetch_one(&pool)
                .await
                .unwrap();
        let stat = if exists == 0 {
            None
        } else {
            sqlx::query_scalar(
                "SELECT stat FROM sqlite_stat1 WHERE tbl = 'executor_queue' AND idx = 'executor_queue_pending'",
            )
            .fetch_optional(&pool)
            .await
            .unwrap()
        };
        pool.close().await;
        stat
    }
}

/// A fresh queue whose statistics only the store's own calls refresh (no autovacuum meanwhile).
async fn fresh(db: &TestDb) -> Store {
    let store = db.open().await;
    if db.url.starts_with("postgres") {
        db.execute("ALTER TABLE executor_queue SET (autovacuum_enabled = false)").await;
    }
    store
}

async fn refreshing_the_statistics_works_on_an_empty_and_a_full_queue(db: TestDb) {
    let store = fresh(&db).await;
    store.refresh_statistics().await.expect("on an empty queue");
    store.refresh_statistics().await.expect("again");
}

async fn a_bulk_intake_and_then_a_filter_pass_leave_the_queues_statistics_current(db: TestDb) {
    let store = fresh(&db).await;
    // Half the tasks name macOS; the seed's `no_macos` rule skips the other half.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tasks.jsonl");
    let lines: Vec<String> = (0..TASKS)
        .map(|i| {
            let os = if i % 2 == 0 { "macOS" } else { "Windows" };
            serde_json::json!({"gid": format!("S-{i}"), "name": format!("Task {i}: the sidebar flickers on {os}")})
                .to_string()
        })
        .collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    let config = Config::parse(&format!(
        "[[sources]]\nname = \"inbox\"\nkind = \"file\"\npath = {:?}\n",
        file.display()
    ))
    .unwrap();
    assert_eq!(statistics(&db).await, None, "a fresh queue has none");

    let env: executor::intake::source::EnvLookup = Arc::new(|_| None);
    let report = executor::intake::run::intake(&config, &store, None, true, env, None).await.unwrap();
    assert_eq!(report.sources[0].added, TASKS);
    let after_intake = statistics(&db).await.expect("statistics after a bulk intake");
    if db.url.starts_with("postgres") {
        assert_eq!(after_intake, "{pending}");
    }

    let rules: RulesConfig = toml::from_str(SEED_RULES).unwrap();
    let mut ungated = rules.intake.clone();
    ungated.qualifying_sources.clear();
    let filters = Filters::compile(&ungated, &rules.filters).unwrap();
    let (progress, _reports) = tokio::sync::mpsc::unbounded_channel();
    let (_stop_tx, stop) = tokio::sync::watch::channel(false);
    let skipped = filter_pending(&store, &filters, 3, &progress, &stop).await.unwrap();
    assert_eq!(skipped, (TASKS / 2) as u64);
    let after_pass = statistics(&db).await.expect("statistics after the filter pass");
    assert_ne!(after_pass, after_intake, "the skips are in the statistics");
    if db.url.starts_with("postgres") {
        assert!(after_pass.contains("skip") && after_pass.contains("pending"), "{after_pass}");
    }
}
