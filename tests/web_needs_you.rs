//! "Needs you", the dashboard's default view, over real HTTP on SQLite and PostgreSQL: every kind of wait
//! on a human is listed with its one-click action, each action is the CLI's store operation recorded as
//! `web`, and acting (or reading) takes the item off the list. Without a session the page is the login,
//! with no button that would fail.

mod common;
mod web_support;

use std::sync::Arc;

use chrono::{Duration, Utc};
use common::TestDb;
use executor::config::Config;
use executor::domain::{Actor, QueueStatus, RunState, TaskGid, checks_timeout_key};
use executor::store::{EventFilter, NewTask, Store};
use executor::web::AppState;
use reqwest::StatusCode;
use reqwest::redirect::Policy;
use web_support::Dashboard;

on_both_databases!(
    each_wait_is_listed_and_its_one_click_action_clears_it,
    run_actions_are_the_clis_with_the_same_history,
    the_api_has_every_action_with_the_clis_answers,
    the_change_mark_moves_with_every_change_a_page_shows_and_only_then,
    the_task_page_approves_a_pending_task_only_when_told_to_skip_triage,
    every_list_is_counted_whole_and_every_item_reachable,
    a_daily_cap_stop_is_offered_what_helps_not_resume,
);

const TOKEN: &str = "needs-token-0123456789abcdef0123456789";

