//! The dashboard: `executor serve`, a local web page that opens on what needs a human ("Needs you"), to
//! triage and approve tasks, act on runs as the CLI does, watch runs and follow live worker logs, with
//! pages that update as things change, a JSON API under `/api/v1/` and Prometheus metrics at `/metrics`.
//!
//! Server-rendered (minijinja, auto-escaping every value) with no front-end build step: one small
//! vendored script (`static/app.js`) enhances the pages, which work without it. Reads go through the
//! store's listing operations (one query per page, never one per row); writes go through the same
//! store operations as the CLI, as `Actor::Web`.
//!
//! Security: binds to loopback unless the config allows more; answers only requests addressed to a
//! loopback name or a listed host (`host`); every request needs a session or the token, every change
//! a same-origin request with the session's CSRF value (`auth`, `session`); every response carries a
//! Content-Security-Policy that forbids inline script; idle connections cannot exhaust it (`server`);
//! no answer carries one of the config's secrets (`redaction`).
//!
//! Architecture invariant: like `cli`, nothing depends on `web`.

pub mod api;
pub mod auth;
pub mod charts;
pub mod comments;
mod csv;
mod errors;
mod github_login;
pub mod host;
pub mod insights;
pub mod live_log;
pub mod metrics;
pub mod pages;
pub mod person;
mod redaction;
mod refusal_log;
pub mod server;
pub mod session;
mod state;
pub mod task_view;
pub mod webhooks;

pub use state::AppState;

use axum::Router;
use axum::extract::DefaultBodyLimit;

/// The largest request body any route reads: a bulk approval of 1,000 gids fits many times over.
pub const BODY_LIMIT: usize = 256 * 1024;

/// Every route: the pages, the JSON API, the metrics, behind the security layer.
pub fn router(state: AppState) -> Router {
    let routes = Router::new()
        .merge(pages::routes())
        .nest("/api/v1", api::routes())
        .route("/metrics", axum::routing::get(metrics::metrics))
        .route("/login/github", axum::routing::get(github_login::start))
        .route("/login/github/callback", axum::routing::get(github_login::callback))
        .fallback(errors::not_found)
        .layer(axum::middleware::from_fn(errors::shape))
        .layer(axum::middleware::from_fn_with_state(state.clone(), redaction::redact_answers))
        .layer(DefaultBodyLimit::max(BODY_LIMIT));
    // The webhook receiver is beside the security layer, not in it: GitHub has no session and no
    // token; its signature is checked instead (see `webhooks`).
    Router::new().merge(webhooks::routes()).merge(auth::protect(routes, state.clone())).with_state(state)
}

/// Serves until `shutdown` becomes true, with the connection limits of `[web]`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> std::io::Result<()> {
    let limits = server::Limits::of(&state.config.web);
    let known = state.clone();
    let trust: server::Trust = std::sync::Arc::new(move |headers: &axum::http::HeaderMap| {
        auth::authenticated(&known, headers, chrono::Utc::now().timestamp()).is_some()
    });
    server::serve(listener, router(state), limits, trust, shutdown).await
}
