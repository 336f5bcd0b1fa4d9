//! The vendored script and style sheet, embedded in the binary (no CDN, no build step).

use axum::http::header;
use axum::response::IntoResponse;

pub(super) async fn script() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], include_str!("../static/app.js"))
}

/// The keyboard shortcuts and their `?` help, apart from `app.js` so that each stays readable.
pub(super) async fn keys() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], include_str!("../static/keys.js"))
}

pub(super) async fn style() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], include_str!("../static/app.css"))
}
