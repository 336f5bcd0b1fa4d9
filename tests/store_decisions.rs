//! What a human decided stays decided (issue 20, items 8-9), in the store, on SQLite and PostgreSQL:
//! every skip records who made it (a human's whatever decided before), a completion records the ids of
//! the comments it saw (cleared when the run goes back to pr), and schema v8 fills in the skips made
//! before it from their history.

mod common;

use chrono::Duration;
use common::TestDb;
use executor::domain::{Actor, EndReason, QueueStatus, RunState, SkippedBy, TaskGid, WorkerKind};
use executor::store::{NewTask, OfferTally, SessionStart, Store, Triage, WorkerEnd};

on_both_databases!(
    every_skip_records_who_made_it,
    a_completion_records_the_comments_it_saw,
    each_fix_comments_worker_is_judged_by_what_it_was_given_and_answered
);

fn gid(s: &str) -> TaskGid {
    TaskGid::parse(s).unwrap()
}

async fn added(store: &Store, g: &str) -> TaskGid {
    let g = gid(g);
    let new = NewTask { description: Some("work".into()), ..Default::default() };
    store.upsert_task(&g, &new, Actor::Cli).await.unwrap();
    g
}

fn triage(status: QueueStatus) -> Triage {
    Triage {
        status,
        priority: 3,
        complexity: "low".into(),
        feasibility: "high".into(),
        summary: "s".into(),
        acceptance_criteria: Vec::new(),
    }
}

async fn skipped_by(store: &Store, g: &TaskGid) -> Option<SkippedBy> {
    store.task(g).await.unwrap().skipped_by
}

/// Claims the next pending task (the only one the test just added).
async fn claim(store: &Store) -> TaskGid {
    store.claim_for_analysis("a", Duration::minutes(5), 3).await.unwrap().unwrap().task_gid
}

async fn every_skip_records_who_made_it(db: TestDb) {
    let store = db.open().await;
    let filtered = added(&store, "f").await;
    assert!(store.record_filter_skip(&claim(&store).await, "a", "figma", "design").await.unwrap());
    let triaged = added(&store, "t").await;
    assert!(store.record_triage(&claim(&store).await, "a", &triage(QueueStatus::Skip)).await.unwrap());
    // The issue's case: the triage sent it for review, then a human skipped it.
    let reviewed = added(&store, "h").await;
    assert!(store.record_triage(&claim(&store).await, "a", &triage(QueueStatus::ForReview)).await.unwrap());
    assert_eq!(skipped_by(&store, &reviewed).await, None, "not skipped");
    store.set_task_status(&reviewed, QueueStatus::Skip, Actor::Cli, Some("duplicate of t")).await.unwrap();
    let imported = added(&store, "i").await;
    store.skip_imported_task(&imported, Actor::Cli, Some("imported from v1")).await.unwrap();

    assert_eq!(skipped_by(&store, &filtered).await, Some(SkippedBy::Filter));
    assert_eq!(skipped_by(&store, &triaged).await, Some(SkippedBy::Triage));
    assert_eq!(skipped_by(&store, &reviewed).await, Some(SkippedBy::Human));
    assert_eq!(skipped_by(&store, &imported).await, Some(SkippedBy::Imported));

    // Sent back, a task is no longer anyone's skip; triaged again into review, still nobody's.
    assert_eq!(
        store.send_back_for_analysis(std::slice::from_ref(&reviewed), Actor::Cli, "x").await.unwrap(),
        1
    );
    assert_eq!(skipped_by(&store, &reviewed).await, None);
    assert!(store.record_triage(&claim(&store).await, "a", &triage(QueueStatus::ForReview)).await.unwrap());
    assert_eq!(skipped_by(&store, &reviewed).await, None);
    store.close().await;
}

