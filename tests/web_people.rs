//! People on the dashboard, over real HTTP on SQLite and PostgreSQL: each person logs in with their own
//! URL (`executor users add`), every change they make is recorded in their name, their role is enforced
//! on every page form and API call (a viewer reads, an approver acts, an admin manages people), a revoked
//! person is refused at once, sessions too, and Needs you lists what changed since each person last
//! marked it as seen.

mod common;
mod web_support;

use common::TestDb;
use executor::config::Config;
use executor::domain::{Actor, By, QueueStatus, Role, TaskGid};
use executor::store::{EventFilter, NewTask, Store};
use executor::web::person::{new_token, token_sha256};
use reqwest::StatusCode;
use serde_json::{Value, json};
use web_support::{Dashboard, csrf_of, form, log_in};

on_both_databases!(
    an_approver_approves_and_a_viewer_is_refused_each_named,
    a_revoked_person_is_refused_at_once_sessions_and_tokens,
    only_an_admin_manages_people,
    needs_you_lists_what_changed_since_each_person_looked,
);

const TOKEN: &str = "people-token-0123456789abcdef0123456789";

fn gid(s: &str) -> TaskGid {
    TaskGid::parse(s).expect("gid")
}

/// Adds `name` with `role`: their personal token.
async fn person(store: &Store, name: &str, role: Role) -> String {
    let token = new_token().expect("token");
    store.add_user(name, role, &token_sha256(&token), Actor::Cli.into()).await.expect("add user");
    token
}

/// A task awaiting a human's go.
async fn awaiting(store: &Store, name: &str) {
    let t = NewTask { description: Some(format!("task {name}")), ..Default::default() };
    store.upsert_task(&gid(name), &t, Actor::Cli).await.expect("add");
    store.set_task_status(&gid(name), QueueStatus::AwaitingGo, Actor::Analyzer, None).await.expect("triaged");
}

/// A browser of one person on the dashboard `d` serves: their session cookie.
struct Browser<'a> {
    d: &'a Dashboard,
    cookie: String,
}

impl<'a> Browser<'a> {
    async fn of(d: &'a Dashboard, token: &str) -> Browser<'a> {
        Browser { d, cookie: log_in(&d.client, &d.base, token).await }
    }

    async fn get(&self, path: &str) -> (StatusCode, String) {
        let r =
            self.d.client.get(format!("{}{path}", self.d.base)).header("cookie", &self.cookie).send().await;
        let r = r.expect("GET");
        let status = r.status();
        (status, r.text().await.expect("body"))
    }

    /// Posts `action`'s form as `page` carries it (its csrf), with `extra` fields.
    async fn submit(&self, page: &str, action: &str, extra: &[(&str, &str)]) -> (StatusCode, String) {
        let (_, html) = self.get(page).await;
        let csrf = csrf_of(&html).expect("a csrf field");
        let mut fields = vec![("csrf", csrf.as_str()), ("back", "task")];
        fields.extend_from_slice(extra);
        let r = self
            .d
            .client
            .post(format!("{}{action}", self.d.base))
            .header("cookie", &self.cookie)
            .header("origin", &self.d.base)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(&fields))
            .send()
            .await
            .expect("POST");
        let status = r.status();
        (status, r.text().await.expect("body"))
    }
}

