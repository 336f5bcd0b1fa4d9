//! The dashboard's JSON API, its security layer and `/metrics`, over real HTTP against `web::serve` on
//! 127.0.0.1:0 with a real SQLite store; and `executor serve` itself.

mod common;
mod web_support;

use std::sync::Arc;

use executor::config::Config;
use executor::domain::{Actor, QueueStatus, RunState, TaskGid, WorkerKind};
use executor::store::{EventFilter, Heartbeat, NewTask, RunnerRegistration, Store, WorkerEnd};
use executor::web::AppState;
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, LOCATION, SET_COOKIE};
use serde_json::{Value, json};

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

struct Server {
    base: String,
    store: Store,
    http: reqwest::Client,
    stop: tokio::sync::watch::Sender<bool>,
    _db: common::TestDb,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

impl Server {
    async fn start() -> Server {
        let db = common::sqlite();
        let store = db.open().await;
        let state = AppState::new(store.clone(), Arc::new(Config::default()), TOKEN.to_string(), None);
        let (base, stop) = web_support::serve(state).await;
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        Server { base, store, http, stop, _db: db }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A read as a script makes it: with the bearer token.
    async fn get(&self, path: &str) -> reqwest::Response {
        self.http.get(self.url(path)).bearer_auth(TOKEN).send().await.unwrap()
    }

    /// A read with nothing: no session, no token.
    async fn get_anonymous(&self, path: &str) -> reqwest::Response {
        self.http.get(self.url(path)).send().await.unwrap()
    }

    async fn post_bearer(&self, path: &str, body: Value) -> reqwest::Response {
        self.http.post(self.url(path)).bearer_auth(TOKEN).json(&body).send().await.unwrap()
    }

    async fn add(&self, gid: &str, description: &str, status: QueueStatus) -> TaskGid {
        let g = TaskGid::parse(gid).unwrap();
        let t = NewTask {
            source: Some("inbox".into()),
            description: Some(description.into()),
            ..Default::default()
        };
        self.store.upsert_task(&g, &t, Actor::Cli).await.unwrap();
        if status != QueueStatus::Pending {
            if status != QueueStatus::Skip && status != QueueStatus::ForReview {
                self.store.set_task_status(&g, QueueStatus::AwaitingGo, Actor::Cli, None).await.unwrap();
            }
            if status != QueueStatus::AwaitingGo {
                self.store.set_task_status(&g, status, Actor::Cli, None).await.unwrap();
            }
        }
        g
    }
}

fn assert_secure(headers: &HeaderMap, what: &str) {
    let csp = headers.get("content-security-policy").and_then(|v| v.to_str().ok()).unwrap_or("");
    assert!(csp.contains("script-src 'self'") && csp.contains("default-src 'none'"), "{what}: CSP {csp:?}");
    assert_eq!(headers.get("x-content-type-options").unwrap(), "nosniff", "{what}");
    assert_eq!(headers.get("referrer-policy").unwrap(), "same-origin", "{what}");
}

async fn json_of(r: reqwest::Response) -> Value {
    r.json().await.unwrap()
}

#[tokio::test]
async fn every_read_answers_json_with_the_security_headers() {
    let s = Server::start().await;
    let g = s.add("T1", "first task", QueueStatus::AwaitingGo).await;
    s.add("T2", "second task", QueueStatus::Pending).await;
    s.store.approve_task(&g, false, Actor::Cli).await.unwrap();
    let run = s.store.create_run_for_task(&g, Actor::Runner).await.unwrap().unwrap();

    let r = s.get("/api/v1/tasks").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_secure(r.headers(), "/tasks");
    assert_eq!(r.headers().get("cache-control").unwrap(), "no-store");
    let v = json_of(r).await;
    assert_eq!(v["total"], 2);
    assert_eq!(v["tasks"].as_array().unwrap().len(), 2);

    let v = json_of(s.get("/api/v1/tasks/T1").await).await;
    assert_eq!(v["task"]["task_gid"], "T1");
    assert_eq!(v["task"]["status"], "approved");
    assert_eq!(v["runs"][0]["id"], run.id);
    assert!(v["events"].as_array().unwrap().len() >= 2, "{v}");
    assert!(v["analysis_sessions"].is_array());

    let v = json_of(s.get("/api/v1/runs").await).await;
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["state"], "queued");
    let v = json_of(s.get("/api/v1/runs?state=pr").await).await;
    assert_eq!(v.as_array().unwrap().len(), 0);