async fn a_completion_records_the_comments_it_saw(db: TestDb) {
    let store = db.open().await;
    let g = added(&store, "r").await;
    store.set_task_status(&g, QueueStatus::AwaitingGo, Actor::Cli, None).await.unwrap();
    store.set_task_status(&g, QueueStatus::Approved, Actor::Cli, None).await.unwrap();
    let run = store.create_run_for_task(&g, Actor::Runner).await.unwrap().unwrap();
    store
        .set_run_state_if(run.id, RunState::Queued, RunState::InProgress, None, Actor::Runner, "w")
        .await
        .unwrap();
    store
        .set_run_state_if(run.id, RunState::InProgress, RunState::Pr, None, Actor::Runner, "pr")
        .await
        .unwrap();
    let seen = |ids: &[&str]| ids.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let memory = |store: &Store| {
        let store = store.clone();
        async move { store.run_memory(run.id).await.unwrap().completion_comment_ids }
    };

    let done = store
        .complete_run_if(run.id, RunState::Pr, None, Actor::Runner, "green", &seen(&["IC_1", "PRRC_2"]))
        .await
        .unwrap();
    assert_eq!(done.state, RunState::Complete);
    assert_eq!(memory(&store).await, Some(seen(&["IC_1", "PRRC_2"])));
    // Back to pr: what the completion saw no longer holds.
    store.set_run_state_if(run.id, RunState::Complete, RunState::Pr, None, Actor::Runner, "c").await.unwrap();
    assert_eq!(memory(&store).await, None);
    // Completed again, with nothing seen: an empty list, not "unknown".
    store.complete_run_if(run.id, RunState::Pr, None, Actor::Runner, "green", &[]).await.unwrap();
    assert_eq!(memory(&store).await, Some(Vec::new()));
    // The fenced write: another runner's lease refuses it.
    store.set_run_state_if(run.id, RunState::Complete, RunState::Pr, None, Actor::Runner, "c").await.unwrap();
    assert!(store.claim_run(run.id, "host-a", std::time::Duration::from_secs(300)).await.unwrap());
    let err = store.complete_run_if(run.id, RunState::Pr, Some("host-b"), Actor::Runner, "g", &[]).await;
    assert!(err.is_err(), "{err:?}");
    store.close().await;
}

/// Issue 37, item 4: what the runner judges a `fix_comments` worker by, per worker of the run: the
/// comments it was offered, those no earlier worker had answered (a new round), and those whose reply is
/// on the pull request (recorded and never posted answered nobody). Other runs' offers are not counted.
async fn each_fix_comments_worker_is_judged_by_what_it_was_given_and_answered(db: TestDb) {
    let store = db.open().await;
    let mut runs = Vec::new();
    for g in ["r", "other"] {
        let g = added(&store, g).await;
        store.set_task_status(&g, QueueStatus::AwaitingGo, Actor::Cli, None).await.unwrap();
        store.set_task_status(&g, QueueStatus::Approved, Actor::Cli, None).await.unwrap();
        runs.push(store.create_run_for_task(&g, Actor::Runner).await.unwrap().unwrap());
    }
    let (run, other) = (&runs[0], &runs[1]);
    let worker = |run_id: i64, kind: WorkerKind, offered: &'static [&'static str]| {
        let store = store.clone();
        async move {
            let start = SessionStart::default();
            let s = store.begin_worker_session(run_id, kind, "command", "h", &start).await.unwrap().unwrap();
            let ids: Vec<String> = offered.iter().map(|c| c.to_string()).collect();
            store.offer_comments(run_id, s.id, &ids).await.unwrap();
            s.id
        }
    };
    let end = |id: i64| {
        let store = store.clone();
        async move { store.end_worker_session(id, None, &WorkerEnd::new(EndReason::Finished)).await.unwrap() }
    };
    let posted = |session: i64, comment: &'static str| {
        let store = store.clone();
        async move {
            store.answer_comment(session, comment, "[ACKNOWLEDGED: done]").await.unwrap();
            let reply = store.replies_to_post(run.id, 5).await.unwrap();
            let reply = reply.iter().find(|r| r.session_id == session && r.comment_id == comment).unwrap();
            assert!(store.mark_reply_posted(reply.id, &format!("re-{comment}")).await.unwrap());
        }
    };
    assert_eq!(store.offer_tallies(run.id).await.unwrap(), vec![]);

    let first = worker(run.id, WorkerKind::FixComments, &["IC_1"]).await;
    posted(first, "IC_1").await;
    end(first).await;
    let review = worker(run.id, WorkerKind::PrReview, &[]).await;
    end(review).await;
    // Given IC_1 again and IC_2 anew: it answers IC_2 and records an answer to IC_1 that is never posted.
    let second = worker(run.id, WorkerKind::FixComments, &["IC_1", "IC_2"]).await;
    posted(second, "IC_2").await;
    store.answer_comment(second, "IC_1", "[ACKNOWLEDGED: again]").await.unwrap();
    end(second).await;
    // Given IC_4, it fails to answer; the next one, given it again, answers it: new to that one too.
    let failed = worker(run.id, WorkerKind::FixComments, &["IC_4"]).await;
    store.end_worker_session(failed, None, &WorkerEnd::new(EndReason::Failed)).await.unwrap();
    let retried = worker(run.id, WorkerKind::FixComments, &["IC_4"]).await;
    posted(retried, "IC_4").await;
    end(retried).await;
    let elsewhere = worker(other.id, WorkerKind::FixComments, &["IC_1", "IC_3"]).await;
    end(elsewhere).await;

    let tally = |session_id, offered, new, answered| OfferTally { session_id, offered, new, answered };
    assert_eq!(
        store.offer_tallies(run.id).await.unwrap(),
        vec![tally(first, 1, 1, 1), tally(second, 2, 1, 1), tally(failed, 1, 1, 0), tally(retried, 1, 1, 1)]
    );
    assert_eq!(store.offer_tallies(other.id).await.unwrap(), vec![tally(elsewhere, 2, 2, 0)]);
    store.close().await;
}

