//! An intake stores each page as it arrives and moves the cursor only after the last one: the fake
//! Asana holds the last page unanswered while the test looks at the database, then serves it (or a
//! 500). On SQLite and on PostgreSQL.

mod common;
#[path = "fake_asana/mod.rs"]
mod fake_asana;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use executor::config::Config;
use executor::intake::run::{IntakeReport, intake};
use executor::store::{Store, TaskFilter};
use fake_asana::{FakeAsana, Fault, task};

const TOKEN: &str = "2/1234567890/secret-token-value";
/// Three pages of Asana's 100: the third is the one held.
const TASKS: usize = 250;
const LAST_PAGE: usize = 3;

/// Task `n` was modified on day `n` of 2026 (mod 28 days, so no page is in order).
fn modified(n: usize) -> String {
    format!("2026-{:02}-{:02}T00:00:00.000Z", 1 + n % 12, 1 + n % 28)
}

fn latest() -> DateTime<Utc> {
    (1..=TASKS)
        .map(|n| DateTime::parse_from_rfc3339(&modified(n)).unwrap().with_timezone(&Utc))
        .max()
        .unwrap()
}

async fn setup() -> (FakeAsana, Config) {
    let fake = FakeAsana::start(TOKEN).await;
    for n in 1..=TASKS {
        fake.add_project_task("100", task(&n.to_string(), &format!("Task {n}"), &modified(n)));
    }
    fake.hold_request(LAST_PAGE);
    let config = Config::parse(&format!(
        "[[sources]]\nname = \"backlog\"\nkind = \"asana\"\napi_url = \"{}\"\nprojects = [\"100\"]\n\
         token_env = \"ASANA_TOKEN\"\n",
        fake.url
    ))
    .unwrap();
    (fake, config)
}

async fn stored(store: &Store) -> i64 {
    store.count_tasks(&TaskFilter::default()).await.unwrap()
}

/// Waits (polling) until the first pages are in the database while the last is held, and checks the
/// cursor has not moved. On an intake that holds the whole fetch, nothing is stored before the last
/// page, so this fails after a minute rather than hanging.
async fn first_pages_stored_while_the_last_is_held(fake: &FakeAsana, store: &Store) {
    let wait = async {
        while !(fake.holding() && stored(store).await == 200) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let stored_in_time = tokio::time::timeout(Duration::from_secs(60), wait).await.is_ok();
    let count = stored(store).await;
    // Released either way, so the intake ends and a failure reports rather than hangs.
    assert!(stored_in_time, "pages 1 and 2 were not stored while page 3 was held: {count} tasks stored");
    assert_eq!(store.source_cursor("backlog").await.unwrap(), None, "the cursor moved before the end");
}

async fn run(store: &Store, config: &Config) -> IntakeReport {
    let env: executor::intake::source::EnvLookup =
        Arc::new(|name| (name == "ASANA_TOKEN").then(|| TOKEN.to_string()));
    intake(config, store, None, false, env, None).await.unwrap()
}

async fn pages_are_stored_as_they_come_and_the_cursor_moves_at_the_end(store: Store) {
    let (fake, config) = setup().await;
    let check = async {
        first_pages_stored_while_the_last_is_held(&fake, &store).await;
        fake.release();
    };
    let (report, ()) = tokio::join!(run(&store, &config), check);

    let source = &report.sources[0];
    assert_eq!(source.error, None);
    assert_eq!((source.fetched, source.added), (TASKS, TASKS));
    assert_eq!(stored(&store).await, i64::try_from(TASKS).unwrap());
    assert_eq!(store.source_cursor("backlog").await.unwrap(), Some(latest()));
}

async fn a_later_page_that_fails_keeps_the_stored_pages_and_the_cursor(store: Store) {
    let (fake, config) = setup().await;
    let check = async {
        first_pages_stored_while_the_last_is_held(&fake, &store).await;
        fake.fail_next(Fault::Status(500));
        fake.release();
    };
    let (report, ()) = tokio::join!(run(&store, &config), check);

    let source = &report.sources[0];
    let error = source.error.as_deref().unwrap_or_default();
    assert!(error.contains("500"), "{error}");
    assert_eq!(source.added, 200);
    assert_eq!(stored(&store).await, 200);
    let cursors = store.source_cursors().await.unwrap();
    assert_eq!(cursors[0].cursor, None, "the cursor moved after a failed page");
    assert!(cursors[0].last_error.as_deref().is_some_and(|e| e.contains("500")), "{cursors:?}");
}

#[tokio::test]
async fn pages_are_stored_as_they_come_on_sqlite() {
    let db = common::sqlite();
    pages_are_stored_as_they_come_and_the_cursor_moves_at_the_end(db.open().await).await;
}

#[tokio::test]
async fn pages_are_stored_as_they_come_on_postgres() {
    let Some(db) = common::postgres("pages_are_stored_as_they_come").await else { return };
    pages_are_stored_as_they_come_and_the_cursor_moves_at_the_end(db.open().await).await;
}

#[tokio::test]
async fn a_failing_later_page_keeps_the_stored_ones_on_sqlite() {
    let db = common::sqlite();
    a_later_page_that_fails_keeps_the_stored_pages_and_the_cursor(db.open().await).await;
}

#[tokio::test]
async fn a_failing_later_page_keeps_the_stored_ones_on_postgres() {
    let Some(db) = common::postgres("a_failing_later_page").await else { return };
    a_later_page_that_fails_keeps_the_stored_pages_and_the_cursor(db.open().await).await;
}
