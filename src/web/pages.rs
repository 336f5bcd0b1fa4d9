//! The HTML pages: "Needs you" (the default view), the queue, a task, the runs board, a run, a worker's
//! live log and the status.
//!
//! Server-rendered with minijinja, every value auto-escaped (`.html` templates): no template marks
//! anything derived from task, comment or log text as safe. The pages work without JavaScript;
//! `/static/app.js` only follows the live log, refreshes live pages and selects all rows, and
//! `/static/keys.js` adds keyboard shortcuts (shown on `?`). Reads are a fixed number of
//! queries per page (never one per row); writes go through the store as `Actor::Web`.

mod actions;
mod asks;
mod assets;
mod detail;
mod forms;
mod insights;
mod live;
mod log;
mod looked;
mod needs;
mod pr_summary;
mod queue;
mod run_page;
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
use super::session::Auth;
use crate::store::StoreError;

/// Every page and form route (the security layer wraps them in `web::router`).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(needs::page))
        .route("/queue", get(queue::page))
        .route("/tasks/bulk-approve", post(forms::bulk_approve))
        .route("/tasks/bulk-skip", post(forms::bulk_skip))
        .route("/tasks/{gid}", get(detail::task))
        .route("/tasks/{gid}/approve", post(forms::approve))
        .route("/tasks/{gid}/skip", post(forms::skip))
        .route("/tasks/{gid}/requeue", post(actions::requeue))
        .route("/tasks/{gid}/retry", post(actions::retry))
        .route("/tasks/{gid}/plan", post(asks::task_plan))
        .route("/runs", get(runs::board))
        .route("/runs/{id}", get(run_page::page))
        .route("/runs/{id}/resume", post(actions::resume))
        .route("/runs/{id}/abandon", post(actions::abandon))
        .route("/runs/{id}/plan/approve", post(asks::approve_plan))
        .route("/runs/{id}/plan/revise", post(asks::revise_plan))
        .route("/runs/{id}/answer", post(asks::answer))
        .route("/runs/{id}/comments", post(asks::comment))
        .route("/notices/{id}/read", post(actions::notice_read))
        .route("/sources/dismiss", post(actions::source_dismiss))
        .route("/looked", post(looked::mark))
        .route("/sessions/{id}/log", get(log::page))
        .route("/sessions/{id}/log/stream", get(log::stream))
        .route("/status", get(status::page))
        .route("/insights", get(insights::page))
        .route("/changes", get(live::changes))
        .route("/needs-count", get(live::needs_count))
        .route("/static/app.js", get(assets::script))
        .route("/static/keys.js", get(assets::keys))
        .route("/static/app.css", get(assets::style))
        .route("/static/favicon.ico", get(assets::favicon))
        .route("/favicon.ico", get(assets::favicon))
}

/// The most characters of a reason (a skip's) the pages and the API take; a longer one is refused.
pub const MAX_REASON: usize = 2000;

/// The most characters of an answer to a worker's question, or of the changes asked of a plan, the pages
/// and the API take; a longer one is refused.
pub const MAX_ANSWER: usize = 20_000;

/// The most characters of a history line's reason or a comment a page shows.
const SHOWN_TEXT: usize = 2000;

/// A page's flash message, shown only when the server signed it for this session (see `session`): a
/// link with `?flash=…` or `?error=…` alone shows nothing.
#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct FlashQuery {
    flash: Option<String>,
    error: Option<String>,
    sig: Option<String>,
}

impl FlashQuery {
    /// (flash, error), whichever the signature vouches for.
    fn verified(&self, state: &AppState, auth: &Auth) -> (Option<String>, Option<String>) {
        let sig = self.sig.as_deref().unwrap_or("");
        let check = |kind: &str, text: &Option<String>| {
            text.as_ref().filter(|t| state.keys.flash_ok(auth, kind, t, sig)).cloned()
        };
        (check("flash", &self.flash), check("error", &self.error))
    }
}

/// Characters that reorder the text around them (bidirectional embeddings, overrides and isolates, and
/// the marks): "evil\u{202e}exe.txt" would read as "eviltxt.exe". Pages show them as a visible code.
fn is_bidi_control(c: char) -> bool {
    crate::redact::is_bidi_control(c)
}

/// `text` with every bidirectional control written out as `[U+202E]`.
pub(crate) fn show_bidi(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_bidi_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.chars()
            .map(|c| if is_bidi_control(c) { format!("[U+{:04X}]", c as u32) } else { c.to_string() })
            .collect(),
    )
}

/// A styled error page with `status`.
pub(crate) fn error_page(status: StatusCode, message: &str) -> Response {
    let body = templates()
        .get_template("error.html")
        .and_then(|t| t.render(minijinja::context! { nav => "", status => status.as_u16(), message }))
        .unwrap_or_else(|_| "error".to_string());
    (status, Html(body)).into_response()
}

