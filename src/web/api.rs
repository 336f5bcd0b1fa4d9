//! `/api/v1/`: the JSON API. Every answer has the shape of the matching CLI command's `--json` output
//! (the same serde types), and every write goes through the same store operation as the CLI, as
//! `Actor::Web` in the caller's name. Errors are `{"error": "…"}`: 404 for an unknown task or run, 409 for a move the task or
//! run cannot make (with the store's reason), 422 for bad input.

mod actions;
mod asks;
mod export;
mod people;
mod reads;
mod writes;

use axum::Json;
use axum::Router;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};

pub(crate) use asks::plan_mode;
pub(crate) use reads::MAX_LIMIT as MAX_ROWS;

use super::AppState;
use crate::domain::TaskGid;
use crate::store::StoreError;

/// The routes, to be nested under `/api/v1`.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/tasks", get(reads::tasks))
        .route("/needs-you", get(actions::needs_you))
        .route("/tasks/bulk-approve", post(writes::bulk_approve))
        .route("/tasks/bulk-skip", post(actions::bulk_skip))
        .route("/tasks/{gid}", get(reads::task))
        .route("/tasks/{gid}/approve", post(writes::approve))
        .route("/tasks/{gid}/skip", post(writes::skip))
        .route("/tasks/{gid}/requeue", post(actions::requeue))
        .route("/tasks/{gid}/retry", post(actions::retry))
        .route("/tasks/{gid}/plan", put(asks::set_plan_mode))
        .route("/tasks.csv", get(export::tasks))
        .route("/runs", get(reads::runs))
        .route("/runs.csv", get(export::runs))
        .route("/runs/{id}", get(reads::run))
        .route("/runs/{id}/resume", post(actions::resume))
        .route("/runs/{id}/abandon", post(actions::abandon))
        .route("/runs/{id}/plans", get(asks::plans))
        .route("/runs/{id}/plan/approve", post(asks::approve_plan))
        .route("/runs/{id}/plan/revise", post(asks::revise_plan))
        .route("/runs/{id}/questions", get(asks::questions))
        .route("/runs/{id}/answer", post(asks::answer))
        .route("/runs/{id}/comments", post(asks::comment))
        .route("/notices/{id}/read", post(actions::notice_read))
        .route("/sources/{name}/dismiss", post(actions::source_dismiss))
        .route("/status", get(reads::status))
        .route("/me", get(people::me))
        .route("/looked", post(people::looked))
        .route("/users", get(people::list).post(people::add))
        .route("/users/{name}/revoke", post(people::revoke))
        .route("/users/{name}/role", put(people::set_role))
        .route("/events", get(reads::events))
        .route("/insights", get(reads::insights))
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "no such API route") })
}

/// An API error: a status and a message, answered as `{"error": message}`.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError { status, message: message.into() }
    }

    /// Bad input: 422.
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message)
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        let status = match &e {
            StoreError::UnknownTask(_) | StoreError::UnknownRun(_) | StoreError::UnknownNotice(_) => {
                StatusCode::NOT_FOUND
            }
            StoreError::Illegal(_) | StoreError::Refused(_) | StoreError::Conflict(_) => StatusCode::CONFLICT,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::warn!("API request failed: {e}");
        }
        ApiError::new(status, e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(serde_json::json!({ "error": self.message }))).into_response()
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

/// A gid from the path; one that can name no task is unknown (404), as no task has it.
fn gid(raw: &str) -> ApiResult<TaskGid> {
    TaskGid::parse(raw)
        .map_err(|e| ApiError::new(StatusCode::NOT_FOUND, format!("no task with gid {raw:?}: {e}")))
}

/// An optional number from the query string.
fn number(name: &str, raw: Option<&str>) -> ApiResult<Option<i64>> {
    match raw.filter(|r| !r.is_empty()) {
        None => Ok(None),
        Some(r) => match r.parse::<i64>() {
            Ok(n) if n >= 0 => Ok(Some(n)),
            _ => Err(ApiError::invalid(format!("{name} must be a whole number ≥ 0, not {r:?}"))),
        },
    }
}

/// An optional name (a status, a state) from the query string.
fn named<T>(raw: Option<&str>) -> ApiResult<Option<T>>
where
    T: std::str::FromStr<Err = crate::domain::UnknownName>,
{
    raw.filter(|r| !r.is_empty())
        .map(|r| r.parse::<T>().map_err(|e| ApiError::invalid(e.to_string())))
        .transpose()
}
