//! The dashboard served for a test: on 127.0.0.1 at a port of its own, until the returned sender is
//! dropped (or sent `true`); and logging in to it as a browser does.
#![allow(dead_code)]

use executor::web::{self, AppState};

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
