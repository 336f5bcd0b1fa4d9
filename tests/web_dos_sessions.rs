//! Sessions can be ended without changing the token: `POST /logout` ends the browser's own (the
//! cookie no longer admits anyone, even sent again), and `executor serve --revoke-sessions` every one
//! issued before it started, across the restart.

mod common;
mod web_dos_support;
mod web_support;

use executor::config::Config;
use reqwest::StatusCode;
use web_support::Dashboard;

const TOKEN: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

#[tokio::test]
async fn logging_out_ends_the_session_for_good() {
    let db = common::sqlite();
    let dash = Dashboard::start(db.open().await, Config::default(), TOKEN).await.holding(db);
    let page = dash.get_response("/").await;
    assert_eq!(page.status(), StatusCode::OK);
    let page = page.text().await.unwrap();
    assert!(page.contains(r#"<form method="post" action="/logout""#), "every page has the button");

    let out = dash
        .client
        .post(format!("{}/logout", dash.base))
        .header("cookie", &dash.cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), StatusCode::SEE_OTHER);
    let cleared = out.headers()["set-cookie"].to_str().unwrap();
    assert!(cleared.starts_with("executor_session=;") && cleared.contains("Max-Age=0"), "{cleared}");
    // The old cookie, sent again (copied, or a browser that kept it), admits no one.
    assert_eq!(dash.get_response("/").await.status(), StatusCode::UNAUTHORIZED);
}

async fn serve(config: &std::path::Path, extra: &[&str]) -> (tokio::process::Child, String) {
    web_dos_support::serve(config, extra, std::process::Stdio::null()).await
}

#[tokio::test]
async fn serve_with_revoke_sessions_ends_every_earlier_session() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("executor.toml");
    let data = dir.path().join("data").display().to_string();
    std::fs::write(&config, format!("[paths]\ndata_dir = {data:?}\n\n[web]\nport = 0\ntoken = {TOKEN:?}\n"))
        .unwrap();
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let get = |base: String, cookie: String| {
        let client = client.clone();
        async move { client.get(format!("{base}/")).header("cookie", cookie).send().await.unwrap().status() }
    };

    let (mut first, base) = serve(&config, &[]).await;
    let cookie = web_support::log_in(&client, &base, TOKEN).await;
    assert_eq!(get(base.clone(), cookie.clone()).await, StatusCode::OK);
    first.kill().await.unwrap();

    let (mut second, base) = serve(&config, &[]).await;
    assert_eq!(get(base.clone(), cookie.clone()).await, StatusCode::OK, "a restart alone keeps sessions");
    second.kill().await.unwrap();

    let (_third, base) = serve(&config, &["--revoke-sessions"]).await;
    assert_eq!(get(base.clone(), cookie.clone()).await, StatusCode::UNAUTHORIZED, "revoked");
    let fresh = web_support::log_in(&client, &base, TOKEN).await;
    assert_eq!(get(base, fresh).await, StatusCode::OK, "a new login works");
}
