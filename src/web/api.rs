//! `/api/v1/`: the JSON API (H-A fills this in).
use axum::Router;

use super::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
}
