//! The counts the status and the insights answer from indexes (migration 23) against a direct count:
//! every row read back and counted here, on a seeded database with events on many days (some a second
//! either side of midnight) and pending tasks in every analysis state, on SQLite and PostgreSQL.

mod common;

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Duration, NaiveDate, Utc};
use common::TestDb;
use executor::domain::{Actor, QueueStatus, RunState, TaskGid};
use executor::store::{DayFlow, NewTask, PendingDetail, Store, now, start_of_day};

on_both_databases!(
    tasks_in_and_out_per_day_equal_a_count_of_every_event,
    the_pending_detail_equals_a_count_of_every_pending_task,
);

/// Tasks seeded; every fifth approved, every seventh of the others skipped.
const TASKS: usize = 240;

fn gid(i: usize) -> TaskGid {
    TaskGid::parse(&format!("F-{i}")).unwrap()
}

/// An event as read back: id, kind, new state, run, time.
type EventRow = (i64, String, Option<String>, Option<i64>, DateTime<Utc>);

/// A database either way, for the statements a store has no operation for (rewriting history) and for
/// reading every row back.
enum Direct {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

impl Direct {
    async fn connect(db: &TestDb) -> Direct {
        if db.url.starts_with("postgres") {
            Direct::Postgres(sqlx::PgPool::connect(&db.url).await.unwrap())
        } else {
            Direct::Sqlite(sqlx::SqlitePool::connect(&db.url).await.unwrap())
        }
    }

