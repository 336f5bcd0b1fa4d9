//! The dashboard: `executor serve`, a local web page to triage and approve tasks, watch runs and follow
//! live worker logs, with a JSON API under `/api/v1/` and Prometheus metrics at `/metrics`.
//!
//! Server-rendered (minijinja, auto-escaping every value) with no front-end build step: one small
//! vendored script (`static/app.js`) enhances the pages, which work without it. Reads go through the
//! store's listing operations (one query per page, never one per row); writes go through the same
//! store operations as the CLI, as `Actor::Web`.
//!
//! Security: binds to loopback unless the config allows more; every state-changing request needs the
//! dashboard token and a same-origin request (see `auth`); every response carries a
//! Content-Security-Policy that forbids inline script.
//!
//! Architecture invariant: like `cli`, nothing depends on `web`.

pub mod api;
pub mod auth;
pub mod live_log;
pub mod metrics;
pub mod pages;
mod state;

pub use state::AppState;

use axum::Router;

/// Every route: the pages, the JSON API, the metrics, behind the security layer.
pub fn router(state: AppState) -> Router {
    let routes = Router::new()
        .merge(pages::routes())
        .nest("/api/v1", api::routes())
        .route("/metrics", axum::routing::get(metrics::metrics));
    auth::protect(routes, state.clone()).with_state(state)
}

/// Serves until `shutdown` becomes true.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(async move {
            while !*shutdown.borrow() {
                if shutdown.changed().await.is_err() {
                    break;
                }
            }
        })
        .await
}
