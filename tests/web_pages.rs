//! The dashboard's HTML pages over real HTTP: `web::serve` on 127.0.0.1:0 with a real SQLite store,
//! requests with reqwest. Each page answers with what the store holds; task text is escaped; the forms
//! move tasks (as `web`); the live log follows a growing work log file.

mod common;
mod web_support;

use std::time::Duration;

use executor::config::Config;
use executor::domain::{Actor, QueueStatus, TaskGid, WorkerKind};
use executor::store::{EventFilter, NewTask, RunnerRegistration, SessionStart, Store};
use reqwest::StatusCode;

const TOKEN: &str = "test-token-0123456789abcdef0123456789";

/// The shared dashboard (`web_support::Dashboard`) with the CSRF value its pages carry, read once from
/// the queue, for the form posts these tests make.
struct Dashboard {
    site: web_support::Dashboard,
    csrf: String,
}

impl std::ops::Deref for Dashboard {
    type Target = web_support::Dashboard;
    fn deref(&self) -> &web_support::Dashboard {
        &self.site
    }
}

impl Dashboard {
    async fn start(store: Store) -> Dashboard {
        Dashboard::with_config(store, Config::default()).await
    }

    async fn with_config(store: Store, config: Config) -> Dashboard {
        let site = web_support::Dashboard::start(store, config, TOKEN).await;
        let (_, page) = site.get("/queue").await;
        // A queue with no task has no form, and so no csrf field.
        let csrf = web_support::csrf_of(&page).unwrap_or_default();
        Dashboard { site, csrf }
    }

    /// Submits `fields` as a page's form does, its `csrf` field first; returns the status and the
    /// redirect's target.
    async fn submit(&self, path: &str, fields: &[(&str, &str)]) -> (StatusCode, String) {
        let mut all: Vec<(&str, &str)> = vec![("csrf", &self.csrf)];
        all.extend_from_slice(fields);
        let response = self.site.post_form(path, web_support::form(&all)).await;
        let location =
            response.headers().get("location").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        (response.status(), location)
    }
}

/// A page's markup with the entities auto-escaping puts into attribute values (`/`, `&`) turned back,
/// to compare links; escaping itself is checked on the raw page.
fn links(page: &str) -> String {
    page.replace("&#x2f;", "/").replace("&amp;", "&")
}

fn gid(s: &str) -> TaskGid {
    TaskGid::parse(s).expect("gid")
}

/// Adds a task and triages it to `status` (through the legal moves).
async fn task(store: &Store, id: &str, description: &str, source: &str, status: QueueStatus) {
    let t = NewTask {
        description: Some(description.to_string()),
        source: Some(source.to_string()),
        ..Default::default()
    };
    store.upsert_task(&gid(id), &t, Actor::Cli).await.expect("add");
    let path: &[QueueStatus] = match status {
        QueueStatus::Pending => &[],
        QueueStatus::AwaitingGo => &[QueueStatus::AwaitingGo],
        QueueStatus::ForReview => &[QueueStatus::ForReview],
        QueueStatus::Approved => &[QueueStatus::AwaitingGo, QueueStatus::Approved],
        QueueStatus::Skip => &[QueueStatus::Skip],
        QueueStatus::Done => panic!("not seeded"),
    };
    for &to in path {
        store.set_task_status(&gid(id), to, Actor::Cli, None).await.expect("move");
    }
}

async fn status_of(store: &Store, id: &str) -> QueueStatus {
    store.task(&gid(id)).await.expect("task").status
}