/// A database from before schema v8: its skips say nothing of who made them. The migration reads their
/// history: a filter's name, the analyzer's event (a triage), the import's, and a human's after a triage.
#[tokio::test]
async fn schema_v8_fills_in_who_made_the_skips_before_it() {
    use sqlx::Connection;
    let db = common::sqlite();
    let store = db.open().await;
    let filtered = added(&store, "f").await;
    assert!(store.record_filter_skip(&claim(&store).await, "a", "figma", "design").await.unwrap());
    let triaged = added(&store, "t").await;
    assert!(store.record_triage(&claim(&store).await, "a", &triage(QueueStatus::Skip)).await.unwrap());
    let human = added(&store, "h").await;
    assert!(store.record_triage(&claim(&store).await, "a", &triage(QueueStatus::ForReview)).await.unwrap());
    store.set_task_status(&human, QueueStatus::Skip, Actor::Cli, Some("duplicate of t")).await.unwrap();
    let imported = added(&store, "i").await;
    store.skip_imported_task(&imported, Actor::Cli, Some("imported from v1")).await.unwrap();
    store.close().await;

    // Back to v7: what v8 and every later version added gone (and what they dropped back), their versions
    // forgotten.
    let mut conn = sqlx::SqliteConnection::connect(&db.url).await.unwrap();
    sqlx::raw_sql(
        "ALTER TABLE executor_queue DROP COLUMN skipped_by; \
         ALTER TABLE executor_runs DROP COLUMN completion_comment_ids; \
         DROP TABLE executor_forge_cache; \
         DROP TABLE executor_webhook_deliveries; DROP TABLE executor_pr_marks; DROP TABLE executor_wakes; \
         DROP TABLE executor_writebacks; \
         DROP INDEX executor_notifications_unread; DROP INDEX executor_queue_failed_analysis; \
         ALTER TABLE executor_notifications DROP COLUMN read_at; \
         ALTER TABLE executor_notifications DROP COLUMN read_by; \
         ALTER TABLE executor_source_cursors DROP COLUMN error_read_at; \
         DROP TRIGGER executor_queue_fts_insert; DROP TRIGGER executor_queue_fts_delete; \
         DROP TRIGGER executor_queue_fts_update; DROP TABLE executor_queue_fts; \
         DROP INDEX executor_queue_by_priority; DROP INDEX executor_queue_by_status; \
         DROP INDEX executor_queue_by_source; DROP INDEX executor_queue_by_complexity; \
         DROP INDEX executor_queue_by_feasibility; DROP INDEX executor_queue_by_added; \
         DROP INDEX executor_queue_by_updated; DROP INDEX executor_queue_narrow; \
         DROP INDEX executor_events_at; DROP INDEX executor_worker_sessions_started; \
         DROP TABLE executor_github_usage; \
         DROP INDEX executor_runs_leased; DROP INDEX executor_runners_ended; \
         DROP INDEX executor_worker_sessions_host_lost; \
         ALTER TABLE executor_agent_replies DROP COLUMN post_started_at; \
         ALTER TABLE executor_runs DROP COLUMN ci_trigger_outcome; \
         DROP INDEX executor_runs_merged_at; ALTER TABLE executor_runs DROP COLUMN merged_at; \
         ALTER TABLE executor_notifications DROP COLUMN post_started_at; \
         ALTER TABLE executor_worker_sessions DROP COLUMN review_post_started_at; \
         DROP TABLE executor_run_plans; DROP TABLE executor_run_questions; \
         ALTER TABLE executor_queue DROP COLUMN plan_mode; \
         ALTER TABLE executor_runs DROP COLUMN reverted_at; ALTER TABLE executor_runs DROP COLUMN revert_sha; \
         DROP TABLE executor_users; \
         DROP TABLE executor_person_comments; DROP INDEX executor_queue_revisions; \
         DROP INDEX executor_events_kind_at; DROP INDEX executor_queue_pending_not_claimable; \
         CREATE INDEX executor_runs_lease ON executor_runs (lease_owner) \
           WHERE state IN ('queued','in_progress','pr','complete'); \
         DELETE FROM executor_schema WHERE version >= 8;",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();

    let store = db.open().await;
    assert_eq!(skipped_by(&store, &filtered).await, Some(SkippedBy::Filter));
    assert_eq!(skipped_by(&store, &triaged).await, Some(SkippedBy::Triage));
    assert_eq!(skipped_by(&store, &human).await, Some(SkippedBy::Human));
    assert_eq!(skipped_by(&store, &imported).await, Some(SkippedBy::Imported));
    store.close().await;
}
