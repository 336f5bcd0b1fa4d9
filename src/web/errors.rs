//! Every error in the shape its caller reads: `{"error": …}` for the API, `/metrics` and the live log's
//! stream, the styled error page for the rest. axum's own refusals (405 for a method a route does not
//! take, 413 for a body over the limit, 400 for a query it cannot read, an unknown route) are plain text
//! or empty; they are turned into those shapes here.

use axum::extract::Request;
use axum::http::{StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::auth::Kind;

/// The most of a plain error's text kept as its message.
const MESSAGE_LIMIT: usize = 4096;

/// An unknown route.
pub(super) async fn not_found(uri: Uri) -> Response {
    let message = "no such page".to_string();
    match Kind::of(uri.path()) {
        Kind::Json => {
            (StatusCode::NOT_FOUND, axum::Json(serde_json::json!({ "error": message }))).into_response()
        }
        Kind::Page => super::pages::error_page(StatusCode::NOT_FOUND, &message),
    }
}

/// Reshapes an error answer that is neither JSON nor HTML.
pub(super) async fn shape(req: Request, next: Next) -> Response {
    let kind = Kind::of(req.uri().path());
    let response = next.run(req).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let content_type =
        response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if content_type.starts_with("application/json") || content_type.starts_with("text/html") {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, MESSAGE_LIMIT)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let message =
        if text.is_empty() { status.canonical_reason().unwrap_or("error").to_lowercase() } else { text };
    let mut shaped = match kind {
        Kind::Json => (status, axum::Json(serde_json::json!({ "error": message }))).into_response(),
        Kind::Page => super::pages::error_page(status, &message),
    };
    // What a 405 allows stays said.
    if let Some(allow) = parts.headers.get(header::ALLOW) {
        shaped.headers_mut().insert(header::ALLOW, allow.clone());
    }
    shaped
}
