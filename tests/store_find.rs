//! Finding tasks, on SQLite and on PostgreSQL: the full-text search (words and prefixes, hostile query
//! syntax read as words, the index kept in step by every write), every sort both ways, and the filters.

mod common;

use chrono::{DateTime, Duration, Utc};
use common::TestDb;
use executor::domain::{Actor, QueueStatus, TaskGid};
use executor::store::{NewTask, Store, TaskFilter, TaskSort, Upserted, now};

on_both_databases!(
    a_search_matches_whole_words_and_their_starts_in_description_or_notes,
    hostile_query_syntax_is_read_as_words_and_never_errors,
    the_index_follows_every_write_of_the_text,
    every_sort_orders_both_ways_with_empty_values_last_and_ids_breaking_ties,
    the_filters_narrow_by_repo_priority_and_age_and_combine,
);

fn gid(s: &str) -> TaskGid {
    TaskGid::parse(s).unwrap()
}

async fn add(store: &Store, g: &str, t: NewTask) {
    store.upsert_task(&gid(g), &t, Actor::Cli).await.unwrap();
}

fn text(description: &str, notes: Option<&str>) -> NewTask {
    NewTask { description: Some(description.into()), notes: notes.map(Into::into), ..Default::default() }
}

/// The gids `f` lists, in order, after checking `count_tasks` agrees with the listing.
async fn listed(store: &Store, f: &TaskFilter) -> Vec<String> {
    let gids: Vec<String> =
        store.list_tasks(f).await.unwrap().into_iter().map(|t| t.task_gid.to_string()).collect();
    assert_eq!(store.count_tasks(f).await.unwrap(), gids.len() as i64, "count and listing agree for {f:?}");
    gids
}

/// The gids a search for `q` finds, sorted by gid.
async fn found(store: &Store, q: &str) -> Vec<String> {
    let f = TaskFilter { text: Some(q.into()), sort: TaskSort::Gid, ..Default::default() };
    listed(store, &f).await
}

async fn a_search_matches_whole_words_and_their_starts_in_description_or_notes(db: TestDb) {
    let store = db.open().await;
    add(&store, "a", text("Fix the Login page", None)).await;
    add(&store, "b", text("Crash in the parser", Some("see login.rs line 40"))).await;
    add(&store, "c", text("Flaky test_logout_flow in CI", None)).await;
    add(&store, "d", text("Über-long build on façade", Some("blogging platform"))).await;
    assert_eq!(found(&store, "login").await, ["a", "b"], "in the description or the notes");
    assert_eq!(found(&store, "LOG").await, ["a", "b", "c"], "the start of a word, any case");
    assert!(found(&store, "ogin").await.is_empty(), "the middle of a word is not a match");
    assert_eq!(found(&store, "login crash").await, ["b"], "every word, across description and notes");
    assert_eq!(found(&store, "login.rs").await, ["b"], "punctuation separates words, as in the text");
    assert_eq!(found(&store, "logout").await, ["c"], "`_` separates words in identifiers");
    assert_eq!(found(&store, "über FAÇADE").await, ["d"], "letters beyond ASCII, case folded");
    assert!(found(&store, "uber").await.is_empty(), "accents are kept on both databases");
    assert_eq!(found(&store, "").await.len(), 4, "no text narrows nothing");
    assert_eq!(found(&store, "  %%  ").await.len(), 4, "text without a word narrows nothing");
    let skipped =
        TaskFilter { text: Some("login".into()), status: Some(QueueStatus::Skip), ..Default::default() };
    assert!(listed(&store, &skipped).await.is_empty(), "the search combines with the other filters");
}