    let v = json_of(s.get(&format!("/api/v1/runs/{}", run.id)).await).await;
    assert_eq!(v["run"]["id"], run.id);
    assert!(v["workers"].is_array() && v["events"].is_array() && v["notices"].is_array(), "{v}");

    let v = json_of(s.get("/api/v1/status").await).await;
    assert_eq!(v["executor_queue"]["approved"], 1);
    assert_eq!(v["executor_queue"]["pending"], 1);
    assert_eq!(v["executor_runs"]["queued"], 1);
    assert_eq!(v["workers_alive"], 0);
    assert_eq!(v["per_day_usd"], 50.0);

    let v = json_of(s.get("/api/v1/events?limit=2").await).await;
    assert_eq!(v.as_array().unwrap().len(), 2);
    let v = json_of(s.get("/api/v1/events?since=1h").await).await;
    assert!(v.as_array().unwrap().len() >= 4, "{v}");
    let r = s.get("/api/v1/events?since=yesterday-ish").await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);

    // Errors are JSON, with the headers too.
    for (path, status) in [
        ("/api/v1/tasks/NOPE", StatusCode::NOT_FOUND),
        ("/api/v1/runs/999", StatusCode::NOT_FOUND),
        ("/api/v1/runs/x", StatusCode::NOT_FOUND),
        ("/api/v1/tasks?status=bogus", StatusCode::UNPROCESSABLE_ENTITY),
        ("/api/v1/tasks?limit=-1", StatusCode::UNPROCESSABLE_ENTITY),
        ("/api/v1/nothing", StatusCode::NOT_FOUND),
    ] {
        let r = s.get(path).await;
        assert_eq!(r.status(), status, "{path}");
        assert_secure(r.headers(), path);
        assert!(json_of(r).await["error"].is_string(), "{path}");
    }
    let r = s.get("/metrics").await;
    assert_secure(r.headers(), "/metrics");
}

#[tokio::test]
async fn the_task_list_filters_searches_and_pages() {
    let s = Server::start().await;
    for i in 0..7 {
        s.add(&format!("P{i}"), &format!("pending number {i}"), QueueStatus::Pending).await;
    }
    s.add("S1", "Fix the LOGIN page", QueueStatus::Skip).await;
    s.add("S2", "100% done_ish", QueueStatus::Skip).await;
    s.add("S3", "100 percent", QueueStatus::Skip).await;

    let v = json_of(s.get("/api/v1/tasks?status=pending&limit=3&offset=5").await).await;
    assert_eq!(v["total"], 7);
    let gids: Vec<&str> =
        v["tasks"].as_array().unwrap().iter().map(|t| t["task_gid"].as_str().unwrap()).collect();
    assert_eq!(gids.len(), 2, "{gids:?}");

    let v = json_of(s.get("/api/v1/tasks?q=login").await).await;
    assert_eq!((v["total"].clone(), v["tasks"][0]["task_gid"].clone()), (json!(1), json!("S1")));
    // A search matches words (and their starts): % and _ separate words, they are no patterns.
    let v = json_of(s.get("/api/v1/tasks?q=100%25").await).await;
    assert_eq!((v["total"].clone(), v["tasks"][0]["task_gid"].clone()), (json!(2), json!("S2")));
    let v = json_of(s.get("/api/v1/tasks?q=done_ish").await).await;
    assert_eq!(v["total"], 1, "{v}");
    let v = json_of(s.get("/api/v1/tasks?q=e_i").await).await;
    assert_eq!(v["total"], 0, "no word starts with e: {v}");
    // The queue page's sorts and filters.
    let v = json_of(s.get("/api/v1/tasks?sort=gid&dir=desc&limit=2").await).await;
    let gids: Vec<&str> =
        v["tasks"].as_array().unwrap().iter().map(|t| t["task_gid"].as_str().unwrap()).collect();
    assert_eq!((gids, v["total"].clone()), (vec!["S3", "S2"], json!(10)));
    let v = json_of(s.get("/api/v1/tasks?added_within=1d&older_than=365d").await).await;
    assert_eq!(v["total"], 0, "added today and over a year ago: none");
    for (query, param) in [
        ("sort=title", "sort"),
        ("dir=up", "dir"),
        ("added_within=soon", "added_within"),
        ("prio_min=x", "prio_min"),
    ] {
        let r = s.get(&format!("/api/v1/tasks?{query}")).await;
        assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY, "{query}");
        let error = json_of(r).await["error"].as_str().unwrap().to_string();
        assert!(error.starts_with(&format!("{param}: ")), "{query}: {error}");
    }
    let v = json_of(s.get("/api/v1/tasks?source=inbox&status=skip").await).await;
    assert_eq!(v["total"], 3);
    let v = json_of(s.get("/api/v1/tasks?source=elsewhere").await).await;
    assert_eq!(v["total"], 0);
}

