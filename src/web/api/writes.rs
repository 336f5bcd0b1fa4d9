//! The API's writes: the same store operations as `executor approve` and `executor skip`, as
//! `Actor::Web`.

use crate::web::person::Person;
use axum::Extension;
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::{ApiError, ApiResult, gid};
use crate::domain::{By, TaskGid};
use crate::web::{AppState, auth};

/// The most gids one bulk approval takes.
const MAX_BULK: usize = 1000;

/// A JSON body, or a browser form's fields (so the pages work without script), or the defaults when
/// there is none.
pub(super) fn body<T: DeserializeOwned + Default>(headers: &HeaderMap, bytes: &Bytes) -> ApiResult<T> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    if auth::is_form(headers) {
        return serde_json::from_value(form_to_json(bytes))
            .map_err(|e| ApiError::invalid(format!("the form is not what was expected: {e}")));
    }
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::invalid(format!("the body is not the JSON expected: {e}")))
}

/// A form as the JSON body it stands for: `gids` (repeated) a list, `skip_triage` a checkbox, the rest
/// text; the `csrf` field was for the security layer and is dropped.
fn form_to_json(bytes: &Bytes) -> Value {
    let mut object = serde_json::Map::new();
    let mut gids = Vec::new();
    for (key, value) in auth::form_fields(bytes) {
        match key.as_str() {
            auth::CSRF_FIELD => {}
            "gids" => gids.push(Value::String(value)),
            "skip_triage" => {
                object.insert(key, Value::Bool(matches!(value.as_str(), "true" | "on" | "1")));
            }
            _ => {
                object.insert(key, Value::String(value));
            }
        }
    }
    if !gids.is_empty() {
        object.insert("gids".into(), Value::Array(gids));
    }
    Value::Object(object)
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApproveBody {
    #[serde(default)]
    skip_triage: bool,
}

/// One approval's result, as an element of `executor approve --json`.
async fn approve_one(
    state: &AppState,
    gid: &TaskGid,
    skip_triage: bool,
    by: By<'_>,
) -> Result<Value, ApiError> {
    Ok(state.store.approve_task(gid, skip_triage, by).await?.result_json())
}

/// `POST /tasks/{gid}/approve` (body optional: `{"skip_triage": true}`) → `{"gid", "ok": true,
/// "revision_approved", "task"}`; 409 with the reason when the task cannot be approved.
pub async fn approve(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Path(raw): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let gid = gid(&raw)?;
    let ApproveBody { skip_triage } = body(&headers, &bytes)?;
    Ok(Json(approve_one(&state, &gid, skip_triage, person.by()).await?))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct BulkBody {
    gids: Vec<String>,
    #[serde(default)]
    skip_triage: bool,
}

/// `POST /tasks/bulk-approve {"gids": [...], "skip_triage": false}` → one result per gid, in order, as
/// `executor approve --json` prints them: `{"gid", "ok": true, …}` or `{"gid", "ok": false, "error"}`.
/// Each is approved on its own: one refusal does not stop the others.
pub async fn bulk_approve(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    headers: HeaderMap,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let BulkBody { gids, skip_triage } = body(&headers, &bytes)?;
    if gids.is_empty() {
        return Err(ApiError::invalid("gids is empty: name the tasks to approve"));
    }
    if gids.len() > MAX_BULK {
        return Err(ApiError::invalid(format!("at most {MAX_BULK} gids at once")));
    }
    let mut results = Vec::with_capacity(gids.len());
    for raw in &gids {
        let result = match gid(raw) {
            Ok(g) => approve_one(&state, &g, skip_triage, person.by()).await,
            Err(e) => Err(e),
        };
        results.push(result.unwrap_or_else(|e| json!({ "gid": raw, "ok": false, "error": e.message })));
    }
    Ok(Json(Value::Array(results)))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SkipBody {
    reason: Option<String>,
}

/// `POST /tasks/{gid}/skip {"reason": "…"}` → the task, as `executor skip --json` prints it. The reason
/// is required (422 without).
pub async fn skip(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Path(raw): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let gid = gid(&raw)?;
    let SkipBody { reason } = body(&headers, &bytes)?;
    let Some(reason) = reason.map(|r| r.trim().to_string()).filter(|r| !r.is_empty()) else {
        return Err(ApiError::invalid("a skip needs a reason: {\"reason\": \"…\"}"));
    };
    if reason.chars().count() > crate::web::pages::MAX_REASON {
        return Err(ApiError::invalid(format!(
            "a reason is at most {} characters",
            crate::web::pages::MAX_REASON
        )));
    }
    Ok(Json(json!(state.human_skip(&gid, &reason, person.by()).await?)))
}
