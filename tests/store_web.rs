//! What the dashboard asks of the store, on SQLite and on PostgreSQL: the text search of the queue, the
//! shared approval, the aggregates behind `/metrics`, and the runs "Needs you" lists because they wait
//! on a person's word (a plan, a question).

mod common;

use common::TestDb;
use executor::domain::{Actor, AnswerVia, By, EndReason, QueueStatus, RunState, TaskGid, WorkerKind};
use executor::store::{NeedsYouLimits, NewTask, PlanVerdict, Store, StoreError, TaskFilter, WorkerEnd};

on_both_databases!(
    the_search_matches_words_of_description_or_notes_ignoring_case,
    approval_is_one_path_with_its_refusals,
    worker_durations_sum_the_ended_sessions_by_kind,
    plans_and_questions_that_wait_on_a_person_are_listed_until_answered,
);

fn gid(s: &str) -> TaskGid {
    TaskGid::parse(s).unwrap()
}

fn task(description: &str, notes: Option<&str>) -> NewTask {
    NewTask { description: Some(description.into()), notes: notes.map(Into::into), ..Default::default() }
}

async fn the_search_matches_words_of_description_or_notes_ignoring_case(db: TestDb) {
    let store = db.open().await;
    store.upsert_task(&gid("a"), &task("Fix the Login page", None), Actor::Cli).await.unwrap();
    store.upsert_task(&gid("b"), &task("other", Some("see login.rs")), Actor::Cli).await.unwrap();
    store.upsert_task(&gid("c"), &task("50% faster_build", None), Actor::Cli).await.unwrap();
    store.upsert_task(&gid("d"), &task("50 faster builds", Some("a\\b")), Actor::Cli).await.unwrap();
    let find = |text: &str| TaskFilter { text: Some(text.into()), ..Default::default() };
    let gids = |tasks: Vec<executor::domain::Task>| -> Vec<String> {
        tasks.iter().map(|t| t.task_gid.to_string()).collect()
    };
    assert_eq!(gids(store.list_tasks(&find("LOGIN")).await.unwrap()), ["a", "b"]);
    assert_eq!(store.count_tasks(&find("login")).await.unwrap(), 2);
    // Words, not characters: `%` and `_` separate words, and each word may start one ("build").
    assert_eq!(gids(store.list_tasks(&find("50%")).await.unwrap()), ["c", "d"]);
    assert_eq!(gids(store.list_tasks(&find("faster_build")).await.unwrap()), ["c", "d"]);
    assert!(store.list_tasks(&find("r_b")).await.unwrap().is_empty(), "no word starts with r");
    assert_eq!(gids(store.list_tasks(&find("a\\b")).await.unwrap()), ["d"]);
    assert_eq!(store.count_tasks(&find("nowhere")).await.unwrap(), 0);
    let both = TaskFilter { status: Some(QueueStatus::Skip), ..find("login") };
    assert_eq!(store.count_tasks(&both).await.unwrap(), 0);
}

async fn approval_is_one_path_with_its_refusals(db: TestDb) {
    let store = db.open().await;
    let g = gid("p");
    store.upsert_task(&g, &task("pending", None), Actor::Cli).await.unwrap();
    let refused = store.approve_task(&g, false, Actor::Web).await.unwrap_err();
    assert!(matches!(&refused, StoreError::Refused(why) if why.contains("pending")), "{refused}");
    let done = store.approve_task(&g, true, Actor::Web).await.unwrap();
    assert_eq!((done.task.status, done.revision_approved), (QueueStatus::Approved, false));
    assert!(matches!(store.approve_task(&g, false, Actor::Web).await, Err(StoreError::Illegal(_))));
    // New text for an approved task is a revision; approving again accepts it.
    store.upsert_task(&g, &task("pending, revised", None), Actor::Cli).await.unwrap();
    let done = store.approve_task(&g, false, Actor::Web).await.unwrap();
    assert!(done.revision_approved);
    assert_eq!(done.task.description.as_deref(), Some("pending, revised"));
    assert!(matches!(
        store.approve_task(&gid("nope"), false, Actor::Web).await,
        Err(StoreError::UnknownTask(_))
    ));
}

