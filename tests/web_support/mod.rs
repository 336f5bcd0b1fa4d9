//! The dashboard served for a test: on 127.0.0.1 at a port of its own, until the returned sender is
//! dropped (or sent `true`); and logging in to it as a browser does. `Dashboard` puts the two together
//! for the tests that speak HTTP to the pages as a logged-in browser would.
#![allow(dead_code)]

use std::sync::Arc;

use executor::config::Config;
use executor::store::Store;
use executor::web::{self, AppState};
use reqwest::StatusCode;
use reqwest::redirect::Policy;

/// Serves `state`; returns the base URL (`http://127.0.0.1:PORT`) and the stop signal.
pub async fn serve(state: AppState) -> (String, tokio::sync::watch::Sender<bool>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let base = format!("http://{}", listener.local_addr().expect("local address"));
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    tokio::spawn(web::serve(listener, state, shutdown));
    (base, stop)
}

/// Opens `{base}/?token=TOKEN` as the printed URL says: returns the session cookie (`name=value`) the
/// answer sets, after checking it is a redirect that drops the token.
pub async fn log_in(client: &reqwest::Client, base: &str, token: &str) -> String {
    let r = client.get(format!("{base}/?token={token}")).send().await.expect("GET ?token=");
    assert_eq!(r.status(), reqwest::StatusCode::SEE_OTHER, "a login redirects");
    assert_eq!(r.headers()["location"], "/", "without the token");
    let set = r.headers()["set-cookie"].to_str().expect("cookie").to_string();
    assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict"), "{set}");
    assert!(!set.contains(token), "the cookie is a session, not the token: {set}");
    set.split(';').next().expect("name=value").to_string()
}

/// The value of a page's first `csrf` field.
pub fn csrf_of(page: &str) -> Option<String> {
    let at = page.find(r#"name="csrf" value=""#)? + r#"name="csrf" value=""#.len();
    let end = at + page[at..].find('"')?;
    Some(page[at..end].to_string())
}

/// A dashboard serving a store until dropped, and a client logged in to it as a browser is: the session
/// cookie the printed URL (`/?token=`) traded for. The client follows no redirect, so a test sees where
/// a form sends the browser. The fields are public for the requests no helper makes (the API with a
/// bearer token, a form posted without the session, an asset without the cookie).
pub struct Dashboard {
    pub base: String,
    pub client: reqwest::Client,
    pub cookie: String,
    _stop: tokio::sync::watch::Sender<bool>,
    _held: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl Dashboard {
    /// Serves `store` with `config` (the pages read a few settings from it), `token` being the one
    /// `executor serve` would print, and logs in with it.
    pub async fn start(store: Store, config: Config, token: &str) -> Dashboard {
        let state = AppState::new(store, Arc::new(config), token.to_string(), None);
        let (base, stop) = serve(state).await;
        let client = reqwest::Client::builder().redirect(Policy::none()).build().expect("client");
        let cookie = log_in(&client, &base, token).await;
        Dashboard { base, client, cookie, _stop: stop, _held: None }
    }

    /// Keeps `what` (a test database, whose directory goes when it is dropped) alive as long as the
    /// dashboard serves from it, so a test holds one value rather than two.
    pub fn holding(mut self, what: impl std::any::Any + Send + Sync) -> Dashboard {
        self._held = Some(Box::new(what));
        self
    }

    /// `GET path` with the session, the answer as it came: for a test that looks at its headers (a
    /// redirect's target) or reads its body as a stream.
    pub async fn get_response(&self, path: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.base))
            .header("cookie", &self.cookie)
            .send()
            .await
            .expect("GET")
    }

    /// `GET path` with the session: the status and the body. A server error's body is printed as well,
    /// since the assertion that fails on the status would not show it.
    pub async fn get(&self, path: &str) -> (StatusCode, String) {
        let response = self.get_response(path).await;
        let status = response.status();
        let body = response.text().await.expect("body");
        if status.is_server_error() {
            eprintln!("GET {path}: {status}\n{body}");
        }
        (status, body)
    }

    /// `POST path` as a page's form sends it: the session cookie, the dashboard's own origin (the CSRF
    /// check wants both) and `body`, the url-encoded fields, the page's `csrf` among them. The caller
    /// builds the body (`form`), so a test can send exactly the fields a page would.
    pub async fn post_form(&self, path: &str, body: String) -> reqwest::Response {
        self.client
            .post(format!("{}{path}", self.base))
            .header("cookie", &self.cookie)
            .header("origin", &self.base)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .expect("POST")
    }
}

/// `fields` url-encoded as a browser encodes a form: `name=value` pairs joined by `&`, every byte but
/// letters and digits percent-encoded.
pub fn form(fields: &[(&str, &str)]) -> String {
    use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
    fields
        .iter()
        .map(|(k, v)| format!("{k}={}", utf8_percent_encode(v, NON_ALPHANUMERIC)))
        .collect::<Vec<_>>()
        .join("&")
}