/// An API call with `token` as the bearer.
async fn api(
    d: &Dashboard,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = d.client.request(method, format!("{}/api/v1{path}", d.base)).bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let r = request.send().await.expect("API call");
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn task_events(store: &Store, name: &str) -> Vec<executor::store::Event> {
    store.events(&EventFilter { task_gid: Some(gid(name)), ..Default::default() }).await.expect("events")
}

async fn an_approver_approves_and_a_viewer_is_refused_each_named(db: TestDb) {
    let store = db.open().await;
    let alice = person(&store, "alice", Role::Approver).await;
    let victor = person(&store, "victor", Role::Viewer).await;
    awaiting(&store, "t1").await;
    awaiting(&store, "t2").await;
    let d = Dashboard::start(store.clone(), Config::default(), TOKEN).await.holding(db);
    let (a, v) = (Browser::of(&d, &alice).await, Browser::of(&d, &victor).await);

    // Each page names who is at it.
    let (status, page) = v.get("/tasks/t1").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains(r#"<span class="me">victor <span class="role">viewer</span>"#), "{page}");
    assert!(page.contains(r#"id="viewer-note""#), "a viewer is told what they may do");
    assert!(!a.get("/tasks/t1").await.1.contains(r#"id="viewer-note""#));

    // The viewer's approval is refused, saying why and who can change it; nothing moves.
    let (status, refused) = v.submit("/tasks/t1", "/tasks/t1/approve", &[]).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert!(
        refused.contains("victor is a viewer") && refused.contains("executor users role victor approver"),
        "{refused}"
    );
    assert_eq!(store.task(&gid("t1")).await.unwrap().status, QueueStatus::AwaitingGo);
    let (status, _) = api(&d, &victor, reqwest::Method::POST, "/tasks/t1/approve", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "the API enforces the role too");

    // The approver's goes through, in her name: the history, and the task page.
    let (status, _) = a.submit("/tasks/t1", "/tasks/t1/approve", &[]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(store.task(&gid("t1")).await.unwrap().status, QueueStatus::Approved);
    let last = task_events(&store, "t1").await.pop().expect("an event");
    assert_eq!((last.actor.as_str(), last.actor_id.as_deref()), ("web", Some("alice")));
    let (_, page) = v.get("/tasks/t1").await;
    assert!(page.contains("alice (web)"), "the task page names her:\n{page}");

    // Her bearer token acts in her name as well; the viewer's reads.
    let (status, me) = api(&d, &alice, reqwest::Method::GET, "/me", None).await;
    assert_eq!((status, me), (StatusCode::OK, json!({"name": "alice", "role": "approver"})));
    let (status, _) = api(&d, &victor, reqwest::Method::GET, "/tasks/t2", None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) =
        api(&d, &alice, reqwest::Method::POST, "/tasks/t2/skip", Some(json!({"reason": "not now"}))).await;
    assert_eq!(status, StatusCode::OK);
    let last = task_events(&store, "t2").await.pop().expect("an event");
    assert_eq!((last.to_state.as_deref(), last.actor_id.as_deref()), (Some("skip"), Some("alice")));

    // The dashboard token's holder is still `web`, unnamed.
    let (status, _) = api(&d, TOKEN, reqwest::Method::POST, "/tasks/t2/requeue", None).await;
    assert_eq!(status, StatusCode::OK);
    let last = task_events(&store, "t2").await.pop().expect("an event");
    assert_eq!((last.actor.as_str(), last.actor_id), ("web", None));
}

async fn a_revoked_person_is_refused_at_once_sessions_and_tokens(db: TestDb) {
    let store = db.open().await;
    let alice = person(&store, "alice", Role::Approver).await;
    let d = Dashboard::start(store.clone(), Config::default(), TOKEN).await.holding(db);
    let a = Browser::of(&d, &alice).await;
    assert_eq!(a.get("/").await.0, StatusCode::OK);

    store.revoke_user("alice", By::person(Actor::Cli, "root")).await.expect("revoke");
    let (status, page) = a.get("/").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "her open session ends");
    assert!(page.contains("revoked"), "{page}");
    assert_eq!(api(&d, &alice, reqwest::Method::GET, "/me", None).await.0, StatusCode::UNAUTHORIZED);
    let r = d.client.get(format!("{}/?token={alice}", d.base)).send().await.expect("login");
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "her login URL no longer logs in");

    // The name may be given again, with a new token; the old one stays dead.
    let again = person(&store, "alice", Role::Viewer).await;
    assert_eq!(api(&d, &again, reqwest::Method::GET, "/me", None).await.1["role"], "viewer");
    assert_eq!(api(&d, &alice, reqwest::Method::GET, "/me", None).await.0, StatusCode::UNAUTHORIZED);
}

async fn only_an_admin_manages_people(db: TestDb) {
    let store = db.open().await;
    let root = person(&store, "root", Role::Admin).await;
    let alice = person(&store, "alice", Role::Approver).await;
    let d = Dashboard::start(store.clone(), Config::default(), TOKEN).await.holding(db);

    let (status, _) = api(&d, &alice, reqwest::Method::GET, "/users", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "an approver does not see the list of people");
    let (status, body) =
        api(&d, &alice, reqwest::Method::POST, "/users", Some(json!({"name": "mallory", "role": "admin"})))
            .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "nor add anyone: {body}");

    let (status, added) =
        api(&d, &root, reqwest::Method::POST, "/users", Some(json!({"name": "bob", "role": "viewer"}))).await;
    assert_eq!(status, StatusCode::OK, "{added}");
    let bob = added["token"].as_str().expect("the token, shown once").to_string();
    assert!(added["login_url"].as_str().unwrap().ends_with(&format!("/?token={bob}")));
    assert_eq!(
        api(&d, &bob, reqwest::Method::GET, "/me", None).await.1,
        json!({"name": "bob", "role": "viewer"})
    );
    let (status, listed) = api(&d, &root, reqwest::Method::GET, "/users", None).await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<&str> = listed.as_array().unwrap().iter().filter_map(|u| u["name"].as_str()).collect();
    assert_eq!(names, ["alice", "bob", "root"]);
    assert!(
        !listed.to_string().contains(&bob) && !listed.to_string().contains("token"),
        "no token is listed"
    );

    let (status, _) =
        api(&d, &root, reqwest::Method::PUT, "/users/bob/role", Some(json!({"role": "approver"}))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(api(&d, &bob, reqwest::Method::GET, "/me", None).await.1["role"], "approver");
    let (status, body) =
        api(&d, &root, reqwest::Method::POST, "/users", Some(json!({"name": "no body"}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (status, _) = api(&d, &root, reqwest::Method::POST, "/users/bob/revoke", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(api(&d, &bob, reqwest::Method::GET, "/me", None).await.0, StatusCode::UNAUTHORIZED);

    // Who let whom in, in the history.
    let events = store.events(&EventFilter::default()).await.unwrap();
    let said: Vec<String> =
        events.iter().filter_map(|e| Some(format!("{}: {}", e.who(), e.reason.as_ref()?))).collect();
    for line in [
        "root (web): bob may use the dashboard as viewer",
        "root (web): bob is now approver (was viewer)",
        "root (web): bob may no longer use the dashboard",
    ] {
        assert!(said.iter().any(|s| s == line), "{line} in {said:#?}");
    }
}

async fn needs_you_lists_what_changed_since_each_person_looked(db: TestDb) {
    let store = db.open().await;
    let alice = person(&store, "alice", Role::Approver).await;
    let bob = person(&store, "bob", Role::Approver).await;
    awaiting(&store, "t1").await;
    let d = Dashboard::start(store.clone(), Config::default(), TOKEN).await.holding(db);
    let (a, b) = (Browser::of(&d, &alice).await, Browser::of(&d, &bob).await);

    let (_, page) = a.get("/").await;
    assert!(page.contains(r#"id="since-looked""#) && page.contains("Mark this page as seen"), "{page}");
    let (status, _) = a.submit("/", "/looked", &[("back", "needs")]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, page) = a.get("/").await;
    assert!(page.contains("Since you last looked <small>0</small>"), "{page}");

    // Bob approves: Alice sees it, named; Bob, who never marked, is asked to.
    let (status, _) = b.submit("/tasks/t1", "/tasks/t1/approve", &[]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, page) = a.get("/").await;
    let section = &page[page.find(r#"id="since-looked""#).unwrap()..];
    assert!(section.contains("Since you last looked <small>1</small>"), "{section}");
    assert!(section.contains("bob (web)") && section.contains("awaiting_go → approved"), "{section}");
    let (_, page) = b.get("/").await;
    assert!(page.contains("Mark this page as seen"), "{page}");

    // The token's holder has no name to keep a mark for: no section.
    let (_, page) = d.get("/").await;
    assert!(!page.contains(r#"id="since-looked""#));
    let (status, body) = api(&d, TOKEN, reqwest::Method::POST, "/looked", None).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (status, body) = api(&d, &bob, reqwest::Method::POST, "/looked", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, page) = b.get("/").await;
    assert!(page.contains("Since you last looked <small>0</small>"), "{page}");
}