/// The login page: why, the URL to open (`executor serve` prints it), and a form for the token that
/// comes back to `path`.
pub(crate) fn login_page(status: StatusCode, why: &str, host: &str, path: &str, github: bool) -> Response {
    let body = templates()
        .get_template("login.html")
        .and_then(|t| {
            t.render(minijinja::context! {
                nav => "", why, host, github, next => if path == "/login" { "/" } else { path },
            })
        })
        .unwrap_or_else(|_| "log in: open the URL `executor serve` printed".to_string());
    (status, Html(body)).into_response()
}

/// The templates, parsed once. `.html` templates escape every value for HTML.
fn templates() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        env.set_auto_escape_callback(|name| {
            if name.ends_with(".html") { AutoEscape::Html } else { AutoEscape::None }
        });
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        // Every value a page shows has its bidirectional controls made visible, then is escaped.
        env.set_formatter(|out, state, value| {
            match value.as_str() {
                Some(text) if text.chars().any(is_bidi_control) => {
                    let text = show_bidi(text).into_owned();
                    // A macro's output is already markup: it keeps being so.
                    let shown = if value.is_safe() {
                        minijinja::Value::from_safe_string(text)
                    } else {
                        minijinja::Value::from(text)
                    };
                    minijinja::escape_formatter(out, state, &shown)
                }
                _ => minijinja::escape_formatter(out, state, value),
            }
        });
        for (name, text) in [
            ("base.html", include_str!("templates/base.html")),
            ("needs.html", include_str!("templates/needs.html")),
            ("queue.html", include_str!("templates/queue.html")),
            ("task.html", include_str!("templates/task.html")),
            ("runs.html", include_str!("templates/runs.html")),
            ("run.html", include_str!("templates/run.html")),
            ("log.html", include_str!("templates/log.html")),
            ("status.html", include_str!("templates/status.html")),
            ("insights.html", include_str!("templates/insights.html")),
            ("error.html", include_str!("templates/error.html")),
            ("events.html", include_str!("templates/events.html")),
            ("login.html", include_str!("templates/login.html")),
        ] {
            // The templates are part of the binary: one that does not parse fails every test at once.
            if let Err(e) = env.add_template(name, text) {
                // The unit tests say why, where the pages would only say the template is missing.
                #[cfg(test)]
                panic!("template {name} does not parse: {e:#}");
                #[cfg(not(test))]
                tracing::error!("template {name} does not parse: {e}");
            }
        }
        env
    })
}

/// Renders a page, or the error page saying why it could not be rendered. Every page's header names the
/// person at it (`me`), and whether they may act (`me.acts`: an approver or an admin).
fn render(name: &str, context: impl serde::Serialize) -> Result<Html<String>, PageError> {
    let template = templates().get_template(name)?;
    let me = super::person::at_page().map(|p| {
        minijinja::context! {
            name => p.shown(), role => p.role.as_str(), acts => p.role.allows(crate::domain::Role::Approver),
        }
    });
    Ok(Html(template.render(minijinja::context! { me, ..minijinja::Value::from_serialize(&context) })?))
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
            | PageError::Store(
                StoreError::UnknownTask(_) | StoreError::UnknownRun(_) | StoreError::UnknownNotice(_),
            ) => StatusCode::NOT_FOUND,
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
        error_page(status, &self.to_string())
    }
}

/// "5m ago", "in 2h": how long ago `t` was, for humans scanning a page.
fn ago(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let secs = (now - t).num_seconds();
    let span = span(secs.abs());
    if secs < 0 { format!("in {span}") } else { format!("{span} ago") }
}

/// "45s", "12m", "3h", "2d": a length of time in its largest whole unit.
fn span(secs: i64) -> String {
    let n = secs.max(0);
    match n {
        0..60 => format!("{n}s"),
        60..3600 => format!("{}m", n / 60),
        3600..86400 => format!("{}h", n / 3600),
        _ => format!("{}d", n / 86400),
    }
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

/// `s` percent-encoded for a query string value.
fn encode(s: &str) -> String {
    crate::web::task_view::encode(s)
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
            "needs.html",
            "queue.html",
            "task.html",
            "runs.html",
            "run.html",
            "log.html",
            "status.html",
            "error.html",
            "events.html",
            "login.html",
        ] {
            if let Err(e) = super::templates().get_template(name) {
                panic!("{name}: {e:#}");
            }
        }
    }

    #[test]
    fn bidi_controls_are_shown_not_obeyed() {
        assert_eq!(super::show_bidi("evil\u{202e}exe.txt"), "evil[U+202E]exe.txt");
        assert_eq!(super::show_bidi("a\u{2066}b\u{2069}"), "a[U+2066]b[U+2069]");
        assert_eq!(super::show_bidi("plain"), "plain");
        let t = super::templates().get_template("error.html").unwrap();
        let page = t
            .render(minijinja::context! { nav => "", status => 404, message => "evil\u{202e}exe.txt" })
            .unwrap();
        assert!(page.contains("evil[U+202E]exe.txt") && !page.contains('\u{202e}'), "{page}");
    }

    #[test]
    fn the_error_page_renders() {
        let t = super::templates().get_template("error.html").unwrap();
        let page = t.render(minijinja::context! { nav => "", status => 404, message => "<b>" }).unwrap();
        assert!(page.contains("&lt;b&gt;"), "{page}");
    }
}
