//! "Sign in with GitHub" against a fake GitHub (its OAuth token endpoint and `GET /user`, over real
//! HTTP): the flow's state is checked, the code traded with the client secret, and the browser logged
//! in as the person linked to that GitHub account, whose changes are then theirs; a GitHub user no one
//! is linked to, a forged state, a refused code and an unlinked or revoked person get no session.

mod common;
mod web_support;

use std::sync::Arc;

use axum::extract::Query;
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use executor::config::{Config, GitHubLogin};
use executor::domain::{Actor, By, Role};
use executor::store::Store;
use executor::web::AppState;
use executor::web::person::{new_token, token_sha256};
use reqwest::StatusCode;
use reqwest::redirect::Policy;
use serde_json::{Value, json};

const TOKEN: &str = "github-login-token-0123456789abcdef0123";
const SECRET: &str = "oauth-client-secret";

/// A fake github.com and api.github.com in one: code `code-for-LOGIN` is GitHub user LOGIN's.
async fn fake_github() -> String {
    async fn access_token(Form(form): Form<std::collections::HashMap<String, String>>) -> Json<Value> {
        let ok = form.get("client_id").map(String::as_str) == Some("client-1")
            && form.get("client_secret").map(String::as_str) == Some(SECRET)
            && form.get("redirect_uri").is_some_and(|u| u.ends_with("/login/github/callback"));
        match form.get("code").and_then(|c| c.strip_prefix("code-for-")) {
            Some(login) if ok => {
                Json(json!({"access_token": format!("gho_{login}"), "token_type": "bearer", "scope": ""}))
            }
            _ => Json(
                json!({"error": "bad_verification_code", "error_description": "The code passed is incorrect or expired."}),
            ),
        }
    }
    async fn user(headers: axum::http::HeaderMap) -> Result<Json<Value>, StatusCode> {
        let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("");
        let login = auth.strip_prefix("Bearer gho_").ok_or(StatusCode::UNAUTHORIZED)?;
        Ok(Json(json!({"login": login, "id": 1})))
    }
    async fn authorize(Query(_q): Query<Value>) -> &'static str {
        "GitHub's authorize page"
    }
    let app = Router::new()
        .route("/login/oauth/authorize", get(authorize))
        .route("/login/oauth/access_token", post(access_token))
        .route("/user", get(user));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

struct Site {
    base: String,
    store: Store,
    http: reqwest::Client,
    _stop: tokio::sync::watch::Sender<bool>,
    _db: common::TestDb,
}

async fn site() -> Site {
    let github = fake_github().await;
    let db = common::sqlite();
    let store = db.open().await;
    let mut config = Config::default();
    config.github.api_url = github.clone();
    config.web.github_login = Some(GitHubLogin {
        client_id: "client-1".into(),
        client_secret_env: "UNUSED_IN_THIS_TEST".into(),
        url: github,
    });
    let mut state = AppState::new(store.clone(), Arc::new(config), TOKEN.into(), None);
    state.github_login_secret = Some(Arc::new(SECRET.into()));
    let (base, stop) = web_support::serve(state).await;
    let http = reqwest::Client::builder().redirect(Policy::none()).build().unwrap();
    Site { base, store, http, _stop: stop, _db: db }
}

impl Site {
    /// `GET /login/github`: GitHub's authorize address and the flow's state cookie.
    async fn start(&self) -> (reqwest::Url, String) {
        let r = self.http.get(format!("{}/login/github", self.base)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
        let to = reqwest::Url::parse(r.headers()["location"].to_str().unwrap()).unwrap();
        let cookie = r.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
        (to, cookie)
    }

    /// The browser back from GitHub with `code` and `state`: the status, the session cookie if any, the page.
    async fn back(&self, cookie: &str, code: &str, state: &str) -> (StatusCode, Option<String>, String) {
        let url = format!("{}/login/github/callback?code={code}&state={state}", self.base);
        let r = self.http.get(url).header("cookie", cookie).send().await.unwrap();
        let status = r.status();
        let session = r
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|v| v.starts_with("executor_session="))
            .map(|v| v.split(';').next().unwrap().to_string());
        (status, session, r.text().await.unwrap())
    }

    async fn me(&self, session: &str) -> Value {
        let r =
            self.http.get(format!("{}/api/v1/me", self.base)).header("cookie", session).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        r.json().await.unwrap()
    }
}