    /// Runs `sql` with `time` and `id` bound as $1 and $2.
    async fn set(&self, sql: &str, time: Option<DateTime<Utc>>, id: i64) {
        match self {
            Direct::Sqlite(p) => sqlx::query(sql).bind(time).bind(id).execute(p).await.map(drop),
            Direct::Postgres(p) => sqlx::query(sql).bind(time).bind(id).execute(p).await.map(drop),
        }
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// Every event: id, kind, new state, run, time.
    async fn events(&self) -> Vec<EventRow> {
        let sql = "SELECT id, kind, to_state, run_id, at FROM executor_events ORDER BY id";
        match self {
            Direct::Sqlite(p) => sqlx::query_as(sql).fetch_all(p).await.unwrap(),
            Direct::Postgres(p) => sqlx::query_as(sql).fetch_all(p).await.unwrap(),
        }
    }

    /// Every pending task's analysis attempts, retry time and claim expiry.
    async fn pending(&self) -> Vec<(i64, Option<DateTime<Utc>>, Option<DateTime<Utc>>)> {
        let sql = "SELECT analysis_attempts, analysis_retry_at, claim_expires_at FROM executor_queue \
                   WHERE status = 'pending'";
        match self {
            Direct::Sqlite(p) => sqlx::query_as(sql).fetch_all(p).await.unwrap(),
            Direct::Postgres(p) => sqlx::query_as(sql).fetch_all(p).await.unwrap(),
        }
    }

    async fn close(self) {
        match self {
            Direct::Sqlite(p) => p.close().await,
            Direct::Postgres(p) => p.close().await,
        }
    }
}

/// Tasks added, some approved with runs that complete (one twice, after coming back to `pr`) or are
/// abandoned, some skipped; then every event moved to a day of the last 100, at a time that puts some
/// exactly on midnight and some a second before it.
async fn seed_history(store: &Store, direct: &Direct) {
    let tasks: Vec<(TaskGid, NewTask)> = (0..TASKS)
        .map(|i| (gid(i), NewTask { description: Some(format!("task {i}")), ..Default::default() }))
        .collect();
    let mut intake = store.begin_intake(Actor::Cli).await.unwrap();
    intake.add(&tasks).await.unwrap();
    intake.commit().await.unwrap();
    for i in (0..TASKS).step_by(5) {
        store.approve_task(&gid(i), true, Actor::Cli).await.unwrap();
        let run = store.create_run_for_task(&gid(i), Actor::Runner).await.unwrap().unwrap().id;
        let step = |from, to| store.set_run_state_if(run, from, to, None, Actor::Runner, "seed");
        step(RunState::Queued, RunState::InProgress).await.unwrap();
        step(RunState::InProgress, RunState::Pr).await.unwrap();
        if i % 3 == 0 {
            store.abandon_run(run, Actor::Cli, "seed").await.unwrap();
            continue;
        }
        store.complete_run_if(run, RunState::Pr, None, Actor::Runner, "green", &[]).await.unwrap();
        if i % 4 == 0 {
            step(RunState::Complete, RunState::Pr).await.unwrap();
            store.complete_run_if(run, RunState::Pr, None, Actor::Runner, "green", &[]).await.unwrap();
        }
    }
    for i in (1..TASKS).step_by(7).filter(|i| i % 5 != 0) {
        store.set_task_status(&gid(i), QueueStatus::Skip, Actor::Cli, Some("seed")).await.unwrap();
    }
    let today = start_of_day(now());
    for (id, ..) in direct.events().await {
        let day = today - Duration::days(id * 7 % 100);
        let at = match id % 4 {
            0 => day,
            1 => day - Duration::seconds(1),
            _ => day + Duration::seconds(id * 997 % 86_400),
        };
        direct.set("UPDATE executor_events SET at = $1 WHERE id = $2", Some(at), id).await;
    }
}

/// Tasks in and out per day from `since`, counted here from every event.
fn count_directly(events: &[EventRow], since: DateTime<Utc>) -> Vec<DayFlow> {
    let mut days: BTreeMap<NaiveDate, (DayFlow, HashSet<i64>, HashSet<i64>)> = BTreeMap::new();
    for (_, kind, to, run, at) in
        events.iter().filter(|e| e.4 >= since && e.4 < start_of_day(now()) + Duration::days(1))
    {
        let day = at.date_naive();
        let (flow, completed, abandoned) = days
            .entry(day)
            .or_insert_with(|| (DayFlow { day, ..Default::default() }, HashSet::new(), HashSet::new()));
        match (kind.as_str(), to.as_deref()) {
            ("task_added", _) => flow.intake += 1,
            ("queue_status", Some("skip")) => flow.skipped += 1,
            ("queue_status", Some("approved")) => flow.approved += 1,
            ("run_state", Some("complete")) => completed.extend(*run),
            ("run_state", Some("abandoned")) => abandoned.extend(*run),
            _ => {}
        }
    }
    days.into_values()
        .map(|(flow, completed, abandoned)| DayFlow {
            completed: completed.len() as i64,
            abandoned: abandoned.len() as i64,
            ..flow
        })
        .filter(|f| f.intake + f.skipped + f.approved + f.completed + f.abandoned > 0)
        .collect()
}

async fn tasks_in_and_out_per_day_equal_a_count_of_every_event(db: TestDb) {
    let store = db.open().await;
    let direct = Direct::connect(&db).await;
    seed_history(&store, &direct).await;
    let events = direct.events().await;
    let today = start_of_day(now());
    for since in [today - Duration::days(89), today - Duration::days(29) + Duration::hours(7), today] {
        let expected = count_directly(&events, since);
        assert!(!expected.is_empty(), "the seed has events since {since}");
        assert_eq!(store.day_flows(since).await.unwrap(), expected, "since {since}");
    }
    let ninety = store.day_flows(today - Duration::days(89)).await.unwrap();
    assert!(ninety.len() > 60, "events on most days: {}", ninety.len());
    let total = |f: fn(&DayFlow) -> i64| ninety.iter().map(f).sum::<i64>();
    assert!(total(|f| f.intake) > 100 && total(|f| f.skipped) > 10 && total(|f| f.completed) > 10);
    assert!(total(|f| f.abandoned) > 5 && total(|f| f.approved) > 20);
    direct.close().await;
    store.close().await;
}

async fn the_pending_detail_equals_a_count_of_every_pending_task(db: TestDb) {
    let store = db.open().await;
    let direct = Direct::connect(&db).await;
    let tasks: Vec<(TaskGid, NewTask)> = (0..TASKS)
        .map(|i| (gid(i), NewTask { description: Some(format!("task {i}")), ..Default::default() }))
        .collect();
    let mut intake = store.begin_intake(Actor::Cli).await.unwrap();
    intake.add(&tasks).await.unwrap();
    intake.commit().await.unwrap();
    for i in (0..TASKS).step_by(9) {
        store.set_task_status(&gid(i), QueueStatus::Skip, Actor::Cli, Some("seed")).await.unwrap();
    }
    // Every mix of attempts (0 to 4), retry time (none, past, future) and claim (none, expired, live),
    // set on the database, as the analyzer's failures and claims would leave them.
    let soon = now() + Duration::hours(2);
    let past = now() - Duration::hours(2);
    let times = [None, Some(past), Some(soon)];
    for i in 0..TASKS {
        let id: i64 = i.try_into().unwrap();
        let sql = "UPDATE executor_queue SET analysis_attempts = $2 % 5, analysis_retry_at = $1 \
                   WHERE task_gid = 'F-' || $2";
        direct.set(sql, times[i / 5 % 3], id).await;
        let sql = "UPDATE executor_queue SET claim_expires_at = $1 WHERE task_gid = 'F-' || $2";
        direct.set(sql, times[i / 15 % 3], id).await;
    }
    let rows = direct.pending().await;
    for max_attempts in [0u32, 1, 3, 10] {
        let mut expected = PendingDetail::default();
        let t = now();
        for (attempts, retry, claim) in &rows {
            if *attempts >= i64::from(max_attempts) {
                expected.given_up += 1;
            } else if retry.is_some_and(|r| r > t) {
                expected.backing_off += 1;
            } else if claim.is_some_and(|c| c >= t) {
                expected.analyzing += 1;
            } else {
                expected.claimable += 1;
            }
        }
        assert_eq!(
            store.pending_detail(max_attempts).await.unwrap(),
            expected,
            "max_attempts {max_attempts}"
        );
        if max_attempts == 3 {
            let e = expected;
            assert!(e.given_up > 0 && e.backing_off > 0 && e.analyzing > 0 && e.claimable > 0, "{e:?}");
        }
    }
    direct.close().await;
    store.close().await;
}