async fn hostile_query_syntax_is_read_as_words_and_never_errors(db: TestDb) {
    let store = db.open().await;
    add(&store, "h", text("Handle \"a\" OR * NEAR(b) and col:val pairs", Some("-x flag; it's 100% safe")))
        .await;
    add(&store, "p", text("plain task", None)).await;
    // Each of these is FTS5 or tsquery syntax (or SQL); read as words, they find the task that has them.
    for (q, want) in [
        (r#""a" OR * NEAR("#, vec!["h"]),
        ("-x", vec!["h"]),
        ("col:val", vec!["h"]),
        ("description:handle", vec![]),
        ("\"", vec!["h", "p"]),
        ("\"unclosed", vec![]),
        ("it's", vec!["h"]),
        ("'; DROP TABLE executor_queue; --", vec![]),
        ("a & !b | (c <-> d)", vec![]),
        ("plain AND NOT task", vec![]),
        ("NEAR", vec!["h"]),
        ("^plain", vec!["p"]),
        ("plain*", vec!["p"]),
        ("{col} : val", vec!["h"]),
        ("100%", vec!["h"]),
        ("\\", vec!["h", "p"]),
        ("\0", vec!["h", "p"]),
        ("😀 plain", vec!["p"]),
    ] {
        let f = TaskFilter { text: Some(q.into()), sort: TaskSort::Gid, ..Default::default() };
        let got = store.list_tasks(&f).await.unwrap_or_else(|e| panic!("{q:?} failed: {e}"));
        let got: Vec<String> = got.into_iter().map(|t| t.task_gid.to_string()).collect();
        assert_eq!(got, want, "{q:?}");
        store.count_tasks(&f).await.unwrap_or_else(|e| panic!("{q:?} failed to count: {e}"));
    }
    let long = "word ".repeat(10_000);
    assert!(found(&store, &long).await.is_empty(), "a very long query is answered (its first words)");
    assert_eq!(store.count_tasks(&TaskFilter::default()).await.unwrap(), 2, "nothing was dropped");
}

async fn the_index_follows_every_write_of_the_text(db: TestDb) {
    let store = db.open().await;
    add(&store, "t", text("alpha task", Some("first note"))).await;
    assert_eq!(found(&store, "alpha").await, ["t"]);
    // The tracker changes the text of a task not yet approved: the old words go, the new come.
    add(&store, "t", text("beta task", Some("second note"))).await;
    assert!(found(&store, "alpha").await.is_empty());
    assert!(found(&store, "first").await.is_empty());
    assert_eq!(found(&store, "beta second").await, ["t"]);
    // Approved, new text is a revision: the search matches the approved text until it is accepted.
    store.approve_task(&gid("t"), true, Actor::Cli).await.unwrap();
    let (_, done) = store.upsert_task(&gid("t"), &text("gamma task", None), Actor::Cli).await.unwrap();
    assert_eq!(done, Upserted::Revised);
    assert!(found(&store, "gamma").await.is_empty(), "a revision waiting for a human is not the text");
    assert_eq!(found(&store, "beta").await, ["t"]);
    store.accept_task_revision(&gid("t"), Actor::Cli).await.unwrap();
    assert_eq!(found(&store, "gamma").await, ["t"]);
    assert!(found(&store, "beta").await.is_empty());
    // Many tasks in one intake (multi-row statements) are indexed too.
    let many: Vec<(TaskGid, NewTask)> =
        (0..1500).map(|i| (gid(&format!("m{i}")), text(&format!("bulk item{i}"), None))).collect();
    store.upsert_tasks(&many, Actor::Cli).await.unwrap();
    assert_eq!(
        store.count_tasks(&TaskFilter { text: Some("bulk".into()), ..Default::default() }).await.unwrap(),
        1500
    );
    assert_eq!(found(&store, "item1499").await, ["m1499"]);
}

/// A task to sort: gid, source, priority, added and updated (days before the base time).
type Sortable = (&'static str, Option<&'static str>, Option<i32>, i64, i64);

/// Tasks whose every sortable column differs, dated so that added and updated disagree.
async fn seed_sortable(store: &Store, base: DateTime<Utc>) {
    let rows: [Sortable; 5] = [
        ("e", Some("zeta"), Some(2), 5, 1),
        ("b", None, Some(1), 4, 2),
        ("d", Some("alpha"), None, 3, 3),
        ("a", Some("alpha"), Some(2), 2, 5),
        ("c", Some("mid"), Some(1), 1, 4),
    ];
    for (g, source, priority, _, _) in rows {
        add(store, g, NewTask { source: source.map(Into::into), priority, ..text(g, None) }).await;
    }
    store.set_task_analysis(&gid("a"), None, Some("high"), Some("easy"), None).await.unwrap();
    store.set_task_analysis(&gid("c"), None, Some("low"), Some("hard"), None).await.unwrap();
    store.set_task_status(&gid("b"), QueueStatus::Skip, Actor::Cli, Some("no")).await.unwrap();
    // Dated last: the writes above stamp `updated_at`.
    for (g, _, _, added_days_ago, updated_days_ago) in rows {
        let added = base - Duration::days(added_days_ago);
        let updated = base - Duration::days(updated_days_ago);
        assert!(
            store
                .date_imported_task(&gid(g), base - Duration::hours(1), Some(added), Some(updated))
                .await
                .unwrap()
        );
    }
}

async fn every_sort_orders_both_ways_with_empty_values_last_and_ids_breaking_ties(db: TestDb) {
    let store = db.open().await;
    seed_sortable(&store, now()).await;
    // Ascending; descending is exactly the reverse (ids, in insertion order e b d a c, break ties).
    for (sort, ascending) in [
        (TaskSort::Priority, ["b", "c", "e", "a", "d"]),
        (TaskSort::Gid, ["a", "b", "c", "d", "e"]),
        (TaskSort::Source, ["d", "a", "c", "e", "b"]),
        (TaskSort::Status, ["c", "e", "a", "d", "b"]),
        (TaskSort::Complexity, ["a", "c", "e", "b", "d"]),
        (TaskSort::Feasibility, ["a", "c", "e", "b", "d"]),
        (TaskSort::Added, ["e", "b", "d", "a", "c"]),
        (TaskSort::Updated, ["a", "c", "d", "b", "e"]),
    ] {
        let f = TaskFilter { sort, ..Default::default() };
        assert_eq!(listed(&store, &f).await, ascending, "{sort:?} ascending");
        let mut descending = ascending.to_vec();
        descending.reverse();
        assert_eq!(
            listed(&store, &TaskFilter { descending: true, ..f }).await,
            descending,
            "{sort:?} descending"
        );
    }
    // A page of a sort is the same rows every time.
    let page = TaskFilter { sort: TaskSort::Source, limit: Some(2), offset: Some(1), ..Default::default() };
    assert_eq!(listed_page(&store, &page).await, ["a", "c"]);
}

async fn listed_page(store: &Store, f: &TaskFilter) -> Vec<String> {
    store.list_tasks(f).await.unwrap().into_iter().map(|t| t.task_gid.to_string()).collect()
}

async fn the_filters_narrow_by_repo_priority_and_age_and_combine(db: TestDb) {
    let store = db.open().await;
    let base = now();
    seed_sortable(&store, base).await;
    add(&store, "r", NewTask { repo: Some("api".into()), priority: Some(3), ..text("in api", None) }).await;
    let gids = |f: TaskFilter| {
        let store = store.clone();
        async move { listed(&store, &TaskFilter { sort: TaskSort::Gid, ..f }).await }
    };
    assert_eq!(gids(TaskFilter { repo: Some("api".into()), ..Default::default() }).await, ["r"]);
    assert!(gids(TaskFilter { repo: Some("ap".into()), ..Default::default() }).await.is_empty(), "exact");
    assert_eq!(
        gids(TaskFilter { priority_min: Some(1), priority_max: Some(1), ..Default::default() }).await,
        ["b", "c"]
    );
    assert_eq!(gids(TaskFilter { priority_min: Some(2), ..Default::default() }).await, ["a", "e", "r"]);
    assert_eq!(gids(TaskFilter { priority_max: Some(2), ..Default::default() }).await, ["a", "b", "c", "e"]);
    let days = |n: i64| Some(base - Duration::days(n));
    assert_eq!(gids(TaskFilter { added_since: days(2), ..Default::default() }).await, ["a", "c", "r"]);
    assert_eq!(gids(TaskFilter { added_before: days(3), ..Default::default() }).await, ["b", "e"]);
    assert_eq!(
        gids(TaskFilter { added_since: days(4), added_before: days(1), ..Default::default() }).await,
        ["a", "b", "d"],
        "added within 4 days and older than 1"
    );
    let all = TaskFilter {
        status: Some(QueueStatus::Pending),
        source: Some("alpha".into()),
        priority_min: Some(2),
        added_since: days(10),
        text: Some("a".into()),
        ..Default::default()
    };
    assert_eq!(gids(all).await, ["a"], "every filter at once");
}