#[tokio::test]
async fn the_queue_filters_searches_and_pages() {
    let db = common::sqlite();
    let store = db.open().await;
    for i in 0..120 {
        let (source, status) =
            if i % 3 == 0 { ("inbox", QueueStatus::AwaitingGo) } else { ("reports", QueueStatus::Pending) };
        let text = if i == 7 { "Fix the NEEDLE in the haystack\nmore" } else { "Some task" };
        task(&store, &format!("T-{i:03}"), text, source, status).await;
    }
    store
        .set_task_analysis(&gid("T-000"), Some(1), Some("small"), Some("feasible"), Some("A short summary."))
        .await
        .unwrap();
    let dash = Dashboard::start(store).await;

    let (status, page) = dash.get("/queue").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("120 tasks"), "{page}");
    assert!(page.contains("page 1 of 3"), "{page}");
    assert!(page.contains(r#"href="/tasks/T-000""#));
    assert!(page.contains("A short summary.") && page.contains("feasible") && page.contains("small"));
    assert!(links(&page).contains(r#"href="/queue?page=2" rel="next""#), "{page}");
    assert_eq!(page.matches("<tr class=\"status-").count(), 50, "50 tasks a page");
    // Approve only where it applies; skip (with a reason) wherever skipping is legal.
    assert!(page.contains(r#"action="/tasks/T-000/approve""#));
    assert!(!page.contains(r#"action="/tasks/T-001/approve""#), "a pending task has no Approve");
    assert!(page.contains(r#"action="/tasks/T-001/skip""#));
    assert!(page.contains(r#"name="reason" required"#));
    // The forms carry the session's CSRF value, never the token.
    let csrf = web_support::csrf_of(&page).expect("a csrf field");
    assert!(csrf.len() >= 32 && csrf != TOKEN && !page.contains(TOKEN), "{csrf}");
    assert!(page.contains(r#"action="/tasks/bulk-approve""#) && page.contains("Approve selected"));

    let (_, last) = dash.get("/queue?page=3").await;
    assert_eq!(last.matches("<tr class=\"status-").count(), 20);
    assert!(last.contains("rel=\"prev\"") && !last.contains("rel=\"next\""));

    let (_, filtered) = dash.get("/queue?status=awaiting_go&source=inbox").await;
    assert!(filtered.contains("40 tasks"), "{filtered}");
    assert!(!filtered.contains("status-pending"));

    let (_, found) = dash.get("/queue?q=needle").await;
    assert!(found.contains("1 task<") || found.contains("1 task"), "{found}");
    assert!(found.contains("T-007") && found.contains("Fix the NEEDLE in the haystack"));
    assert!(!found.contains("more"), "the title is the first line");

    let (status, _) = dash.get("/queue?status=nonsense").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn task_text_is_escaped_everywhere() {
    let db = common::sqlite();
    let store = db.open().await;
    task(&store, "X-1", "<script>alert(1)</script>", "inbox", QueueStatus::AwaitingGo).await;
    let t = NewTask {
        description: Some("<img src=x onerror=alert(1)>".into()),
        notes: Some("<script>alert(2)</script>".into()),
        ..Default::default()
    };
    store.upsert_task(&gid("X-2"), &t, Actor::Cli).await.unwrap();
    store.set_task_analysis(&gid("X-2"), None, None, None, Some("<script>alert(3)</script>")).await.unwrap();
    store.record_note(Actor::Cli, Some(&gid("X-2")), None, "<img src=x onerror=alert(4)>").await.unwrap();
    let dash = Dashboard::start(store).await;

    for path in ["/", "/queue", "/tasks/X-1", "/tasks/X-2", "/status", "/queue?q=%3Cscript%3E"] {
        let (status, page) = dash.get(path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert!(!page.contains("<script>alert"), "{path}: raw script tag\n{page}");
        assert!(!page.contains("<img src=x"), "{path}: raw img tag\n{page}");
        // The only scripts are the server's two files; no inline handlers or styles anywhere.
        assert_eq!(page.matches("<script").count(), 2, "{path}");
        assert!(page.contains(r#"<script src="/static/app.js" defer></script>"#), "{path}");
        assert!(page.contains(r#"<script src="/static/keys.js" defer></script>"#), "{path}");
        assert!(!page.contains(" style=") && !page.contains(" onclick="), "{path}");
    }
    let (_, queue) = dash.get("/queue").await;
    assert!(queue.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;"), "{queue}");
    assert!(queue.contains("&lt;img src=x onerror=alert(1)&gt;"), "{queue}");
    let (_, x2) = dash.get("/tasks/X-2").await;
    assert!(x2.contains("&lt;script&gt;alert(2)") && x2.contains("&lt;script&gt;alert(3)"), "{x2}");
    assert!(x2.contains("&lt;img src=x onerror=alert(4)&gt;"), "the history is escaped too");
    // A message the server signed (a skip's reason in it) is escaped too.
    let (_, location) = dash.submit("/tasks/X-1/skip", &[("reason", "<script>alert(5)</script>")]).await;
    let (_, flash) = dash.get(&location).await;
    assert!(flash.contains("&lt;script&gt;alert(5)") && !flash.contains("<script>alert"), "{flash}");
}

#[tokio::test]
async fn approve_and_skip_through_the_forms_move_the_task_as_web() {
    let db = common::sqlite();
    let store = db.open().await;
    for id in ["A-1", "A-2", "A-3", "A-4", "A-5"] {
        task(&store, id, "a task", "inbox", QueueStatus::AwaitingGo).await;
    }
    task(&store, "P-1", "still pending", "inbox", QueueStatus::Pending).await;
    let dash = Dashboard::start(store.clone()).await;

    let (status, location) =
        dash.submit("/tasks/A-1/approve", &[("status", "awaiting_go"), ("page", "1")]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(location.starts_with("/queue?status=awaiting_go&page=1&flash=approved%20A-1&sig="), "{location}");
    assert_eq!(status_of(&store, "A-1").await, QueueStatus::Approved);
    let events =
        store.events(&EventFilter { task_gid: Some(gid("A-1")), ..Default::default() }).await.unwrap();
    let last = events.last().expect("an event");
    assert_eq!((last.actor.as_str(), last.to_state.as_deref()), ("web", Some("approved")));
    let (_, page) = dash.get(&location).await;
    assert!(page.contains("approved A-1"), "the flash message is shown");

    // Skipping needs a reason, which goes into the history.
    let (status, location) = dash.submit("/tasks/A-2/skip", &[("reason", "  ")]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(location.contains("error="), "{location}");
    assert_eq!(status_of(&store, "A-2").await, QueueStatus::AwaitingGo);
    let (_, location) = dash.submit("/tasks/A-2/skip", &[("reason", "not now"), ("back", "task")]).await;
    assert!(location.starts_with("/tasks/A-2?flash="), "{location}");
    assert_eq!(status_of(&store, "A-2").await, QueueStatus::Skip);
    let events =
        store.events(&EventFilter { task_gid: Some(gid("A-2")), ..Default::default() }).await.unwrap();
    let last = events.last().expect("an event");
    assert_eq!(last.actor, "web");
    assert!(last.reason.as_deref().is_some_and(|r| r.contains("not now")), "{last:?}");

    // An illegal move is refused with the store's reason, and nothing changes.
    let (_, location) = dash.submit("/tasks/P-1/approve", &[]).await;
    assert!(location.contains("error=") && location.contains("pending"), "{location}");
    assert_eq!(status_of(&store, "P-1").await, QueueStatus::Pending);

    // Several at once.
    let (_, location) =
        dash.submit("/tasks/bulk-approve", &[("gid", "A-3"), ("gid", "A-4"), ("gid", "P-1")]).await;
    assert!(location.contains("approved%202%20tasks") && location.contains("error="), "{location}");
    assert_eq!(status_of(&store, "A-3").await, QueueStatus::Approved);
    assert_eq!(status_of(&store, "A-4").await, QueueStatus::Approved);

    // Without the token nothing happens.
    let response = dash
        .client
        .post(format!("{}/tasks/A-5/approve", dash.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("csrf=wrong")
        .send()
        .await
        .unwrap();
    // The security layer answers first: no session and no bearer token is the login page, 401.
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(response.text().await.unwrap().contains(r#"action="/login""#));
    assert_eq!(status_of(&store, "A-5").await, QueueStatus::AwaitingGo);
}

#[tokio::test]
async fn the_task_page_shows_every_field_the_revision_and_the_history() {
    let db = common::sqlite();
    let store = db.open().await;
    task(&store, "R-1", "First text\nDetails", "inbox", QueueStatus::Approved).await;
    store
        .set_task_analysis(&gid("R-1"), Some(2), Some("medium"), Some("feasible"), Some("Looks doable."))
        .await
        .unwrap();
    let run = store.create_run_for_task(&gid("R-1"), Actor::Runner).await.unwrap().expect("a run");
    let revised = NewTask {
        description: Some("Second text".into()),
        source: Some("inbox".into()),
        ..Default::default()
    };
    store.upsert_task(&gid("R-1"), &revised, Actor::Cli).await.unwrap();
    let dash = Dashboard::start(store.clone()).await;

    let (status, page) = dash.get("/tasks/R-1").await;
    assert_eq!(status, StatusCode::OK);
    for expected in [
        "First text",
        "Second text",
        "Looks doable.",
        "medium",
        "feasible",
        "not approved",
        "Approve the revision",
        &format!(r#"href="/runs/{}""#, run.id),
        "run_created",
        "queue_status",
    ] {
        assert!(page.contains(expected), "{expected:?} missing\n{page}");
    }
    let (_, location) = dash.submit("/tasks/R-1/approve", &[("back", "task")]).await;
    assert!(location.contains("revision"), "{location}");
    assert_eq!(store.task(&gid("R-1")).await.unwrap().description.as_deref(), Some("Second text"));

    let (status, _) = dash.get("/tasks/NO-SUCH").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = dash.get("/runs/999").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_runs_board_shows_a_thousand_runs_with_their_pull_requests_and_workers() {
    let db = common::sqlite();
    let store = db.open().await;
    let tasks: Vec<(TaskGid, NewTask)> = (0..1000)
        .map(|i| {
            (gid(&format!("B-{i}")), NewTask { description: Some(format!("task {i}")), ..Default::default() })
        })
        .collect();
    store.upsert_tasks(&tasks, Actor::Cli).await.unwrap();
    let mut ids = Vec::new();
    for (g, _) in &tasks {
        store.set_task_status(g, QueueStatus::AwaitingGo, Actor::Cli, None).await.unwrap();
        store.set_task_status(g, QueueStatus::Approved, Actor::Cli, None).await.unwrap();
        ids.push(store.create_run_for_task(g, Actor::Runner).await.unwrap().expect("run").id);
    }
    // One run with a pull request, CI failing at its head, a trusted comment and a live worker.
    let pr_run = ids[10];
    store
        .set_run_state_if(
            pr_run,
            executor::domain::RunState::Queued,
            executor::domain::RunState::InProgress,
            None,
            Actor::Runner,
            "started",
        )
        .await
        .unwrap();
    store
        .set_run_state_if(
            pr_run,
            executor::domain::RunState::InProgress,
            executor::domain::RunState::Pr,
            None,
            Actor::Runner,
            "pr opened",
        )
        .await
        .unwrap();
    store.set_run_pr(pr_run, None, "https://example.test/pr/5", 5).await.unwrap();
    store.set_last_snapshot(pr_run, None, &snapshot_json()).await.unwrap();
    store.record_decision(pr_run, None, "CI failed at the head: start fix_ci").await.unwrap();
    let session = store
        .begin_worker_session(pr_run, WorkerKind::FixCi, "claude", "host", &SessionStart::default())
        .await
        .unwrap()
        .expect("session");
    let mut config = Config::default();
    config.repos.insert("main".into(), executor::config::Repo::at("/tmp/repo"));
    config.repos.get_mut("main").unwrap().trusted_authors = vec!["alice".into()];
    let dash = Dashboard::with_config(store, config).await;

    let started = std::time::Instant::now();
    let (status, page) = dash.get("/runs").await;
    let took = started.elapsed();
    assert_eq!(status, StatusCode::OK);
    // A page of the newest 100 (issue 35, item 9); every run is on one of ten pages.
    assert_eq!(page.matches(r#"<article class="card run-card""#).count(), 100, "a page of the board");
    assert!(page.contains(&format!(r#"href="/runs/{}""#, ids[999])));
    let (_, middle) = dash.get("/runs?page=5").await;
    assert!(middle.contains(&format!(r#"href="/runs/{}""#, ids[500])));
    let (_, page) = dash.get("/runs?page=10").await;
    assert!(page.contains(&format!(r#"href="/runs/{}""#, ids[0])));
    assert!(links(&page).contains(r#"href="https://example.test/pr/5""#), "{page}");
    assert!(page.contains(">failing</span> at abc1234"), "CI at the head from the snapshot\n{page}");
    assert!(page.contains("1 unresolved trusted comment<"), "mallory is not trusted; alice is");
    assert!(page.contains(&format!(r#"href="/sessions/{}/log">fix_ci</a>"#, session.id)));
    assert!(page.contains("CI failed at the head: start fix_ci"));
    eprintln!("GET /runs with 1,000 runs: {took:?} (debug build)");

    let (status, run_page) = dash.get(&format!("/runs/{pr_run}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(run_page.contains("please rename") && !run_page.contains("spam from mallory"), "{run_page}");
    assert!(run_page.contains("<td>lint</td>"), "a check whose URL is not http(s) is not a link\n{run_page}");
    assert!(!run_page.contains("javascript:"), "{run_page}");
    assert!(run_page.contains(&format!("#{}</td><td>fix_ci", session.id)), "{run_page}");
}

/// A pull request at head abc1234 with a failing check, a comment by a trusted author and one by
/// somebody else.
fn snapshot_json() -> String {
    use executor::forge::{Check, CheckStatus, Comment, Mergeable, PrSnapshot, PrState};
    let at = chrono::Utc::now();
    let comment = |id: &str, author: &str, body: &str| Comment {
        id: id.into(),
        author: author.into(),
        body: body.into(),
        created_at: at,
        path: None,
        line: None,
        thread_id: None,
        thread_resolved: false,
        in_reply_to: None,
        by_agent: false,
        from_dashboard: false,
        author_association: None,
    };
    let pr = PrSnapshot {
        number: 5,
        url: "https://example.test/pr/5".into(),
        state: PrState::Open,
        draft: true,
        head_sha: "abc1234".into(),
        labels: Vec::new(),
        mergeable: Mergeable::Mergeable,
        checks: vec![Check {
            name: "lint".into(),
            status: CheckStatus::Failure,
            sha: "abc1234".into(),
            url: Some("javascript:alert(1)".into()),
            summary: None,
            job_id: None,
        }],
        comments: vec![
            comment("c1", "alice", "please rename"),
            comment("c2", "mallory", "spam from mallory"),
        ],
        observed_at: at,
        diff: None,
    };
    serde_json::to_string(&pr).expect("json")
}

#[tokio::test]
async fn the_live_log_streams_what_the_worker_appends() {
    let db = common::sqlite();
    let store = db.open().await;
    task(&store, "L-1", "a task", "inbox", QueueStatus::Approved).await;
    let run = store.create_run_for_task(&gid("L-1"), Actor::Runner).await.unwrap().expect("run");
    let session = store
        .begin_worker_session(run.id, WorkerKind::Queued, "claude", "host", &SessionStart::default())
        .await
        .unwrap()
        .expect("session");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("queued.md");
    std::fs::write(&log, "# Prompt\nfirst <b>line</b>\n").unwrap();
    let out = dir.path().join("out.jsonl");
    store
        .set_worker_process(session.id, None, 4242, None, &out.to_string_lossy(), &log.to_string_lossy())
        .await
        .unwrap();
    let dash = Dashboard::start(store.clone()).await;

    let (status, page) = dash.get(&format!("/sessions/{}/log", session.id)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("first &lt;b&gt;line&lt;&#x2f;b&gt;"), "{page}");
    let offset = "# Prompt\nfirst <b>line</b>\n".len();
    assert!(page.contains(&format!(r#"data-offset="{offset}""#)), "{page}");

    let mut stream = dash.get_response(&format!("/sessions/{}/log/stream?from={offset}", session.id)).await;
    assert_eq!(stream.status(), StatusCode::OK);
    assert!(stream.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));

    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    writeln!(file, "second line appended").unwrap();
    let got = read_until(&mut stream, "second line appended").await;
    assert!(!got.contains("first"), "the stream starts where the page ended: {got}");
    writeln!(file, "third line, evil\u{202e}txt.exe").unwrap();
    read_until(&mut stream, "third line, evil[U+202E]txt.exe").await;

    // The worker ends: the stream sends what is left, then `end`, and closes.
    writeln!(file, "the end").unwrap();
    store
        .end_worker_session(
            session.id,
            None,
            &executor::store::WorkerEnd::new(executor::domain::EndReason::Finished),
        )
        .await
        .unwrap();
    let rest = read_until(&mut stream, "event: end\ndata: finished").await;
    assert!(rest.contains("the end"), "{rest}");
    let closed = tokio::time::timeout(Duration::from_secs(5), stream.chunk()).await.expect("closes");
    assert!(closed.unwrap().is_none(), "the stream ends after `end`");

    let (status, _) = dash.get("/sessions/999/log").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// Reads the event stream until `needle` arrives (10 s at most); returns what was read.
async fn read_until(stream: &mut reqwest::Response, needle: &str) -> String {
    let mut got = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !got.contains(needle) {
        let chunk = tokio::time::timeout_at(deadline, stream.chunk())
            .await
            .unwrap_or_else(|_| panic!("{needle:?} did not arrive; got {got:?}"))
            .expect("read")
            .unwrap_or_else(|| panic!("stream ended before {needle:?}; got {got:?}"));
        got.push_str(&String::from_utf8_lossy(&chunk));
    }
    got
}

#[tokio::test]
async fn the_status_page_and_the_assets() {
    let db = common::sqlite();
    let store = db.open().await;
    task(&store, "S-1", "a task", "inbox", QueueStatus::AwaitingGo).await;
    task(&store, "S-2", "another", "inbox", QueueStatus::Skip).await;
    task(&store, "S-3", "held", "inbox", QueueStatus::Approved).await;
    // host-a: a live runner holding a run, whose last tick failed; host-b: only a runner that stopped.
    let ttl = Duration::from_secs(600);
    for (id, host, pid) in [("host-a/77-1", "host-a", 77), ("host-b/88-1", "host-b", 88)] {
        let registration =
            RunnerRegistration { id, host, pid, version: "test", machine: "m", ttl, max_workers: 2 };
        store.register_runner(&registration).await.unwrap();
    }
    let run = store.create_run_for_task(&gid("S-3"), Actor::Runner).await.unwrap().expect("a run");
    assert!(store.claim_run(run.id, "host-a/77-1", ttl).await.unwrap());
    store.runner_ticked("host-a/77-1", 1, Some("the forge was down")).await.unwrap();
    store.runner_ticked("host-b/88-1", 3, Some("<b>no</b> repo")).await.unwrap();
    store.runner_ended("host-b/88-1").await.unwrap();
    let mut config = Config::default();
    config.budget.per_day_usd = 12.5;
    let dash = Dashboard::with_config(store, config).await;

    let (status, page) = dash.get("/status").await;
    assert_eq!(status, StatusCode::OK);
    for expected in ["awaiting_go", "skip", "$0.00</strong> of $12.50", "S-2"] {
        assert!(page.contains(expected), "{expected:?} missing\n{page}");
    }
    // Host, runner, state, last heartbeat, leases, workers, ticks, errors, last error.
    let a = runner_row(&page, "host-a/77-1");
    assert_eq!((a[0].as_str(), a[2].starts_with("alive, started ")), ("host-a", true), "{a:?}");
    assert!(a[3].ends_with("ago") || a[3] == "just now", "{a:?}");
    assert_eq!(a[4..], ["1", "0 of 2", "1", "1", "the forge was down"], "{a:?}");
    let b = runner_row(&page, "host-b/88-1");
    assert_eq!((b[0].as_str(), b[2].starts_with("stopped ")), ("host-b", true), "{b:?}");
    assert_eq!(b[4..], ["0", "0 of 2", "1", "3", "&lt;b&gt;no&lt;&#x2f;b&gt; repo"], "escaped: {b:?}");

    let response = dash.client.get(format!("{}/static/app.js", dash.base)).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/javascript"));
    let script = response.text().await.unwrap();
    assert!(
        script.contains("EventSource")
            && script.contains("createTextNode")
            && !script.contains("innerHTML =")
    );
    let response = dash.client.get(format!("{}/static/keys.js", dash.base)).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/javascript"));
    let script = response.text().await.unwrap();
    assert!(script.contains("showModal") && !script.contains("innerHTML"), "keys.js adds text nodes only");
    let response = dash.client.get(format!("{}/static/app.css", dash.base)).send().await.unwrap();
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/css"));
}

/// Issue 35, item 11: a runner that stopped itself is how every cron runner ends, not an error; one
/// whose heartbeat lapsed is. The tab has an icon; ids in the history never break inside.
#[tokio::test]
async fn a_stopped_runner_is_not_an_error_and_the_small_things_are_there() {
    let db = common::sqlite();
    let store = db.open().await;
    task(&store, "S-1", "a task", "inbox", QueueStatus::Approved).await;
    let ttl = Duration::from_secs(600);
    let registration = RunnerRegistration {
        id: "host-b/88-1",
        host: "host-b",
        pid: 88,
        version: "test",
        machine: "m",
        ttl,
        max_workers: 2,
    };
    store.register_runner(&registration).await.unwrap();
    store.runner_ended("host-b/88-1").await.unwrap();
    let run = store.create_run_for_task(&gid("S-1"), Actor::Runner).await.unwrap().expect("a run");
    let dash = Dashboard::start(store).await;

    let (_, page) = dash.get("/status").await;
    let at = page.find(">host-b&#x2f;88-1</td>").unwrap_or_else(|| panic!("{page}"));
    let row = &page[at..at + page[at..].find("</tr>").unwrap()];
    assert!(row.contains(r#"<td class="note">stopped "#), "stopped cleanly: not red\n{row}");
    assert!(!row.contains(r#"class="error""#), "{row}");
    // The history's run id and event kind are one word each.
    assert!(page.contains(&format!(r#"<a class="ident" href="/runs/{0}">#{0}</a>"#, run.id)), "{page}");
    assert!(page.contains(r#"<td><span class="ident">"#), "{page}");
    let css = dash.client.get(format!("{}/static/app.css", dash.base)).send().await.unwrap().text().await;
    assert!(css.unwrap().contains(".ident { white-space: nowrap; overflow-wrap: normal; }"));

    // The queue offers its view as CSV.
    let (_, queue) = dash.get("/queue?status=approved").await;
    assert!(
        links(&queue).contains(r#"<a href="/api/v1/tasks.csv?limit=1000&status=approved" download>CSV</a>"#),
        "{queue}"
    );
    // Where the pages point (open, as the style sheet is: the login page shows it too), and where a
    // browser looks by itself (with the session it sends).
    assert!(page.contains(r#"<link rel="icon" href="/static/favicon.ico">"#));
    for response in [
        dash.client.get(format!("{}/static/favicon.ico", dash.base)).send().await.unwrap(),
        dash.get_response("/favicon.ico").await,
    ] {
        assert_eq!(response.status(), StatusCode::OK, "{}", response.url());
        assert_eq!(response.headers()["content-type"], "image/x-icon");
        let icon = response.bytes().await.unwrap();
        assert_eq!(icon[..4], [0, 0, 1, 0], "an ICO file");
    }
}

/// The cells (inner HTML, tags of their own stripped) of the status page's row for runner `id`.
fn runner_row(page: &str, id: &str) -> Vec<String> {
    let escaped = id.replace('/', "&#x2f;");
    let at = page.find(&format!(">{escaped}</td>")).unwrap_or_else(|| panic!("no row for {id}\n{page}"));
    let start = page[..at].rfind("<tr>").unwrap();
    let end = at + page[at..].find("</tr>").unwrap();
    page[start + "<tr>".len()..end]
        .split("</td>")
        .filter(|cell| !cell.is_empty())
        .map(|cell| cell[cell.find('>').unwrap() + 1..].to_string())
        .collect()
}

#[tokio::test]
async fn only_the_servers_own_messages_show_and_bidi_controls_show_as_codes() {
    let db = common::sqlite();
    let store = db.open().await;
    task(
        &store,
        "RTL-1",
        "invoice\u{202e}fdp.exe and \u{2066}isolated\u{2069}",
        "inbox",
        QueueStatus::AwaitingGo,
    )
    .await;
    task(&store, "F-1", "a task", "inbox", QueueStatus::AwaitingGo).await;
    let dash = Dashboard::start(store).await;

    // A link cannot make a page say anything.
    for path in [
        "/?flash=Your+session+expired%3A+log+in+at+evil.example",
        "/?error=Your+session+expired%3A+log+in+at+evil.example&sig=00",
        "/tasks/F-1?flash=log+in+at+evil.example",
    ] {
        let (status, page) = dash.get(path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert!(!page.contains("evil.example") && !page.contains(r#"class="flash"#), "{path}\n{page}");
    }
    // The server's own message shows; altered, it does not.
    let (_, location) = dash.submit("/tasks/F-1/approve", &[]).await;
    let (_, page) = dash.get(&location).await;
    assert!(page.contains(r#"<p class="flash" role="status">approved F-1</p>"#), "{page}");
    let (_, page) = dash.get(&location.replace("approved%20F-1", "approved%20F-2")).await;
    assert!(!page.contains("approved F-2") && !page.contains(r#"class="flash"#), "{page}");

    // Bidirectional controls are shown as codes, on every page that shows the text.
    for path in ["/", "/tasks/RTL-1"] {
        let (_, page) = dash.get(path).await;
        assert!(page.contains("invoice[U+202E]fdp.exe and [U+2066]isolated[U+2069]"), "{path}\n{page}");
        assert!(!page.contains(['\u{202e}', '\u{2066}', '\u{2069}']), "{path}");
    }
}

#[tokio::test]
async fn a_run_abandoned_from_the_cli_no_longer_shows_an_open_pull_request() {
    use executor::domain::RunState;
    let db = common::sqlite();
    let store = db.open().await;
    task(&store, "AB-1", "a task", "inbox", QueueStatus::Approved).await;
    let run = store.create_run_for_task(&gid("AB-1"), Actor::Runner).await.unwrap().expect("run");
    for (from, to) in [(RunState::Queued, RunState::InProgress), (RunState::InProgress, RunState::Pr)] {
        store.set_run_state_if(run.id, from, to, None, Actor::Runner, "moved").await.unwrap();
    }
    store.set_run_pr(run.id, None, "https://example.test/pr/5", 5).await.unwrap();
    store.set_last_snapshot(run.id, None, &snapshot_json()).await.unwrap();
    store.record_decision(run.id, None, "CI green and reviewed: complete").await.unwrap();
    // What `executor runs abandon` does.
    store
        .set_run_state_if(
            run.id,
            RunState::Pr,
            RunState::Abandoned,
            None,
            Actor::Cli,
            "abandoned by a human: no",
        )
        .await
        .unwrap();
    let dash = Dashboard::start(store).await;

    let (_, board) = dash.get("/runs?state=abandoned").await;
    assert!(board.contains("#5</a> last seen open (run abandoned)"), "{board}");
    assert!(!board.contains("</a> open"), "{board}");
    assert!(board.contains("abandoned (the runner had last decided: CI green"), "{board}");
    let (_, page) = dash.get(&format!("/runs/{}", run.id)).await;
    assert!(page.contains("last seen open (run abandoned)") && !page.contains("<p>open"), "{page}");
    assert!(
        page.contains("before it was abandoned: CI green") && !page.contains("<dt>completed</dt>"),
        "{page}"
    );
}