impl Dashboard {
    /// Posts a form found on "Needs you" as the page does (its csrf, `back=needs`), and returns where
    /// the answer sends the browser.
    async fn act(&self, action: &str, extra: &[(&str, &str)]) -> String {
        let (_, page) = self.get("/").await;
        assert!(page.contains(&format!(r#"action="{action}""#)), "no form for {action} on\n{page}");
        let csrf = web_support::csrf_of(&page).expect("csrf");
        let mut fields = vec![("csrf", csrf.as_str()), ("back", "needs")];
        fields.extend_from_slice(extra);
        let r = self.post_form(action, web_support::form(&fields)).await;
        assert_eq!(r.status(), StatusCode::SEE_OTHER, "{action}");
        let location = r.headers()["location"].to_str().expect("location").to_string();
        assert!(location.starts_with("/?flash="), "{action} went well and back to Needs you: {location}");
        location
    }
}

fn gid(s: &str) -> TaskGid {
    TaskGid::parse(s).expect("gid")
}

async fn add(store: &Store, id: &str, text: &str, path: &[QueueStatus]) -> TaskGid {
    let t = NewTask { description: Some(text.into()), source: Some("inbox".into()), ..Default::default() };
    store.upsert_task(&gid(id), &t, Actor::Cli).await.expect("add");
    for &to in path {
        store.set_task_status(&gid(id), to, Actor::Cli, None).await.expect("move");
    }
    gid(id)
}

/// An approved task with a run moved along `states` by the runner.
async fn run_in(store: &Store, id: &str, text: &str, states: &[RunState]) -> i64 {
    let g = add(store, id, text, &[QueueStatus::AwaitingGo, QueueStatus::Approved]).await;
    let run = store.create_run_for_task(&g, Actor::Runner).await.expect("run").expect("created");
    let mut from = RunState::Queued;
    for &to in states {
        store.set_run_state_if(run.id, from, to, None, Actor::Runner, "test").await.expect("state");
        from = to;
    }
    run.id
}

/// The events of the task, newest last.
async fn last_event(store: &Store, g: &TaskGid) -> executor::store::Event {
    let events =
        store.events(&EventFilter { task_gid: Some(g.clone()), ..Default::default() }).await.unwrap();
    events.last().expect("an event").clone()
}

async fn each_wait_is_listed_and_its_one_click_action_clears_it(db: TestDb) {
    let store = db.open().await;
    let go = add(&store, "GO-1", "Ship the export button\nmore", &[QueueStatus::AwaitingGo]).await;
    let review = add(&store, "RV-1", "Maybe rewrite the parser", &[QueueStatus::ForReview]).await;
    // An analysis given up on: it failed analyzer.max_attempts (3) times.
    let failed = add(&store, "AN-1", "<script>alert(1)</script> triage keeps failing", &[]).await;
    for attempt in 0..3 {
        let claimed = store.claim_for_analysis("analyzer-1", Duration::minutes(5), 3).await.unwrap();
        assert_eq!(claimed.map(|t| t.task_gid), Some(failed.clone()), "attempt {attempt}");
        let past = Utc::now() - Duration::seconds(1);
        assert!(store.record_analysis_failure(&failed, "analyzer-1", "agent crashed", past).await.unwrap());
    }
    let budget = run_in(&store, "BU-1", "Costly task", &[RunState::InProgress]).await;
    store.set_budget_stop(budget, None, Some(executor::domain::BudgetCap::Run)).await.unwrap();
    store.record_decision(budget, None, "Run over budget.per_run_usd ($5)").await.unwrap();
    let checks = run_in(&store, "CK-1", "Waiting on CI", &[RunState::InProgress, RunState::Pr]).await;
    store.set_run_pr(checks, None, "https://github.com/o/r/pull/7", 7).await.unwrap();
    store.set_run_head(checks, None, "abc123").await.unwrap();
    let told = "PR #7 has waited 2h at abc123 for checks that have not finished";
    let key = checks_timeout_key("abc123");
    store.add_notice(Some(checks), Some("CK-1"), "needs_human", Some(&key), told).await.unwrap();
    // A notice for an older head is moot: the pull request moved on.
    let old_key = checks_timeout_key("0ld");
    store.add_notice(Some(checks), Some("CK-1"), "needs_human", Some(&old_key), "stale").await.unwrap();
    let abandoned =
        run_in(&store, "AB-1", "Gave up on this", &[RunState::InProgress, RunState::Abandoned]).await;
    store
        .add_notice(Some(abandoned), Some("AB-1"), "abandoned", Some("abandoned"), "CI failed 3 times")
        .await
        .unwrap();
    // Delivered is not read: the delivered notice still waits.
    let ids: Vec<i64> = store.notices(Some(abandoned)).await.unwrap().iter().map(|n| n.id).collect();
    store.mark_notice_delivered(ids[0], "forge comment").await.unwrap();
    store.set_source_failed("asana_inbox", "Asana answered 401: the token was rejected").await.unwrap();
    let dash = Dashboard::start(store.clone(), Config::default(), TOKEN).await;

    let (status, page) = dash.get("/").await;
    assert_eq!(status, StatusCode::OK);
    for expected in [
        "Needs you",
        "Awaiting your go",
        "Ship the export button",
        "For review",
        "Maybe rewrite the parser",
        "Analyses given up on",
        "agent crashed",
        "Stopped on budget",
        "Run over budget.per_run_usd ($5)",
        "Checks that never reported",
        told,
        "Abandoned, unread",
        "CI failed 3 times",
        "Sources whose last fetch failed",
        "Asana answered 401",
    ] {
        assert!(page.contains(expected), "{expected:?} missing from\n{page}");
    }
    assert!(!page.contains("stale"), "a notice for an old head is not listed");
    assert!(!page.contains("<script>alert") && page.contains("&lt;script&gt;alert(1)"), "text is escaped");
    assert!(!page.contains(TOKEN), "no page holds the token");

    // Each one-click action: the CLI's operation, recorded as the dashboard's, and the item leaves.
    dash.act(&format!("/tasks/{go}/approve"), &[]).await;
    assert_eq!(store.task(&go).await.unwrap().status, QueueStatus::Approved);
    assert_eq!(last_event(&store, &go).await.actor, "web");

    dash.act(&format!("/tasks/{review}/skip"), &[("reason", "not this quarter")]).await;
    let skipped = store.task(&review).await.unwrap();
    assert_eq!(skipped.status, QueueStatus::Skip);
    assert_eq!(last_event(&store, &review).await.reason.as_deref(), Some("not this quarter"));

    dash.act(&format!("/tasks/{failed}/requeue"), &[]).await;
    let requeued = store.task(&failed).await.unwrap();
    assert_eq!((requeued.status, requeued.analysis_attempts), (QueueStatus::Pending, 0));
    assert_eq!(last_event(&store, &failed).await.reason.as_deref(), Some(executor::store::REQUEUE_REASON));

    dash.act(&format!("/runs/{budget}/resume"), &[]).await;
    assert!(!store.run_memory(budget).await.unwrap().budget_stopped);

    let notice = store.notices(Some(checks)).await.unwrap();
    let current = notice.iter().find(|n| n.notice_key.as_deref() == Some(key.as_str())).unwrap();
    dash.act(&format!("/notices/{}/read", current.id), &[]).await;
    let ck = gid("CK-1");
    assert!(last_event(&store, &ck).await.reason.unwrap().contains("marked read"));
    assert_eq!(store.run(checks).await.unwrap().state, RunState::Pr, "reading changes no state");

    dash.act("/tasks/AB-1/retry", &[]).await;
    let retried = store.task(&gid("AB-1")).await.unwrap();
    assert_eq!((retried.status, retried.executor_run_id), (QueueStatus::Approved, None));

    dash.act("/sources/dismiss", &[("source", "asana_inbox")]).await;

    let (_, page) = dash.get("/").await;
    assert!(page.contains("Nothing waits on you"), "{page}");
    assert!(page.contains("0 waiting"), "{page}");

    // A source that fails again is unread again.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    store.set_source_failed("asana_inbox", "Asana answered 503").await.unwrap();
    let (_, page) = dash.get("/").await;
    assert!(page.contains("Asana answered 503"), "{page}");
    // Reading twice is refused, and says so.
    let twice = store.mark_notice_read(current.id, Actor::Web).await.unwrap_err();
    assert!(twice.to_string().contains("already"), "{twice}");
}

async fn run_actions_are_the_clis_with_the_same_history(db: TestDb) {
    let store = db.open().await;
    let web_run = run_in(&store, "WA-1", "Abandon me from the page", &[RunState::InProgress]).await;
    let cli_run =
        run_in(&store, "CA-1", "Abandon me from the CLI's operation", &[RunState::InProgress]).await;
    store.set_budget_stop(web_run, None, Some(executor::domain::BudgetCap::Run)).await.unwrap();
    let dash = Dashboard::start(store.clone(), Config::default(), TOKEN).await;

    // Abandoning needs a reason; without one nothing changes.
    let (_, page) = dash.get("/").await;
    let csrf = web_support::csrf_of(&page).expect("csrf");
    let post = async |path: String, body: String| {
        let r = dash.post_form(&path, body).await;
        r.headers()["location"].to_str().expect("location").to_string()
    };
    let location = post(format!("/runs/{web_run}/abandon"), format!("csrf={csrf}&back=run&reason=+")).await;
    assert!(location.starts_with(&format!("/runs/{web_run}?error=")), "{location}");
    assert_eq!(store.run(web_run).await.unwrap().state, RunState::InProgress);

    let location =
        post(format!("/runs/{web_run}/abandon"), format!("csrf={csrf}&back=run&reason=wrong+approach")).await;
    assert!(location.starts_with(&format!("/runs/{web_run}?flash=")), "{location}");
    store.abandon_run(cli_run, Actor::Cli, "wrong approach").await.unwrap();
    // The same move and the same words in the history, only the actor differs.
    let last = |id: i64| {
        let store = store.clone();
        async move {
            let events = store.events(&EventFilter { run_id: Some(id), ..Default::default() }).await.unwrap();
            events.last().unwrap().clone()
        }
    };
    let (web, cli) = (last(web_run).await, last(cli_run).await);
    assert_eq!((web.actor.as_str(), cli.actor.as_str()), ("web", "cli"));
    assert_eq!((&web.kind, &web.from_state, &web.to_state), (&cli.kind, &cli.from_state, &cli.to_state));
    assert_eq!(web.reason, cli.reason);
    assert_eq!(web.reason.as_deref(), Some("abandoned by a human: wrong approach"));
    // An abandoned run is no longer stopped on budget: it waits on nobody.
    let (_, page) = dash.get("/").await;
    assert!(!page.contains("Stopped on budget"), "{page}");
    // The run page offers the retry, and abandoning again is refused with the state machine's reason.
    let (_, run_page) = dash.get(&format!("/runs/{web_run}")).await;
    assert!(
        run_page.contains("action=\"/tasks/WA-1/retry\"") && !run_page.contains("/abandon\""),
        "{run_page}"
    );
    let location =
        post(format!("/runs/{web_run}/abandon"), format!("csrf={csrf}&back=run&reason=again")).await;
    assert!(location.contains("error=") && location.contains("abandoned"), "{location}");

    // Bulk skip: each task on its own, with the one reason.
    add(&store, "BS-1", "one", &[QueueStatus::AwaitingGo]).await;
    add(&store, "BS-2", "two", &[QueueStatus::ForReview]).await;
    let location =
        post("/tasks/bulk-skip".into(), format!("csrf={csrf}&gid=BS-1&gid=BS-2&gid=WA-1&reason=duplicates"))
            .await;
    assert!(location.starts_with("/queue?error=") && location.contains("skipped%202%20tasks"), "{location}");
    for g in ["BS-1", "BS-2"] {
        assert_eq!(store.task(&gid(g)).await.unwrap().status, QueueStatus::Skip, "{g}");
        assert_eq!(last_event(&store, &gid(g)).await.actor, "web");
    }
}

#[tokio::test]
async fn without_a_session_the_default_view_is_the_login_and_no_button() {
    let db = common::sqlite();
    let store = db.open().await;
    add(&store, "LG-1", "Behind the login", &[QueueStatus::AwaitingGo]).await;
    let state = AppState::new(store, Arc::new(Config::default()), TOKEN.to_string(), None);
    let (base, _stop) = web_support::serve(state).await;
    let client = reqwest::Client::builder().redirect(Policy::none()).build().unwrap();
    let r = client.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let page = r.text().await.unwrap();
    assert!(page.contains("executor serve") && page.contains(r#"name="token""#), "{page}");
    assert!(!page.contains("Behind the login") && !page.contains("/approve"), "{page}");
    // A form posted without the session changes nothing.
    let r = client.post(format!("{base}/tasks/LG-1/approve")).header("origin", &base).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_queue_link_from_before_goes_to_the_queue() {
    let db = common::sqlite();
    let dash = Dashboard::start(db.open().await, Config::default(), TOKEN).await;
    let r = dash.get_response("/?status=awaiting_go&page=2").await;
    assert_eq!(r.status(), StatusCode::PERMANENT_REDIRECT);
    assert_eq!(r.headers()["location"], "/queue?status=awaiting_go&page=2");
}

async fn the_api_has_every_action_with_the_clis_answers(db: TestDb) {
    let store = db.open().await;
    let run = run_in(&store, "API-1", "Through the API", &[RunState::InProgress]).await;
    store.set_budget_stop(run, None, Some(executor::domain::BudgetCap::Run)).await.unwrap();
    let skipped = add(&store, "API-2", "Skipped once", &[QueueStatus::Skip]).await;
    add(&store, "API-3", "Bulk one", &[QueueStatus::AwaitingGo]).await;
    let gone = run_in(&store, "API-4", "Abandoned by the runner", &[RunState::Abandoned]).await;
    let notice = store.add_notice(Some(gone), Some("API-4"), "abandoned", Some("abandoned"), "gave up").await;
    let notice = notice.unwrap().expect("recorded");
    store.set_source_failed("inbox", "Asana answered 500").await.unwrap();
    let state = AppState::new(store.clone(), Arc::new(Config::default()), TOKEN.to_string(), None);
    let (base, _stop) = web_support::serve(state).await;
    let client = reqwest::Client::new();
    let call = |method: reqwest::Method, path: &str, body: Option<serde_json::Value>| {
        let mut request = client
            .request(method, format!("{base}/api/v1{path}"))
            .header("authorization", format!("Bearer {TOKEN}"));
        if let Some(body) = body {
            request = request.json(&body);
        }
        async move {
            let r = request.send().await.expect("request");
            let status = r.status();
            (status, r.json::<serde_json::Value>().await.expect("JSON"))
        }
    };
    use reqwest::Method;
    let (status, needs) = call(Method::GET, "/needs-you", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(needs["needs"]["awaiting_go"]["total"], 1, "{needs}");
    assert_eq!(needs["needs"]["budget_stopped"]["items"][0]["run"]["id"], run, "{needs}");
    assert_eq!(needs["needs"]["abandoned_unread"]["items"][0]["notice"]["id"], notice, "{needs}");
    assert_eq!(needs["needs"]["failed_sources"]["items"][0]["source"], "inbox", "{needs}");
    assert_eq!(needs["total"], 4, "{needs}");

    let (status, memory) = call(Method::POST, &format!("/runs/{run}/resume"), None).await;
    assert_eq!((status, &memory["budget_stopped"]), (StatusCode::OK, &serde_json::json!(false)), "{memory}");
    let (status, error) =
        call(Method::POST, &format!("/runs/{run}/abandon"), Some(serde_json::json!({}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    let body = serde_json::json!({ "reason": "wrong approach" });
    let (status, abandoned) = call(Method::POST, &format!("/runs/{run}/abandon"), Some(body.clone())).await;
    assert_eq!(
        (status, &abandoned["state"]),
        (StatusCode::OK, &serde_json::json!("abandoned")),
        "{abandoned}"
    );
    let (status, error) = call(Method::POST, &format!("/runs/{run}/abandon"), Some(body)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{error}");
    let (status, task) = call(Method::POST, "/tasks/API-1/retry", None).await;
    assert_eq!((status, &task["executor_run_id"]), (StatusCode::OK, &serde_json::Value::Null), "{task}");
    let (status, task) = call(Method::POST, &format!("/tasks/{skipped}/requeue"), None).await;
    assert_eq!((status, &task["status"]), (StatusCode::OK, &serde_json::json!("pending")), "{task}");
    let body = serde_json::json!({ "gids": ["API-3", "API-1"], "reason": "duplicates" });
    let (status, results) = call(Method::POST, "/tasks/bulk-skip", Some(body)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!((&results[0]["ok"], &results[1]["ok"]), (&serde_json::json!(true), &serde_json::json!(false)));
    let (status, _) = call(Method::POST, &format!("/notices/{notice}/read"), None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, error) = call(Method::POST, &format!("/notices/{notice}/read"), None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{error}");
    let (status, error) = call(Method::POST, "/notices/999999/read", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{error}");
    let (status, _) = call(Method::POST, "/sources/inbox/dismiss", None).await;
    assert_eq!(status, StatusCode::OK);
    let (_, needs) = call(Method::GET, "/needs-you", None).await;
    assert_eq!(needs["total"], 0, "{needs}");
    for g in ["API-1", "API-2", "API-3"] {
        assert_eq!(last_event(&store, &gid(g)).await.actor, "web", "{g}");
    }
}

async fn the_change_mark_moves_with_every_change_a_page_shows_and_only_then(db: TestDb) {
    let store = db.open().await;
    let dash = Dashboard::start(store.clone(), Config::default(), TOKEN).await;
    let mark = || async {
        let (status, body) = dash.get("/changes").await;
        assert_eq!(status, StatusCode::OK);
        let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        v["mark"].as_str().expect("a mark").to_string()
    };
    let first = mark().await;
    assert_eq!(mark().await, first, "nothing changed, nothing moves");
    // The page carries the mark it was rendered with.
    let (_, page) = dash.get("/").await;
    assert!(page.contains(&format!(r#" data-live="{first}">"#)), "{page}");
    let g = add(&store, "CH-1", "A new task", &[QueueStatus::AwaitingGo]).await;
    let added = mark().await;
    assert_ne!(added, first, "a task arriving moves it");
    let run = run_in(&store, "CH-2", "A run", &[]).await;
    let created = mark().await;
    assert_ne!(created, added, "a run created moves it");
    store.record_decision(run, None, "waiting for a slot").await.unwrap();
    let decided = mark().await;
    assert_ne!(decided, created, "a decision moves it");
    store.set_source_failed("inbox", "Asana answered 500").await.unwrap();
    let failed = mark().await;
    assert_ne!(failed, decided, "a failed fetch moves it");
    store.approve_task(&g, false, Actor::Cli).await.unwrap();
    assert_ne!(mark().await, failed, "a human's action moves it");
}

async fn the_task_page_approves_a_pending_task_only_when_told_to_skip_triage(db: TestDb) {
    let store = db.open().await;
    let g = add(&store, "PT-1", "Still pending", &[]).await;
    let dash = Dashboard::start(store.clone(), Config::default(), TOKEN).await;
    let (_, page) = dash.get("/tasks/PT-1").await;
    // Behind a confirmation: a disclosure whose form says what it does.
    assert!(page.contains("Approve without triage…") && page.contains(r#"name="skip_triage" value="on""#));
    let csrf = web_support::csrf_of(&page).expect("csrf");
    let post = async |body: String| {
        let r = dash.post_form("/tasks/PT-1/approve", body).await;
        r.headers()["location"].to_str().expect("location").to_string()
    };
    let refused = post(format!("csrf={csrf}&back=task")).await;
    assert!(refused.contains("error=") && refused.contains("skip-triage"), "{refused}");
    assert_eq!(store.task(&g).await.unwrap().status, QueueStatus::Pending);
    let done = post(format!("csrf={csrf}&back=task&skip_triage=on")).await;
    assert!(done.starts_with("/tasks/PT-1?flash=approved%20PT-1%20without%20triage"), "{done}");
    let events =
        store.events(&EventFilter { task_gid: Some(g.clone()), ..Default::default() }).await.unwrap();
    let moves: Vec<_> = events
        .iter()
        .filter(|e| e.kind == "queue_status")
        .map(|e| (e.actor.as_str(), e.to_state.as_deref(), e.reason.as_deref()))
        .collect();
    // The path `executor approve --skip-triage` records, by the dashboard.
    assert_eq!(
        moves,
        [
            ("web", Some("awaiting_go"), Some("triage skipped by a human")),
            ("web", Some("approved"), Some("approved by a human"))
        ]
    );
}

/// Issue 35, item 4: lists were cut at 20 and counted as 20 (50 budget stops showed "20", the page's
/// total differed from the API's), and items 21+ could not be reached. Each list is counted whole, the
/// page's total is the API's, and its link shows all of it, a page at a time.
async fn every_list_is_counted_whole_and_every_item_reachable(db: TestDb) {
    let store = db.open().await;
    let mut stopped = Vec::new();
    for i in 0..23 {
        let run = run_in(&store, &format!("BS-{i}"), "Costly", &[RunState::InProgress]).await;
        store.set_budget_stop(run, None, Some(executor::domain::BudgetCap::Run)).await.unwrap();
        stopped.push(run);
    }
    add(&store, "GO-1", "Ready to go", &[QueueStatus::AwaitingGo]).await;
    let dash = Dashboard::start(store.clone(), Config::default(), TOKEN).await;

    let (status, page) = dash.get("/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("Needs you <small>24 waiting</small>"), "{page}");
    assert!(page.contains("Stopped on budget <small>23</small>"), "{page}");
    assert!(page.contains(r#"href="/?all=budget-stopped">all 23"#), "{page}");
    assert!(!page.contains(&format!(r#"href="/runs/{}""#, stopped[22])), "20 at first");
    // The API, 100 a list, says the same total.
    let api = dash
        .client
        .get(format!("{}/api/v1/needs-you", dash.base))
        .header("authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .unwrap()
        .json::<serde_json::Value>()
        .await
        .unwrap();
    assert_eq!(
        (api["total"].as_i64(), api["needs"]["budget_stopped"]["total"].as_i64()),
        (Some(24), Some(23))
    );

    // All of the list, with its one-click actions; a page of it when longer than a page.
    let (status, all) = dash.get("/?all=budget-stopped").await;
    assert_eq!(status, StatusCode::OK);
    for run in &stopped {
        assert!(all.contains(&format!(r#"action="/runs/{run}/resume""#)), "run {run} missing from\n{all}");
    }
    assert!(all.contains("1–23 of 23") && !all.contains("Awaiting your go"), "only that list: {all}");
    let (_, later) = dash.get("/?all=budget-stopped&start=20").await;
    assert!(later.contains("21–23 of 23") && later.contains("previous"), "{later}");
    assert!(later.contains(&format!(r#"href="/runs/{}""#, stopped[22])));
    assert!(!later.contains(&format!(r#"href="/runs/{}""#, stopped[0])));
}

/// Issue 35, item 6: a run the daily cap stopped was offered Resume, which said it worked and changed
/// nothing, and Needs you had no word of the daily cap. It is offered what helps, and told when.
async fn a_daily_cap_stop_is_offered_what_helps_not_resume(db: TestDb) {
    use executor::domain::BudgetCap;
    let store = db.open().await;
    let day = run_in(&store, "DC-1", "Stopped by the day", &[RunState::InProgress]).await;
    store.set_budget_stop(day, None, Some(BudgetCap::Day)).await.unwrap();
    let own = run_in(&store, "RC-1", "Stopped by its own cap", &[RunState::InProgress]).await;
    store.set_budget_stop(own, None, Some(BudgetCap::Run)).await.unwrap();
    let dash = Dashboard::start(store.clone(), Config::default(), TOKEN).await;

    let (_, page) = dash.get("/").await;
    let turns = executor::domain::next_budget_day(Utc::now()).format("%Y-%m-%d %H:%M UTC").to_string();
    assert!(page.contains(r#"id="day-cap""#) && page.contains("The daily budget is spent"), "{page}");
    assert!(page.contains(&format!("when the day turns at {turns}")), "{page}");
    assert!(page.contains("budget.per_day_usd in executor.toml is raised"), "{page}");
    assert!(!page.contains(&format!(r#"action="/runs/{day}/resume""#)), "no Resume for the day's cap");
    assert!(page.contains(&format!(r#"action="/runs/{own}/resume""#)), "Resume for the run's own cap");
    let (_, run_page) = dash.get(&format!("/runs/{day}")).await;
    assert!(!run_page.contains(&format!(r#"action="/runs/{day}/resume""#)), "{run_page}");
    assert!(run_page.contains("stopped by the daily cap (budget.per_day_usd)"), "{run_page}");
    assert!(run_page.contains(&turns), "{run_page}");

    // A resume sent anyway (an old page, the API) is refused, saying why, and changes nothing.
    let csrf = web_support::csrf_of(&page).expect("csrf");
    let r = dash
        .post_form(&format!("/runs/{day}/resume"), web_support::form(&[("csrf", &csrf), ("back", "needs")]))
        .await;
    let location = r.headers()["location"].to_str().unwrap().to_string();
    assert!(location.contains("error="), "{location}");
    assert_eq!(store.run_memory(day).await.unwrap().budget_cap, Some(BudgetCap::Day));
}