async fn worker_durations_sum_the_ended_sessions_by_kind(db: TestDb) {
    let store = db.open().await;
    assert!(store.worker_durations().await.unwrap().is_empty());
    assert_eq!(store.live_worker_count().await.unwrap(), 0);
    let mut runs = Vec::new();
    for name in ["r1", "r2", "r3"] {
        store.upsert_task(&gid(name), &task(name, None), Actor::Cli).await.unwrap();
        store.approve_task(&gid(name), true, Actor::Cli).await.unwrap();
        runs.push(store.create_run_for_task(&gid(name), Actor::Runner).await.unwrap().unwrap().id);
    }
    for (run, kind) in
        [(runs[0], WorkerKind::Queued), (runs[1], WorkerKind::Queued), (runs[2], WorkerKind::FixCi)]
    {
        let s =
            store.begin_worker_session(run, kind, "claude", "h", &Default::default()).await.unwrap().unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        store.end_worker_session(s.id, None, &WorkerEnd::new(EndReason::Finished)).await.unwrap();
    }
    store
        .begin_worker_session(runs[0], WorkerKind::InProgress, "claude", "h", &Default::default())
        .await
        .unwrap();
    assert_eq!(store.live_worker_count().await.unwrap(), 1);
    let d = store.worker_durations().await.unwrap();
    let kinds: Vec<(&str, i64)> = d.iter().map(|d| (d.kind.as_str(), d.count)).collect();
    assert_eq!(kinds, [("fix_ci", 1), ("queued", 2)]);
    assert!(d[1].seconds >= 0.04 && d[1].seconds < 60.0, "{d:?}");
}

/// A queued run of a new approved task.
async fn queued_run(store: &Store, name: &str) -> i64 {
    store.upsert_task(&gid(name), &task(&format!("{name} title\nmore"), None), Actor::Cli).await.unwrap();
    store.approve_task(&gid(name), true, Actor::Cli).await.unwrap();
    store.create_run_for_task(&gid(name), Actor::Runner).await.unwrap().unwrap().id
}

/// A worker of `kind` for `run` that has ended: its id, for what it handed a person.
async fn ended_worker(store: &Store, run: i64, kind: WorkerKind) -> i64 {
    let s = store.begin_worker_session(run, kind, "claude", "h", &Default::default()).await.unwrap().unwrap();
    store.end_worker_session(s.id, None, &WorkerEnd::new(EndReason::Finished)).await.unwrap();
    s.id
}

