//! The config's secrets never leave in an answer: every page and JSON answer has them replaced, whatever
//! stored text carried them (a review comment quoting a token, task notes, a CI log tail in a snapshot).
//! The live log's stream is not touched here: work logs are redacted when they are written.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use crate::config::Config;
use crate::redact::Redactor;

/// The config's secrets and the dashboard token (the redactor also finds each as a page and a JSON
/// answer write it: a secret with a `/`, a webhook URL, appears in a page as `&#x2f;`).
pub(super) fn answer_redactor(config: &Config, token: &str) -> Redactor {
    Redactor::from_config(config).with([token.to_string()])
}

/// Answers of these types are read whole and redacted.
fn is_redacted(content_type: &str) -> bool {
    ["text/html", "application/json", "text/plain"].iter().any(|t| content_type.starts_with(t))
}

pub(super) async fn redact_answers(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    let content_type =
        response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !is_redacted(content_type) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "the answer could not be read").into_response();
    };
    let text = state.redactor.redact(&String::from_utf8_lossy(&bytes));
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_found_as_a_page_escapes_it() {
        let mut config = Config::default();
        config.notify.webhook_url = "https://hooks.example/T0/x'y".into();
        let r = answer_redactor(&config, "dashboard-token-0123456789abcdef0123");
        let page = "<p>https:&#x2f;&#x2f;hooks.example&#x2f;T0&#x2f;x&#x27;y</p>";
        assert_eq!(r.redact(page), "<p>[REDACTED]</p>");
        assert_eq!(r.redact("token dashboard-token-0123456789abcdef0123"), "token [REDACTED]");
    }
}
