//! The token, same-origin checks and security headers (H-A fills this in).
use axum::Router;

use super::AppState;

/// Wraps every route with the security layer.
pub fn protect(routes: Router<AppState>, _state: AppState) -> Router<AppState> {
    routes
}
