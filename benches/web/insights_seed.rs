//! The history the insights page reads, on top of the bench's tasks and runs: 90 days of it. Runs move
//! on through the store's own operations (so their events are the real ones); then every event, run and
//! session is spread back over 90 days by its task's number, as if the queue had filled over a quarter.
//! Worker and triage sessions are written in bulk, and GitHub's points for every hour of the 90 days.
//! The bulk statements are written for each database (SQLite's text timestamps, PostgreSQL's
//! `timestamptz`), so both are timed on the same history.

use std::time::Instant;

use executor::domain::{Actor, RunState};
use executor::store::{GITHUB_GRAPHQL, Store};

/// Runs moved to `pr`, and of those, completed (the rest of the bench's runs stay as they are).
const TO_PR: std::ops::RangeInclusive<i64> = 101..=700;
const COMPLETED_UP_TO: i64 = 600;
/// Worker sessions per run, and analysis sessions: one per this many tasks.
const SESSIONS_PER_RUN: i64 = 6;
const TRIAGED_EVERY: i64 = 5;

pub async fn seed(store: &Store, url: &str, postgres: bool) {
    let started = Instant::now();
    for id in TO_PR {
        let step = |from, to, why| store.set_run_state_if(id, from, to, None, Actor::Runner, why);
        step(RunState::Queued, RunState::InProgress, "start").await.expect("in progress");
        step(RunState::InProgress, RunState::Pr, "draft PR").await.expect("pr");
        if id <= COMPLETED_UP_TO {
            store
                .complete_run_if(id, RunState::Pr, None, Actor::Runner, "green", &[])
                .await
                .expect("complete");
        }
    }
    if postgres {
        let pool = sqlx::PgPool::connect(url).await.expect("open the bench database");
        for sql in spread(Dialect::Postgres) {
            sqlx::query(&sql).execute(&pool).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
        pool.close().await;
    } else {
        let pool = sqlx::SqlitePool::connect(url).await.expect("open the bench database");
        for sql in spread(Dialect::Sqlite) {
            sqlx::query(&sql).execute(&pool).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
        pool.close().await;
    }
    let now = executor::store::now();
    for hour in 0..(90 * 24) {
        let reset = now - chrono::Duration::hours(hour) + chrono::Duration::minutes(30);
        let left = 5000 - (hour * 37) % 4000;
        store.record_github_usage(GITHUB_GRAPHQL, reset, left, Some(5000)).await.expect("points");
    }
    println!("seeded 90 days of history for the insights in {:.1}s", started.elapsed().as_secs_f64());
}

#[derive(Clone, Copy)]
enum Dialect {
    Sqlite,
    Postgres,
}

/// A timestamp `days` back from now, `secs` later: on SQLite text as executor writes it (RFC 3339,
/// UTC), on PostgreSQL a `timestamptz`; whole seconds on both.
fn back(dialect: Dialect, days: &str, secs: &str) -> String {
    match dialect {
        Dialect::Sqlite => format!(
            "strftime('%Y-%m-%dT%H:%M:%S', 'now', '-' || ({days}) || ' days', '+' || ({secs}) || ' seconds') || '+00:00'"
        ),
        Dialect::Postgres => format!(
            "(date_trunc('second', now()) - ({days}) * interval '1 day' + ({secs}) * interval '1 second')"
        ),
    }
}

/// Days back for the task of gid column `col` (`T-{n}`: n mod 90).
fn day_of_task(col: &str) -> String {
    format!("CAST(substr({col}, 3) AS INTEGER) % 90")
}

/// The statements that spread the history over 90 days and add the sessions.
fn spread(dialect: Dialect) -> Vec<String> {
    let back = |days: &str, secs: &str| back(dialect, days, secs);
    let task = day_of_task("task_gid");
    let run_task = day_of_task("r.task_gid");
    vec![
        // Every event on its task's day, in the order it was written.
        format!("UPDATE executor_events SET at = {} WHERE task_gid IS NOT NULL", back(&task, "id % 60000")),
        format!(
            "UPDATE executor_runs SET started_at = {}, \
             completed_at = CASE WHEN completed_at IS NULL THEN NULL ELSE {} END",
            back(&task, "40000"),
            back(&task, "80000")
        ),
        // Six workers a run, one of every kind, ended every way, each with its cost.
        format!(
            "WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n < {last}) \
             INSERT INTO executor_worker_sessions (run_id, kind, agent, host, started_at, ended_at, end_reason, cost_usd) \
             SELECT r.id, CASE k.n WHEN 0 THEN 'queued' WHEN 1 THEN 'in_progress' WHEN 2 THEN 'fix_ci' \
               WHEN 3 THEN 'fix_comments' WHEN 4 THEN 'pr_review' ELSE 'fix_conflicts' END, 'claude', 'bench', {}, {}, \
               CASE (r.id + k.n) % 7 WHEN 0 THEN 'failed' WHEN 1 THEN 'idle_timeout' WHEN 2 THEN 'interrupted' \
                 ELSE 'finished' END, 0.25 + ((r.id * 7 + k.n) % 40) / 10.0 \
             FROM executor_runs r, k",
            back(&run_task, "50000 + k.n * 60"),
            back(&run_task, "50000 + k.n * 60 + 50"),
            last = SESSIONS_PER_RUN - 1,
        ),
        // Triage for one task in TRIAGED_EVERY.
        format!(
            "INSERT INTO executor_analysis_sessions (task_gid, agent, host, started_at, ended_at, end_reason, cost_usd) \
             SELECT task_gid, 'claude', 'bench', {}, {}, 'finished', 0.05 FROM executor_queue WHERE id % {TRIAGED_EVERY} = 0",
            back(&task, "1000"),
            back(&task, "1100")
        ),
        "ANALYZE".to_string(),
    ]
}
