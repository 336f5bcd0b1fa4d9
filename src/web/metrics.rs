//! `/metrics` in Prometheus text format (H-A fills this in).
use axum::extract::State;

use super::AppState;

pub async fn metrics(State(_state): State<AppState>) -> String {
    String::new()
}
