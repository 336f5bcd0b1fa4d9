//! Runs the board and the run page are tested on (over HTTP and in Chromium): one with a pull request
//! (CI failing at its head, trusted, untrusted and resolved comments, a diff stat), a failed review with
//! findings and a live worker; one whose worker went silent; one not started. Task text and findings
//! carry markup that must stay text.
#![allow(dead_code)]

use executor::config::{Config, Repo};
use executor::domain::{Actor, EndReason, ReviewVerdict, RunState, TaskGid, WorkerKind};
use executor::forge::{Check, CheckStatus, Comment, DiffStat, Mergeable, PrSnapshot, PrState};
use executor::store::{NewTask, SessionStart, Store, WorkerEnd};

pub const PR_TITLE: &str = "Speed up the <b>export</b> & import";
pub const SILENT_TITLE: &str = "Translate the settings page";
pub const FRESH_TITLE: &str = "Nobody has started this";
pub const HEAD: &str = "abc1234def0000000000000000000000000000000";
pub const PR_URL: &str = "https://github.test/octo/app/pull/7";
/// A finding whose text is markup.
pub const FINDING: &str = "<script>alert('finding')</script> an unchecked unwrap";

/// The runs of the scene.
pub struct Scene {
    pub pr_run: i64,
    pub silent_run: i64,
    pub fresh_run: i64,
    /// The pr run's live `fix_comments` session.
    pub live_session: i64,
    pub review_session: i64,
}

/// A configuration whose only repository trusts alice.
pub fn config() -> Config {
    let mut config = Config::default();
    let mut repo = Repo::at("/tmp/repo");
    repo.trusted_authors = vec!["alice".into()];
    config.repos.insert("main".into(), repo);
    config
}

async fn run_for(store: &Store, gid: &str, text: &str) -> i64 {
    let g = TaskGid::parse(gid).unwrap();
    let t = NewTask { description: Some(text.into()), ..Default::default() };
    store.upsert_task(&g, &t, Actor::Cli).await.unwrap();
    store.approve_task(&g, true, Actor::Cli).await.unwrap();
    store.create_run_for_task(&g, Actor::Runner).await.unwrap().expect("a run").id
}

async fn ended(store: &Store, run: i64, kind: WorkerKind, start: &SessionStart, end: WorkerEnd) -> i64 {
    let s = store.begin_worker_session(run, kind, "claude", "h", start).await.unwrap().unwrap();
    let log = format!("/tmp/executor-test-logs/{}-{}.md", kind.as_str(), s.id);
    store.set_worker_process(s.id, None, 1, None, "/tmp/out", &log).await.unwrap();
    assert!(store.end_worker_session(s.id, None, &end).await.unwrap());
    s.id
}

fn comment(id: &str, author: &str, body: &str, thread: Option<&str>, resolved: bool) -> Comment {
    Comment {
        id: id.into(),
        author: author.into(),
        body: body.into(),
        created_at: chrono::Utc::now() - chrono::Duration::minutes(30),
        path: thread.map(|_| "src/lib.rs".into()),
        line: thread.map(|_| 12),
        thread_id: thread.map(String::from),
        thread_resolved: resolved,
        in_reply_to: None,
        by_agent: false,
        from_dashboard: false,
        author_association: None,
    }
}

fn snapshot() -> PrSnapshot {
    let check = |name: &str, status: CheckStatus, summary: Option<&str>| Check {
        name: name.into(),
        status,
        sha: HEAD.into(),
        url: Some(format!("https://github.test/octo/app/runs/{name}")),
        summary: summary.map(String::from),
        job_id: None,
    };
    PrSnapshot {
        number: 7,
        url: PR_URL.into(),
        state: PrState::Open,
        draft: true,
        head_sha: HEAD.into(),
        labels: vec!["executor".into()],
        mergeable: Mergeable::Mergeable,
        checks: vec![
            check("build", CheckStatus::Success, None),
            check("test", CheckStatus::Failure, Some("2 tests failed")),
        ],
        comments: vec![
            comment("c1", "alice", "please <i>rename</i> this", Some("t1"), false),
            comment("c2", "mallory", "spam from mallory", None, false),
            comment("c3", "alice", "an old remark, resolved", Some("t2"), true),
        ],
        observed_at: chrono::Utc::now() - chrono::Duration::minutes(2),
        diff: Some(DiffStat { files: 3, additions: 120, deletions: 4 }),
    }
}

/// Builds the scene in `store`.
pub async fn scene(store: &Store) -> Scene {
    let fresh_run = run_for(store, "RUN-3", &format!("{FRESH_TITLE}\n\nbody")).await;
    let silent_run = run_for(store, "RUN-2", &format!("{SILENT_TITLE}\nin every language")).await;
    let pr_run = run_for(store, "RUN-1", &format!("{PR_TITLE}\n\nThe export takes a minute.")).await;

    let none = SessionStart::default();
    store
        .set_run_state_if(silent_run, RunState::Queued, RunState::InProgress, None, Actor::Runner, "started")
        .await
        .unwrap();
    let silent = WorkerEnd { cost_usd: 0.3, ..WorkerEnd::new(EndReason::IdleTimeout) };
    ended(store, silent_run, WorkerKind::Queued, &none, silent).await;

    store
        .set_run_state_if(pr_run, RunState::Queued, RunState::InProgress, None, Actor::Runner, "started")
        .await
        .unwrap();
    store
        .set_run_state_if(pr_run, RunState::InProgress, RunState::Pr, None, Actor::Runner, "pr opened")
        .await
        .unwrap();
    store.set_run_pr(pr_run, None, PR_URL, 7).await.unwrap();
    store.set_run_head(pr_run, None, HEAD).await.unwrap();
    store.set_last_snapshot(pr_run, None, &serde_json::to_string(&snapshot()).unwrap()).await.unwrap();
    store.record_decision(pr_run, None, "the review failed at the head: fix_comments").await.unwrap();
    let work = WorkerEnd {
        cost_usd: 1.0,
        input_tokens: 1000,
        output_tokens: 100,
        ..WorkerEnd::new(EndReason::Finished)
    };
    ended(store, pr_run, WorkerKind::Queued, &none, work).await;
    let review = serde_json::json!({
        "verdict": "fail",
        "summary": "Two problems before a human looks.",
        "findings": [
            {"path": "src/export.rs", "line": 3, "body": FINDING},
            {"body": "No test covers the import."}
        ]
    });
    let at_head = SessionStart { start_sha: Some(HEAD.into()), resumed_session: None };
    let verdict = WorkerEnd {
        cost_usd: 0.4,
        result_json: Some(review.to_string()),
        verdict: Some(ReviewVerdict::Fail),
        ..WorkerEnd::new(EndReason::Finished)
    };
    let review_session = ended(store, pr_run, WorkerKind::PrReview, &at_head, verdict).await;
    let live = store
        .begin_worker_session(pr_run, WorkerKind::FixComments, "claude", "h", &at_head)
        .await
        .unwrap()
        .unwrap();
    store.set_worker_usage(live.id, None, Some(0.1), 50, 5, false).await.unwrap();
    Scene { pr_run, silent_run, fresh_run, live_session: live.id, review_session }
}