async fn person(store: &Store, name: &str, role: Role, github: Option<&str>) {
    let token = new_token().unwrap();
    store.add_user(name, role, &token_sha256(&token), Actor::Cli.into()).await.unwrap();
    if github.is_some() {
        store.set_user_github(name, github, Actor::Cli.into()).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_linked_github_account_signs_in_as_its_person() {
    let s = site().await;
    person(&s.store, "alice", Role::Approver, Some("Alice-GH")).await;

    // The login page offers it.
    let page = s.http.get(format!("{}/queue", s.base)).send().await.unwrap().text().await.unwrap();
    assert!(page.contains(r#"href="/login/github""#), "{page}");

    let (to, cookie) = s.start().await;
    assert_eq!(to.path(), "/login/oauth/authorize");
    let q: std::collections::HashMap<_, _> = to.query_pairs().into_owned().collect();
    assert_eq!(q["client_id"], "client-1");
    assert_eq!(q["redirect_uri"], format!("{}/login/github/callback", s.base));
    let state = q["state"].clone();
    assert!(cookie.ends_with(&state) && state.len() == 32, "{cookie}");

    // GitHub says the code is alice-gh's (logins compare ignoring case): alice's session.
    let (status, session, page) = s.back(&cookie, "code-for-alice-gh", &state).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("Signed in as alice") && page.contains(r#"http-equiv="refresh""#), "{page}");
    let session = session.expect("a session");
    assert_eq!(s.me(&session).await, json!({"name": "alice", "role": "approver"}));
    assert!(!page.contains("gho_") && !page.contains(SECRET), "neither GitHub's token nor the secret");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_session_for_a_stranger_a_forged_state_or_a_bad_code() {
    let s = site().await;
    person(&s.store, "alice", Role::Approver, Some("alice-gh")).await;
    let (to, cookie) = s.start().await;
    let state = to.query_pairs().find(|(k, _)| k == "state").unwrap().1.to_string();

    let (status, session, page) = s.back(&cookie, "code-for-mallory", &state).await;
    assert_eq!((status, session.is_none()), (StatusCode::FORBIDDEN, true));
    assert!(
        page.contains("GitHub user mallory has no login here") && page.contains("--github mallory"),
        "{page}"
    );

    let (status, session, _) = s.back(&cookie, "code-for-alice-gh", "0123456789abcdef0123456789abcdef").await;
    assert_eq!((status, session.is_none()), (StatusCode::FORBIDDEN, true), "another state");
    let (status, session, _) = s.back("", "code-for-alice-gh", &state).await;
    assert_eq!(
        (status, session.is_none()),
        (StatusCode::FORBIDDEN, true),
        "no state cookie: not started here"
    );

    let (status, session, page) = s.back(&cookie, "stolen", &state).await;
    assert_eq!((status, session.is_none()), (StatusCode::BAD_GATEWAY, true));
    assert!(page.contains("The code passed is incorrect or expired"), "{page}");

    // Unlinked, or revoked: GitHub's word no longer logs anyone in.
    s.store.set_user_github("alice", None, By::from(Actor::Cli)).await.unwrap();
    assert_eq!(s.back(&cookie, "code-for-alice-gh", &state).await.0, StatusCode::FORBIDDEN);
    person(&s.store, "bob", Role::Viewer, Some("bob-gh")).await;
    s.store.revoke_user("bob", By::from(Actor::Cli)).await.unwrap();
    assert_eq!(s.back(&cookie, "code-for-bob-gh", &state).await.0, StatusCode::FORBIDDEN);
    let refused = s.store.set_user_github("nobody", Some("x"), By::from(Actor::Cli)).await;
    assert!(refused.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_unless_configured() {
    let db = common::sqlite();
    let store = db.open().await;
    let state = AppState::new(store, Arc::new(Config::default()), TOKEN.into(), None);
    let (base, _stop) = web_support::serve(state).await;
    let http = reqwest::Client::builder().redirect(Policy::none()).build().unwrap();
    assert_eq!(
        http.get(format!("{base}/login/github")).send().await.unwrap().status(),
        StatusCode::NOT_FOUND
    );
    let page = http.get(format!("{base}/queue")).send().await.unwrap().text().await.unwrap();
    assert!(!page.contains("/login/github"), "not offered");
}
