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

/// The tab's icon, at `/static/favicon.ico` (which the pages name) and at `/favicon.ico`, where browsers
/// look whatever a page says (a 404 there filled the log and the console). A 16×16 PNG in an ICO.
pub(super) async fn favicon() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "image/x-icon")], include_bytes!("../static/favicon.ico").as_slice())
}
