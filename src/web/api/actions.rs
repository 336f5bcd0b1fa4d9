//! The API's side of the pages' other actions, each the store operation its CLI command calls, as
//! `Actor::Web`, answering the CLI's `--json` shape: requeue (`queue requeue`) and retry (`queue
//! retry`) → the task; skip a selection (one `executor skip` per gid) → one result per gid; resume
//! (`runs resume`) → the run's memory; abandon (`runs abandon`) → the run; and "Needs you" itself, with
//! its two acts of reading (a notice marked read, a source's failure dismissed).

use crate::web::person::Person;
use axum::Extension;
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::writes::body;
use super::{ApiError, ApiResult, gid};
use crate::store::{NeedsYouLimits, REQUEUE_REASON, RETRY_REASON};
use crate::web::AppState;
use crate::web::pages::MAX_REASON;

/// The most gids one bulk skip takes (as a bulk approval).
const MAX_BULK: usize = 1000;
/// Items each list of `GET /needs-you` holds at most.
const NEEDS_PER_LIST: i64 = 100;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReasonBody {
    reason: Option<String>,
}

/// A reason given, trimmed, at most `MAX_REASON` characters; `None` when none was given.
fn reason(given: Option<String>) -> ApiResult<Option<String>> {
    match given.map(|r| r.trim().to_string()).filter(|r| !r.is_empty()) {
        Some(r) if r.chars().count() > MAX_REASON => {
            Err(ApiError::invalid(format!("a reason is at most {MAX_REASON} characters")))
        }
        other => Ok(other),
    }
}

fn run_id(raw: &str) -> ApiResult<i64> {
    raw.parse().map_err(|_| ApiError::new(StatusCode::NOT_FOUND, format!("no run with id {raw:?}")))
}

/// `GET /needs-you` → everything that waits on a human (`Store::needs_you`), each list at most 100
/// items with its total (all it holds: the page's total is the same).
pub async fn needs_you(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    let limits = NeedsYouLimits {
        per_list: NEEDS_PER_LIST,
        max_analysis_attempts: state.config.analyzer.max_attempts,
    };
    let needs = state.store.needs_you(limits).await?;
    Ok(Json(json!({ "total": needs.total(), "needs": needs })))
}

/// `POST /tasks/{gid}/requeue {"reason"?}` → the task, as `executor queue requeue --json`.
pub async fn requeue(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Path(raw): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let gid = gid(&raw)?;
    let ReasonBody { reason: given } = body(&headers, &bytes)?;
    let why = reason(given)?.unwrap_or_else(|| REQUEUE_REASON.to_string());
    Ok(Json(json!(state.store.requeue_task(&gid, person.by(), &why).await?.task)))
}

/// `POST /tasks/{gid}/retry {"reason"?}` → the task, as `executor queue retry --json`.
pub async fn retry(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Path(raw): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let gid = gid(&raw)?;
    let ReasonBody { reason: given } = body(&headers, &bytes)?;
    let why = reason(given)?.unwrap_or_else(|| RETRY_REASON.to_string());
    Ok(Json(json!(state.store.retry_task(&gid, person.by(), &why).await?)))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct BulkSkipBody {
    gids: Vec<String>,
    reason: Option<String>,
}

/// `POST /tasks/bulk-skip {"gids": [...], "reason": "…"}` → one result per gid, in order: `{"gid",
/// "ok": true, "task"}` or `{"gid", "ok": false, "error"}`. Each is skipped on its own.
pub async fn bulk_skip(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    headers: HeaderMap,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let BulkSkipBody { gids, reason: given } = body(&headers, &bytes)?;
    if gids.is_empty() {
        return Err(ApiError::invalid("gids is empty: name the tasks to skip"));
    }
    if gids.len() > MAX_BULK {
        return Err(ApiError::invalid(format!("at most {MAX_BULK} gids at once")));
    }
    let Some(why) = reason(given)? else {
        return Err(ApiError::invalid("a skip needs a reason: {\"reason\": \"…\"}"));
    };
    let mut results = Vec::with_capacity(gids.len());
    for raw in &gids {
        let result = match gid(raw) {
            Ok(g) => state.human_skip(&g, &why, person.by()).await.map_err(ApiError::from),
            Err(e) => Err(e),
        };
        results.push(match result {
            Ok(task) => json!({ "gid": raw, "ok": true, "task": task }),
            Err(e) => json!({ "gid": raw, "ok": false, "error": e.message }),
        });
    }
    Ok(Json(Value::Array(results)))
}

/// `POST /runs/{id}/resume` → the run's memory, as `executor runs resume --json`.
pub async fn resume(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Path(raw): Path<String>,
) -> ApiResult<Json<Value>> {
    let id = run_id(&raw)?;
    Ok(Json(json!(state.store.resume_run_budget(id, person.by()).await?)))
}

/// `POST /runs/{id}/abandon {"reason": "…"}` → the run, as `executor runs abandon --json`. The reason is
/// required (422 without).
pub async fn abandon(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Path(raw): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let id = run_id(&raw)?;
    let ReasonBody { reason: given } = body(&headers, &bytes)?;
    let Some(why) = reason(given)? else {
        return Err(ApiError::invalid("abandoning needs a reason: {\"reason\": \"…\"}"));
    };
    Ok(Json(json!(state.human_abandon(id, &why, person.by()).await?)))
}

/// `POST /notices/{id}/read` → `{"ok": true}`; 409 when it was read already.
pub async fn notice_read(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Path(raw): Path<String>,
) -> ApiResult<Json<Value>> {
    let id: i64 = raw
        .parse()
        .map_err(|_| ApiError::new(StatusCode::NOT_FOUND, format!("no notice with id {raw:?}")))?;
    state.store.mark_notice_read(id, person.by()).await?;
    Ok(Json(json!({ "ok": true })))
}

/// `POST /sources/{name}/dismiss` → `{"ok": true}`; 409 when its last fetch did not fail, or was
/// dismissed since.
pub async fn source_dismiss(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Path(source): Path<String>,
) -> ApiResult<Json<Value>> {
    state.store.dismiss_source_error(&source, person.by()).await?;
    Ok(Json(json!({ "ok": true })))
}