/// Issue 35, item 11: the queue and the runs as CSV, the same rows as the JSON; cells quoted, and a
/// task's text that a spreadsheet would run as a formula kept as text.
#[tokio::test]
async fn the_queue_and_the_runs_export_as_csv_that_no_spreadsheet_runs() {
    let s = Server::start().await;
    s.add("C1", "=HYPERLINK(\"http://evil.test\",\"click\")", QueueStatus::AwaitingGo).await;
    s.add("C2", "Fix the export, then \"ship\"\nsecond line", QueueStatus::AwaitingGo).await;
    let g = s.add("C3", "@SUM(1+1)", QueueStatus::Approved).await;
    let run = s.store.create_run_for_task(&g, Actor::Runner).await.unwrap().unwrap();
    s.store.set_run_workspace(run.id, None, "/w", "-branch,with comma").await.unwrap();

    let r = s.get("/api/v1/tasks.csv?status=awaiting_go&sort=gid").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "text/csv; charset=utf-8");
    assert!(r.headers()["content-disposition"].to_str().unwrap().contains("executor-queue.csv"));
    assert_secure(r.headers(), "tasks.csv");
    let csv = r.text().await.unwrap();
    let lines: Vec<&str> = csv.split("\r\n").collect();
    assert!(lines[0].starts_with("task_gid,status,priority,"), "{csv}");
    assert!(lines[1].starts_with("C1,awaiting_go,"), "{csv}");
    assert!(lines[1].ends_with(r#","'=HYPERLINK(""http://evil.test"",""click"")""#), "{csv}");
    assert!(csv.contains(",\"Fix the export, then \"\"ship\"\"\nsecond line\"\r\n"), "{csv}");
    assert_eq!(lines.len(), 4, "a header, two tasks, the last line's end: {csv}");
    assert!(!csv.contains("C3"), "the filter holds");
    let all = s.get("/api/v1/tasks.csv?limit=10").await.text().await.unwrap();
    assert!(all.contains(",'@SUM(1+1)\r\n"), "{all}");

    let r = s.get("/api/v1/runs.csv").await;
    assert_eq!(r.status(), StatusCode::OK);
    let csv = r.text().await.unwrap();
    assert!(csv.starts_with("id,task_gid,state,repo,branch,"), "{csv}");
    assert!(csv.contains(&format!("{},C3,queued,,\"'-branch,with comma\",", run.id)), "{csv}");
    let r = s.get("/api/v1/runs.csv?state=bogus").await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(s.get_anonymous("/api/v1/runs.csv").await.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn approve_and_skip_need_the_token_and_change_the_store_as_web() {
    let s = Server::start().await;
    let g = s.add("A1", "approve me", QueueStatus::AwaitingGo).await;
    let k = s.add("K1", "skip me", QueueStatus::ForReview).await;

    // No token: refused, nothing written.
    let r = s.http.post(s.url("/api/v1/tasks/A1/approve")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_secure(r.headers(), "401");
    assert!(json_of(r).await["error"].is_string());
    let r = s.http.post(s.url("/api/v1/tasks/A1/approve")).bearer_auth("wrong-token").send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(s.store.task(&g).await.unwrap().status, QueueStatus::AwaitingGo);

    // The bearer token: approved, recorded as the web's doing.
    let r = s.http.post(s.url("/api/v1/tasks/A1/approve")).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v = json_of(r).await;
    assert_eq!((v["ok"].clone(), v["task"]["status"].clone()), (json!(true), json!("approved")));
    assert_eq!(s.store.task(&g).await.unwrap().status, QueueStatus::Approved);
    let events =
        s.store.events(&EventFilter { task_gid: Some(g.clone()), ..Default::default() }).await.unwrap();
    let last = events.last().unwrap();
    assert_eq!((last.actor.as_str(), last.to_state.as_deref()), ("web", Some("approved")));

    // Approving it again is not a legal move: 409 with the store's reason.
    let r = s.post_bearer("/api/v1/tasks/A1/approve", json!({})).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    assert!(json_of(r).await["error"].as_str().unwrap().contains("approved"));
    // A pending task needs skip_triage.
    let p = s.add("P1", "pending", QueueStatus::Pending).await;
    let r = s.post_bearer("/api/v1/tasks/P1/approve", json!({})).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let r = s.post_bearer("/api/v1/tasks/P1/approve", json!({ "skip_triage": true })).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(s.store.task(&p).await.unwrap().status, QueueStatus::Approved);
    let r = s.post_bearer("/api/v1/tasks/NOPE/approve", json!({})).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = s.post_bearer("/api/v1/tasks/A1/approve", json!({ "skip_triage": "yes" })).await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);

    // Skip needs a reason.
    let r = s.post_bearer("/api/v1/tasks/K1/skip", json!({})).await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let r = s.post_bearer("/api/v1/tasks/K1/skip", json!({ "reason": "  " })).await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let r = s.post_bearer("/api/v1/tasks/K1/skip", json!({ "reason": "not ours" })).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(json_of(r).await["status"], "skip");
    let events =
        s.store.events(&EventFilter { task_gid: Some(k.clone()), ..Default::default() }).await.unwrap();
    let last = events.last().unwrap();
    assert_eq!((last.actor.as_str(), last.reason.as_deref()), ("web", Some("not ours")));
    let r = s.post_bearer("/api/v1/tasks/K1/skip", json!({ "reason": "again" })).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
}

#[tokio::test]
async fn bulk_approve_answers_per_gid() {
    let s = Server::start().await;
    let a = s.add("B1", "one", QueueStatus::AwaitingGo).await;
    let b = s.add("B2", "two", QueueStatus::ForReview).await;
    s.add("B3", "three", QueueStatus::Pending).await;
    let r = s
        .post_bearer("/api/v1/tasks/bulk-approve", json!({ "gids": ["B1", "B2", "B3", "NOPE", "../x"] }))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let v = json_of(r).await;
    let oks: Vec<bool> = v.as_array().unwrap().iter().map(|r| r["ok"].as_bool().unwrap()).collect();
    assert_eq!(oks, [true, true, false, false, false], "{v}");
    assert_eq!(v[2]["gid"], "B3");
    assert!(v[2]["error"].as_str().unwrap().contains("pending"), "{v}");
    for g in [&a, &b] {
        assert_eq!(s.store.task(g).await.unwrap().status, QueueStatus::Approved);
    }
    let r = s.post_bearer("/api/v1/tasks/bulk-approve", json!({ "gids": [] })).await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let r = s.post_bearer("/api/v1/tasks/bulk-approve", json!({})).await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn a_session_needs_its_csrf_value_and_a_foreign_origin_is_refused() {
    let s = Server::start().await;
    let g = s.add("C1", "cookie", QueueStatus::AwaitingGo).await;
    let cookie = web_support::log_in(&s.http, &s.base, TOKEN).await;
    let page = s.http.get(s.url("/")).header("cookie", &cookie).send().await.unwrap().text().await.unwrap();
    let csrf = web_support::csrf_of(&page).expect("a csrf field");
    let url = s.url("/api/v1/tasks/C1/approve");

    // The cookie alone (what a cross-site form would carry, were it sent): refused.
    let r = s.http.post(&url).header("cookie", &cookie).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    for wrong in ["wrong", TOKEN] {
        let r = s
            .http
            .post(&url)
            .header("cookie", &cookie)
            .header("x-executor-csrf", wrong)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{wrong}");
        let r = s
            .http
            .post(&url)
            .header("cookie", &cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("csrf={wrong}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{wrong}");
    }
    // The CSRF value without the cookie is nothing: not a bearer token, not a session.
    let r = s.http.post(&url).bearer_auth(&csrf).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = s.http.post(&url).header("x-executor-csrf", &csrf).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    // Another session's CSRF value does not fit this one.
    let other = web_support::log_in(&s.http, &s.base, TOKEN).await;
    let r = s.http.post(&url).header("cookie", &other).header("x-executor-csrf", &csrf).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(s.store.task(&g).await.unwrap().status, QueueStatus::AwaitingGo);

    // A foreign Origin is refused even with every credential.
    let r = s
        .http
        .post(&url)
        .bearer_auth(TOKEN)
        .header("cookie", &cookie)
        .header("x-executor-csrf", &csrf)
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_secure(r.headers(), "403");
    assert_eq!(s.store.task(&g).await.unwrap().status, QueueStatus::AwaitingGo);

    // Cookie + the page's csrf field, from the page's own origin.
    let r = s
        .http
        .post(&url)
        .header("cookie", &cookie)
        .header("origin", &s.base)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("csrf={csrf}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(s.store.task(&g).await.unwrap().status, QueueStatus::Approved);

    // Cookie + the header, as the page's script sends it; a form's fields become the body.
    s.add("C2", "header", QueueStatus::ForReview).await;
    let r = s
        .http
        .post(s.url("/api/v1/tasks/C2/skip"))
        .header("cookie", &cookie)
        .header("x-executor-csrf", &csrf)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("reason=dup+of+C1")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(json_of(r).await["status"], "skip");
}

#[tokio::test]
async fn the_token_in_the_url_logs_in_and_leaves_the_address() {
    let s = Server::start().await;
    let r = s.get_anonymous(&format!("/api/v1/tasks?status=pending&token={TOKEN}&limit=5")).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_secure(r.headers(), "redirect");
    assert_eq!(r.headers().get(LOCATION).unwrap(), "/api/v1/tasks?status=pending&limit=5");
    let set = r.headers().get(SET_COOKIE).unwrap().to_str().unwrap();
    assert!(set.starts_with("executor_session=") && !set.contains(TOKEN), "{set}");
    assert!(set.ends_with("; HttpOnly; SameSite=Strict; Path=/; Max-Age=604800"), "{set}");

    let r = s.get_anonymous(&format!("/?token={TOKEN}")).await;
    assert_eq!(
        (r.status(), r.headers().get(LOCATION).unwrap().to_str().unwrap()),
        (StatusCode::SEE_OTHER, "/")
    );
    let r = s.get_anonymous(&format!("//evil.example/x?token={TOKEN}")).await;
    assert_eq!(r.headers().get(LOCATION).unwrap(), "/evil.example/x", "never to another site");

    let r = s.get_anonymous("/api/v1/status?token=wrong").await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.headers().get(SET_COOKIE).is_none());
}

#[tokio::test]
async fn every_request_needs_a_session_or_the_token_and_pages_say_how_to_log_in() {
    let s = Server::start().await;
    s.add("T1", "secret task text", QueueStatus::AwaitingGo).await;
    for path in ["/api/v1/status", "/api/v1/tasks", "/metrics", "/api/v1/nothing"] {
        let r = s.get_anonymous(path).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{path}");
        assert_secure(r.headers(), path);
        assert!(json_of(r).await["error"].as_str().unwrap().contains("log in"), "{path}");
    }
    for path in ["/", "/tasks/T1", "/runs", "/status", "/no/such/page"] {
        let r = s.get_anonymous(path).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{path}");
        assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/html"), "{path}");
        let page = r.text().await.unwrap();
        assert!(!page.contains("secret task text"), "{path}");
        // Styled, with the command that prints the URL and a form that logs in.
        assert!(page.contains(r#"<link rel="stylesheet" href="/static/app.css">"#), "{path}");
        assert!(page.contains("executor serve") && page.contains("?token=…"), "{path}: {page}");
        assert!(page.contains(r#"<form method="post" action="/login""#), "{path}");
        assert!(!page.contains(r#"action="/tasks/"#), "no button that cannot work: {path}");
    }
    // The stylesheet the login page needs is open.
    assert_eq!(s.get_anonymous("/static/app.css").await.status(), StatusCode::OK);

    // The login form: a wrong token is the login page again; the right one a session.
    let login = |body: String| {
        s.http
            .post(s.url("/login"))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("origin", &s.base)
            .body(body)
            .send()
    };
    let r = login("token=wrong&next=%2Ftasks%2FT1".into()).await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.headers().get(SET_COOKIE).is_none());
    let r = login(format!("token={TOKEN}&next=%2Ftasks%2FT1")).await.unwrap();
    assert_eq!((r.status(), r.headers()[LOCATION].to_str().unwrap()), (StatusCode::SEE_OTHER, "/tasks/T1"));
    let cookie = r.headers()[SET_COOKIE].to_str().unwrap().split(';').next().unwrap().to_string();
    let r = s.http.get(s.url("/tasks/T1")).header("cookie", &cookie).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.text().await.unwrap().contains("secret task text"));
    let r = login(format!("token={TOKEN}&next=%2F%2Fevil.example")).await.unwrap();
    assert_eq!(r.headers()[LOCATION], "/evil.example", "never to another site");

    // The bearer token, or a session, reads; a forged or foreign cookie does not.
    let r = s.http.get(s.url("/metrics")).header("cookie", format!("a=b; {cookie}")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    for forged in ["executor_session=wrong", "executor_session=1.aa.bb", &format!("executor_token={TOKEN}")] {
        let r = s.http.get(s.url("/api/v1/status")).header("cookie", forged).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{forged}");
    }
}

#[tokio::test]
async fn a_host_that_is_not_this_dashboard_is_refused_even_with_the_token() {
    let s = Server::start().await;
    let g = s.add("H1", "rebind me", QueueStatus::AwaitingGo).await;
    let port = s.base.rsplit(':').next().unwrap().to_string();
    let evil = format!("evil.example:{port}");
    // The rebinding page's requests: its own name as Host and Origin.
    let r = s.http.get(s.url("/")).header("host", &evil).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let page = r.text().await.unwrap();
    assert!(!page.contains("name=\"csrf\"") && !page.contains(TOKEN), "{page}");
    let r = s
        .http
        .post(s.url("/api/v1/tasks/H1/approve"))
        .bearer_auth(TOKEN)
        .header("host", &evil)
        .header("origin", format!("http://{evil}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(json_of(r).await["error"].as_str().unwrap().contains("allowed_hosts"));
    let r =
        s.http.get(s.url("/api/v1/status")).bearer_auth(TOKEN).header("host", &evil).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(s.store.task(&g).await.unwrap().status, QueueStatus::AwaitingGo);
    // Loopback names are this dashboard's.
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        let r =
            s.http.get(s.url("/api/v1/status")).bearer_auth(TOKEN).header("host", host).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
    }
}

#[tokio::test]
async fn listed_hosts_are_answered() {
    let db = common::sqlite();
    let mut config = Config::default();
    config.web.allowed_hosts = vec!["box.lan".into()];
    let state = AppState::new(db.open().await, Arc::new(config), TOKEN.to_string(), None);
    let (base, _stop) = web_support::serve(state).await;
    let http = reqwest::Client::new();
    let get = |host: &'static str| {
        http.get(format!("{base}/api/v1/status")).bearer_auth(TOKEN).header("host", host).send()
    };
    assert_eq!(get("box.lan:8370").await.unwrap().status(), StatusCode::OK);
    assert_eq!(get("other.lan:8370").await.unwrap().status(), StatusCode::FORBIDDEN);
}

/// Parses the exposition text: every non-comment line is `name{labels} value`; returns (series, value).
fn parse_metrics(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap_or_else(|| panic!("no value: {l:?}"));
            let name_end = series.find('{').unwrap_or(series.len());
            let name = &series[..name_end];
            assert!(
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "bad name in {l:?}"
            );
            if name_end < series.len() {
                assert!(series.ends_with('}'), "bad labels in {l:?}");
            }
            (series.to_string(), value.parse().unwrap_or_else(|_| panic!("bad value in {l:?}")))
        })
        .collect()
}

#[tokio::test]
async fn metrics_parse_and_count() {
    let s = Server::start().await;
    let a = s.add("M1", "one", QueueStatus::AwaitingGo).await;
    s.add("M2", "two", QueueStatus::AwaitingGo).await;
    s.add("M3", "three", QueueStatus::Skip).await;
    s.store.approve_task(&a, false, Actor::Cli).await.unwrap();
    let run = s.store.create_run_for_task(&a, Actor::Runner).await.unwrap().unwrap();
    let w = s
        .store
        .begin_worker_session(run.id, WorkerKind::Queued, "claude", "h", &Default::default())
        .await
        .unwrap()
        .unwrap();
    s.store
        .end_worker_session(w.id, None, &WorkerEnd::new(executor::domain::EndReason::Finished))
        .await
        .unwrap();
    s.store
        .begin_worker_session(run.id, WorkerKind::InProgress, "claude", "h", &Default::default())
        .await
        .unwrap()
        .unwrap();
    s.store.set_source_failed("inbox", "boom").await.unwrap();
    // box1: one live runner holding the run. `box"2` (a name the format must escape): one runner that
    // met errors and stopped, and a live one after it.
    let ttl = std::time::Duration::from_secs(600);
    for (id, host) in [("box1/42-1", "box1"), ("box\"2/7-1", "box\"2"), ("box\"2/7-2", "box\"2")] {
        let registration =
            RunnerRegistration { id, host, pid: 42, version: "test", machine: "m", ttl, max_workers: 2 };
        s.store.register_runner(&registration).await.unwrap();
    }
    assert!(s.store.claim_run(run.id, "box1/42-1", ttl).await.unwrap());
    s.store.runner_ticked("box\"2/7-1", 2, Some("the forge was down")).await.unwrap();
    s.store.runner_ended("box\"2/7-1").await.unwrap();
    s.store.runner_ticked("box\"2/7-2", 0, None).await.unwrap();
    assert_eq!(s.store.heartbeat("box1/42-1", ttl).await.unwrap(), Heartbeat::Alive { leases: 1 });
    assert_eq!(run.state, RunState::Queued);

    let r = s.get("/metrics").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers().get("content-type").unwrap(), "text/plain; version=0.0.4; charset=utf-8");
    let text = r.text().await.unwrap();
    assert!(text.contains("# TYPE executor_tasks gauge"), "{text}");
    assert!(text.contains("# HELP executor_worker_duration_seconds"), "{text}");
    let samples = parse_metrics(&text);
    let value = |series: &str| {
        samples
            .iter()
            .find(|(s, _)| s == series)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("{series}:\n{text}"))
    };
    assert_eq!(value(r#"executor_tasks{status="approved"}"#), 1.0);
    assert_eq!(value(r#"executor_tasks{status="awaiting_go"}"#), 1.0);
    assert_eq!(value(r#"executor_tasks{status="skip"}"#), 1.0);
    assert_eq!(value(r#"executor_tasks{status="pending"}"#), 0.0);
    assert_eq!(value(r#"executor_runs{state="queued"}"#), 1.0);
    assert_eq!(value(r#"executor_runs{state="pr"}"#), 0.0);
    assert_eq!(value("executor_live_workers"), 1.0);
    assert_eq!(value(r#"executor_worker_duration_seconds_count{kind="queued"}"#), 1.0);
    let secs = value(r#"executor_worker_duration_seconds_sum{kind="queued"}"#);
    assert!((0.0..60.0).contains(&secs), "{secs}");
    assert!(!text.contains(r#"_count{kind="in_progress"}"#), "a live session has no duration yet:\n{text}");
    assert_eq!(value("executor_spend_usd_today"), 0.0);
    assert_eq!(value(r#"executor_runner_ticks_total{host="box1"}"#), 0.0);
    assert_eq!(value(r#"executor_runner_errors_total{host="box1"}"#), 0.0);
    // A host's counters add up its listed runners: the stopped one and the live one.
    assert_eq!(value(r#"executor_runner_ticks_total{host="box\"2"}"#), 2.0);
    assert_eq!(value(r#"executor_runner_errors_total{host="box\"2"}"#), 2.0);
    assert_eq!(value(r#"executor_runner_alive{host="box1",runner="box1/42-1"}"#), 1.0);
    assert_eq!(value(r#"executor_runner_alive{host="box\"2",runner="box\"2/7-1"}"#), 0.0);
    assert_eq!(value(r#"executor_runner_alive{host="box\"2",runner="box\"2/7-2"}"#), 1.0);
    assert_eq!(value(r#"executor_runner_leases{host="box1",runner="box1/42-1"}"#), 1.0);
    assert_eq!(value(r#"executor_runner_leases{host="box\"2",runner="box\"2/7-2"}"#), 0.0);
    let age = value(r#"executor_runner_heartbeat_age_seconds{host="box1",runner="box1/42-1"}"#);
    assert!((0.0..60.0).contains(&age), "{age}");
    assert_eq!(text.matches("executor_runner_alive{").count(), 3, "one per listed runner:\n{text}");

    // The API's status lists the same runners, each with what the store says of it.
    let v = json_of(s.get("/api/v1/status").await).await;
    let runner = |id: &str| {
        v["runners"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("{id}: {v}"))
            .clone()
    };
    assert_eq!(v["runners"].as_array().unwrap().len(), 3, "{v}");
    let held = runner("box1/42-1");
    assert_eq!(
        (held["alive"].as_bool(), held["leases"].as_i64(), held["max_workers"].as_i64()),
        (Some(true), Some(1), Some(2))
    );
    let stopped = runner("box\"2/7-1");
    assert_eq!((stopped["alive"].as_bool(), stopped["end_reason"].as_str()), (Some(false), Some("stopped")));
    assert_eq!(
        (stopped["errors"].as_i64(), stopped["last_error"].as_str()),
        (Some(2), Some("the forge was down"))
    );
    assert_eq!(value("executor_source_errors"), 1.0);
}

fn config_in(dir: &std::path::Path, web: &str) -> std::path::PathBuf {
    let config = dir.join("executor.toml");
    let data = dir.join("data").display().to_string();
    std::fs::write(&config, format!("[paths]\ndata_dir = {data:?}\n\n[web]\n{web}")).unwrap();
    config
}

#[test]
fn serve_refuses_a_non_loopback_bind_without_allow_remote() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path(), "");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_executor"))
        .args(["--config", config.to_str().unwrap(), "serve", "--bind", "0.0.0.0", "--port", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("refusing to bind 0.0.0.0") && stderr.contains("allow_remote"), "{stderr}");
    assert!(!dir.path().join("data").exists(), "nothing is created before the refusal");
}

#[tokio::test]
async fn serve_prints_its_url_once_and_stops_on_sigterm() {
    use tokio::io::AsyncBufReadExt;
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path(), "port = 0\n");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_executor"))
        .args(["--config", config.to_str().unwrap(), "serve"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line())
        .await
        .expect("the URL within 30 s")
        .unwrap()
        .unwrap();
    let url = line.strip_prefix("dashboard: ").unwrap_or_else(|| panic!("{line}"));
    let (base, token) = url.split_once("/?token=").unwrap();
    assert!(base.starts_with("http://127.0.0.1:") && token.len() == 64, "{url}");

    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    // Nothing without logging in; the printed URL logs in.
    let r = http.get(format!("{base}/api/v1/status")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let cookie = web_support::log_in(&http, base, token).await;
    let r = http.get(format!("{base}/api/v1/status")).header("cookie", &cookie).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let page =
        http.get(format!("{base}/")).header("cookie", &cookie).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("Queue") && !page.contains(token), "no page carries the token");
    // The rebinding request of the report: refused, and told in the log without the token.
    let port = base.rsplit(':').next().unwrap();
    let r = http
        .get(format!("{base}/?token={token}"))
        .header("host", format!("evil.example:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let r = http
        .post(format!("{base}/api/v1/tasks/bulk-approve"))
        .bearer_auth(token)
        .json(&json!({"gids": ["X"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);

    let pid = nix::unistd::Pid::from_raw(child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status =
        tokio::time::timeout(std::time::Duration::from_secs(30), child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{status:?}");
    let mut stderr = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).await.unwrap();
    assert!(!stderr.contains(token), "the token never reaches the log: {stderr}");
    let refused = stderr.lines().find(|l| l.contains("evil.example")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(refused.contains("refused GET / from 127.0.0.1:") && refused.contains("403"), "{refused}");
    assert!(stderr.contains("refused GET /api/v1/status") && stderr.contains("401"), "{stderr}");
}

#[tokio::test]
async fn every_error_is_json_on_the_api_and_the_stream_and_styled_on_pages() {
    let s = Server::start().await;
    s.add("E1", "a task", QueueStatus::AwaitingGo).await;
    // 405: a method the route does not take.
    let r = s.http.delete(s.url("/api/v1/tasks/E1")).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert!(r.headers().contains_key("allow"));
    assert!(json_of(r).await["error"].is_string());
    // 413: a body over the limit.
    let big = json!({ "gids": vec!["x".repeat(100); 5000] });
    let r = s.post_bearer("/api/v1/tasks/bulk-approve", big).await;
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(json_of(r).await["error"].is_string());
    // 400 from the live log's stream: its query cannot be read.
    let r = s.get("/sessions/1/log/stream?from=soon").await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(json_of(r).await["error"].is_string());
    // An unknown page, and a method a page does not take: the styled page.
    for r in
        [s.get("/no/such/page").await, s.http.put(s.url("/runs")).bearer_auth(TOKEN).send().await.unwrap()]
    {
        let status = r.status();
        assert!(status == StatusCode::NOT_FOUND || status == StatusCode::METHOD_NOT_ALLOWED, "{status}");
        assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
        let page = r.text().await.unwrap();
        assert!(
            page.contains(r#"href="/static/app.css""#) && page.contains(&status.as_u16().to_string()),
            "{page}"
        );
    }
}

#[tokio::test]
async fn reasons_are_capped_at_the_documented_size() {
    let s = Server::start().await;
    let g = s.add("R1", "skip me", QueueStatus::AwaitingGo).await;
    let long = "x".repeat(executor::web::pages::MAX_REASON + 1);
    let r = s.post_bearer("/api/v1/tasks/R1/skip", json!({ "reason": long })).await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(json_of(r).await["error"].as_str().unwrap().contains("at most 2000 characters"));
    assert_eq!(s.store.task(&g).await.unwrap().status, QueueStatus::AwaitingGo);
    let fits = "y".repeat(executor::web::pages::MAX_REASON);
    let r = s.post_bearer("/api/v1/tasks/R1/skip", json!({ "reason": fits })).await;
    assert_eq!(r.status(), StatusCode::OK);
}
