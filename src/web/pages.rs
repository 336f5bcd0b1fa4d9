//! The HTML pages: the queue, a task, the runs board, a run, a worker's live log and the status.
//!
//! Server-rendered with minijinja, every value auto-escaped (`.html` templates): no template marks
//! anything derived from task, comment or log text as safe. The pages work without JavaScript;
//! `/static/app.js` only follows the live log and selects all rows. Reads are a fixed number of
//! queries per page (never one per row); writes go through the store as `Actor::Web`.

mod assets;
mod detail;
mod forms;
mod log;
mod queue;
mod runs;
mod status;

use std::sync::OnceLock;

use axum::Router;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use chrono::{DateTime, Utc};
use minijinja::{AutoEscape, Environment};

use super::AppState;
use crate::store::StoreError;

/// Every page and form route (the security layer wraps them in `web::router`).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(queue::page))
        .route("/tasks/bulk-approve", post(forms::bulk_approve))
        .route("/tasks/{gid}", get(detail::task))
        .route("/tasks/{gid}/approve", post(forms::approve))
        .route("/tasks/{gid}/skip", post(forms::skip))
        .route("/runs", get(runs::board))
        .route("/runs/{id}", get(detail::run))
        .route("/sessions/{id}/log", get(log::page))
        .route("/sessions/{id}/log/stream", get(log::stream))
        .route("/status", get(status::page))
        .route("/static/app.js", get(assets::script))
        .route("/static/app.css", get(assets::style))
}

/// The token a form proves itself with (its hidden `csrf` field).
pub(crate) use super::auth::csrf_token;

/// The templates, parsed once. `.html` templates escape every value for HTML.
fn templates() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        env.set_auto_escape_callback(|name| {
            if name.ends_with(".html") { AutoEscape::Html } else { AutoEscape::None }
        });
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        for (name, text) in [
            ("base.html", include_str!("templates/base.html")),
            ("queue.html", include_str!("templates/queue.html")),
            ("task.html", include_str!("templates/task.html")),
            ("runs.html", include_str!("templates/runs.html")),
            ("run.html", include_str!("templates/run.html")),
            ("log.html", include_str!("templates/log.html")),
            ("status.html", include_str!("templates/status.html")),
            ("error.html", include_str!("templates/error.html")),
            ("events.html", include_str!("templates/events.html")),
        ] {
            // The templates are part of the binary: one that does not parse fails every test at once.
            if let Err(e) = env.add_template(name, text) {
                tracing::error!("template {name} does not parse: {e}");
            }
        }
        env
    })
}

/// Renders a page, or the error page saying why it could not be rendered.
fn render(name: &str, context: impl serde::Serialize) -> Result<Html<String>, PageError> {
    let template = templates().get_template(name)?;
    Ok(Html(template.render(context)?))
}

/// Why a page could not be shown; rendered as a small HTML page with the matching status.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PageError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Forbidden(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot render the page: {0}")]
    Template(#[from] minijinja::Error),
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let status = match &self {
            PageError::NotFound(_)
            | PageError::Store(StoreError::UnknownTask(_) | StoreError::UnknownRun(_)) => {
                StatusCode::NOT_FOUND
            }
            PageError::BadRequest(_) => StatusCode::BAD_REQUEST,
            PageError::Forbidden(_) => StatusCode::FORBIDDEN,
            PageError::Store(StoreError::Illegal(_) | StoreError::Refused(_) | StoreError::Conflict(_)) => {
                StatusCode::CONFLICT
            }
            PageError::Store(_) | PageError::Template(_) => {
                tracing::error!("dashboard page failed: {self}");
                StatusCode::INTERNAL_SERVER_ERROR
            }
        };
        let message = self.to_string();
        let body = templates()
            .get_template("error.html")
            .and_then(|t| t.render(minijinja::context! { nav => "", status => status.as_u16(), message }))
            .unwrap_or_else(|_| "error".to_string());
        (status, Html(body)).into_response()
    }
}

/// "5m ago", "in 2h": how long ago `t` was, for humans scanning a page.
fn ago(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let secs = (now - t).num_seconds();
    let (n, future) = if secs < 0 { (-secs, true) } else { (secs, false) };
    let span = match n {
        0..60 => format!("{n}s"),
        60..3600 => format!("{}m", n / 60),
        3600..86400 => format!("{}h", n / 3600),
        _ => format!("{}d", n / 86400),
    };
    if future { format!("in {span}") } else { format!("{span} ago") }
}

/// At most `max` characters of `text`'s first line, with an ellipsis when cut.
fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    short(line, max)
}

/// At most `max` characters of `text`, with an ellipsis when cut.
fn short(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Dollars as "$1.23" ("~$1.23" when some of it is executor's estimate).
fn money(usd: f64, estimated: bool) -> String {
    format!("{}${usd:.2}", if estimated { "~" } else { "" })
}

/// Characters a query value keeps as they are: letters, digits and `-._~` (RFC 3986 unreserved).
const QUERY_VALUE: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// `s` percent-encoded for a query string value.
fn encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, QUERY_VALUE).to_string()
}

/// A link target only for http(s) URLs: anything else (`javascript:`, `data:`) is shown as text.
fn web_link(url: Option<&str>) -> Option<String> {
    let url = url?;
    let lower = url.to_ascii_lowercase();
    (lower.starts_with("https://") || lower.starts_with("http://")).then(|| url.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_template_parses() {
        for name in [
            "base.html",
            "queue.html",
            "task.html",
            "runs.html",
            "run.html",
            "log.html",
            "status.html",
            "error.html",
            "events.html",
        ] {
            if let Err(e) = super::templates().get_template(name) {
                panic!("{name}: {e:#}");
            }
        }
    }

    #[test]
    fn the_error_page_renders() {
        let t = super::templates().get_template("error.html").unwrap();
        let page = t.render(minijinja::context! { nav => "", status => 404, message => "<b>" }).unwrap();
        assert!(page.contains("&lt;b&gt;"), "{page}");
    }
}