async fn plans_and_questions_that_wait_on_a_person_are_listed_until_answered(db: TestDb) {
    let store = db.open().await;
    let limits = NeedsYouLimits { per_list: 10, max_analysis_attempts: 3 };
    // A plan that waits (longer than a list item carries), one rewritten after changes were asked for
    // (its newest revision waits), one approved, and one of a run abandoned since.
    let waits = queued_run(&store, "pl-1").await;
    let long = format!("# Plan\n{}", "x".repeat(3000));
    store.record_plan(waits, ended_worker(&store, waits, WorkerKind::Plan).await, &long).await.unwrap();
    let rewritten = queued_run(&store, "pl-2").await;
    store
        .record_plan(rewritten, ended_worker(&store, rewritten, WorkerKind::Plan).await, "v1")
        .await
        .unwrap();
    let back = PlanVerdict::RequestChanges("smaller steps".into());
    store.decide_plan(rewritten, &back, By::person(Actor::Cli, "alice")).await.unwrap();
    store
        .record_plan(rewritten, ended_worker(&store, rewritten, WorkerKind::Plan).await, "v2")
        .await
        .unwrap();
    let approved = queued_run(&store, "pl-3").await;
    store.record_plan(approved, ended_worker(&store, approved, WorkerKind::Plan).await, "ok").await.unwrap();
    store.decide_plan(approved, &PlanVerdict::Approve, Actor::Cli).await.unwrap();
    let gone = queued_run(&store, "pl-4").await;
    store.record_plan(gone, ended_worker(&store, gone, WorkerKind::Plan).await, "moot").await.unwrap();
    store
        .ask_question(gone, ended_worker(&store, gone, WorkerKind::Queued).await, WorkerKind::Queued, "moot?")
        .await
        .unwrap();
    store
        .set_run_state_if(gone, RunState::Queued, RunState::Abandoned, None, Actor::Runner, "t")
        .await
        .unwrap();
    // A question nobody answered (of a run in progress), and one answered already.
    let asks = queued_run(&store, "qu-1").await;
    store
        .set_run_state_if(asks, RunState::Queued, RunState::InProgress, None, Actor::Runner, "t")
        .await
        .unwrap();
    let asker = ended_worker(&store, asks, WorkerKind::Queued).await;
    store.ask_question(asks, asker, WorkerKind::Queued, "Which locale is the default?").await.unwrap();
    let answered = queued_run(&store, "qu-2").await;
    let s = ended_worker(&store, answered, WorkerKind::Queued).await;
    store.ask_question(answered, s, WorkerKind::Queued, "Done?").await.unwrap();
    store.answer_question(answered, "yes", AnswerVia::Cli, Actor::Cli).await.unwrap();

    let needs = store.needs_you(limits).await.unwrap();
    let plans: Vec<(i64, i64)> = needs.plans_awaiting.items.iter().map(|p| (p.run.id, p.revision)).collect();
    assert_eq!(plans, [(waits, 1), (rewritten, 2)], "oldest run first, its newest revision");
    let first = &needs.plans_awaiting.items[0];
    assert_eq!(first.plan_text.chars().count(), 2000, "an item carries the plan's beginning");
    assert!(first.plan_text.starts_with("# Plan\n"));
    assert_eq!(first.task_text.as_deref(), Some("pl-1 title\nmore"));
    assert_eq!(needs.plans_awaiting.items[1].plan_text, "v2");
    let questions: Vec<(i64, &str)> =
        needs.open_questions.items.iter().map(|q| (q.run.id, q.question.as_str())).collect();
    assert_eq!(questions, [(asks, "Which locale is the default?")], "not answered, not abandoned");
    assert_eq!(needs.open_questions.items[0].worker_kind, WorkerKind::Queued);
    assert_eq!(needs.open_questions.items[0].question_id, store.questions(asks).await.unwrap()[0].id);
    assert_eq!(needs.total(), 3, "every list counts");
    // Bounded like every list: the oldest first.
    let one = store.needs_you(NeedsYouLimits { per_list: 1, ..limits }).await.unwrap();
    assert_eq!(one.plans_awaiting.items.iter().map(|p| p.run.id).collect::<Vec<_>>(), [waits]);
    // Counted whole, not as the part returned (issue 35, item 4: 50 budget stops showed "20").
    assert_eq!((one.plans_awaiting.total, one.total()), (2, 3));
    // The rest of a list is reached from where the part ended.
    let rest = store.needs_you_from(NeedsYouLimits { per_list: 1, ..limits }, 1).await.unwrap();
    assert_eq!(rest.plans_awaiting.items.len(), 1);
    assert_ne!(rest.plans_awaiting.items[0].run.id, waits);

    // A person's word takes each off the list.
    store.decide_plan(waits, &PlanVerdict::Approve, Actor::Web).await.unwrap();
    store.decide_plan(rewritten, &PlanVerdict::Approve, Actor::Web).await.unwrap();
    store.answer_question(asks, "en-GB", AnswerVia::Web, Actor::Web).await.unwrap();
    let needs = store.needs_you(limits).await.unwrap();
    assert!(needs.plans_awaiting.items.is_empty() && needs.open_questions.items.is_empty(), "{needs:?}");
    assert_eq!(needs.total(), 0);
}
