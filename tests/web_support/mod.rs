//! The dashboard served for a test: on 127.0.0.1 at a port of its own, until the returned sender is
//! dropped (or sent `true`).

use executor::web::{self, AppState};

/// Serves `state`; returns the base URL (`http://127.0.0.1:PORT`) and the stop signal.
pub async fn serve(state: AppState) -> (String, tokio::sync::watch::Sender<bool>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let base = format!("http://{}", listener.local_addr().expect("local address"));
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    tokio::spawn(web::serve(listener, state, shutdown));
    (base, stop)
}
