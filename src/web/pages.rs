//! The HTML pages (H-B fills this in).
use axum::Router;

use super::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
}
