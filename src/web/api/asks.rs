//! The API's side of a run that waits on a person's word, each the store operation its CLI command
//! calls, as `Actor::Web`, answering the CLI's `--json` shape: a run's plans (`plan show`), approve the
//! plan that waits (`plan approve`) or send it back with a comment (`plan revise`), a run's questions,
//! answer the open one (`executor answer`), comment on its pull request (`executor comment`), and a
//! task's own plan setting (`plan set`).

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Json};
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

use super::writes::body;
use super::{ApiError, ApiResult, gid};
use crate::domain::{AnswerVia, PlanMode};
use crate::store::PlanVerdict;
use crate::web::pages::MAX_ANSWER;
use crate::web::person::Person;
use crate::web::{AppState, comments};

/// A run id from the path, of a run that exists (404 otherwise, as for any unknown run).
async fn known_run(state: &AppState, raw: &str) -> ApiResult<i64> {
    let id: i64 =
        raw.parse().map_err(|_| ApiError::new(StatusCode::NOT_FOUND, format!("no run with id {raw:?}")))?;
    state.store.run(id).await?;
    Ok(id)
}

/// A person's text (a plan comment, an answer), trimmed: required, at most `MAX_ANSWER` characters.
fn said(given: Option<String>, what: &str, example: &str) -> ApiResult<String> {
    let Some(text) = given.map(|t| t.trim().to_string()).filter(|t| !t.is_empty()) else {
        return Err(ApiError::invalid(format!("{what} is required: {example}")));
    };
    if text.chars().count() > MAX_ANSWER {
        return Err(ApiError::invalid(format!("{what} is at most {MAX_ANSWER} characters")));
    }
    Ok(text)
}

/// `GET /runs/{id}/plans` → the run's plans, first revision first, as `executor plan show --json`.
pub async fn plans(State(state): State<AppState>, Path(raw): Path<String>) -> ApiResult<Json<Value>> {
    let id = known_run(&state, &raw).await?;
    Ok(Json(json!(state.store.plans(id).await?)))
}

/// `POST /runs/{id}/plan/approve` → the plan approved, as `executor plan approve --json`; 409 when no
/// plan waits (none written yet, or someone decided first).
pub async fn approve_plan(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Path(raw): Path<String>,
) -> ApiResult<Json<Value>> {
    let id = known_run(&state, &raw).await?;
    Ok(Json(json!(state.store.decide_plan(id, &PlanVerdict::Approve, person.by()).await?)))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReviseBody {
    comment: Option<String>,
}

/// `POST /runs/{id}/plan/revise {"comment": "…"}` → the plan sent back, as `executor plan revise
/// --json`. The comment is required (422 without); 409 when no plan waits.
pub async fn revise_plan(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Path(raw): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let id = known_run(&state, &raw).await?;
    let ReviseBody { comment } = body(&headers, &bytes)?;
    let comment = said(comment, "a comment", "{\"comment\": \"what should change\"}")?;
    let verdict = PlanVerdict::RequestChanges(comment);
    Ok(Json(json!(state.store.decide_plan(id, &verdict, person.by()).await?)))
}

/// `GET /runs/{id}/questions` → the questions the run's workers asked, oldest first, with their answers.
pub async fn questions(State(state): State<AppState>, Path(raw): Path<String>) -> ApiResult<Json<Value>> {
    let id = known_run(&state, &raw).await?;
    Ok(Json(json!(state.store.questions(id).await?)))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerBody {
    text: Option<String>,
}

/// `POST /runs/{id}/answer {"text": "…"}` → the question answered, as `executor answer --json`. The text
/// is required (422 without); 409 when no question is open (none asked, or answered first elsewhere).
pub async fn answer(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Path(raw): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let id = known_run(&state, &raw).await?;
    let AnswerBody { text } = body(&headers, &bytes)?;
    let text = said(text, "an answer", "{\"text\": \"what the agent should do\"}")?;
    Ok(Json(json!(state.store.answer_question(id, &text, AnswerVia::Web, person.by()).await?)))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CommentBody {
    text: Option<String>,
}

/// `POST /runs/{id}/comments {"text": "…"}` → the comment posted on the run's pull request, as
/// `executor comment RUN TEXT --json`: by the person at the dashboard, trusted (a `fix_comments` worker
/// follows). 422 for an empty text, 409 for a run without a pull request, 502 when the forge refused.
pub async fn comment(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Path(raw): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let id = known_run(&state, &raw).await?;
    let CommentBody { text } = body(&headers, &bytes)?;
    let posted = comments::post(&state, id, &person, text.as_deref().unwrap_or(""))
        .await
        .map_err(|e| ApiError::new(e.status, e.why))?;
    Ok(Json(json!(posted)))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanModeBody {
    /// Absent: not said (422); `null` or `"default"`: the repository's; else `required` or `off`.
    #[serde(default, deserialize_with = "present")]
    mode: Option<Option<String>>,
}

/// A field that is present, even as `null`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// A plan setting as the API and the task page's form give it: `None` for the repository's.
pub(crate) fn plan_mode(given: Option<&str>) -> Result<Option<PlanMode>, String> {
    match given.map(str::trim) {
        None | Some("" | "default") => Ok(None),
        Some(m) => m.parse::<PlanMode>().map(Some).map_err(|e| format!("{e}, default (or null)")),
    }
}

/// `PUT /tasks/{gid}/plan {"mode": "required"|"off"|null}` → `{"task_gid", "plan"}`, as `executor plan
/// set --json`: whether the task's runs write a plan for approval first (`null`: as its repository
/// says).
pub async fn set_plan_mode(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Path(raw): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let gid = gid(&raw)?;
    let PlanModeBody { mode } = body(&headers, &bytes)?;
    let Some(given) = mode else {
        return Err(ApiError::invalid("say the plan setting: {\"mode\": \"required\" | \"off\" | null}"));
    };
    let mode = plan_mode(given.as_deref()).map_err(ApiError::invalid)?;
    state.store.set_task_plan_mode(&gid, mode, person.by()).await?;
    Ok(Json(json!({ "task_gid": gid.as_str(), "plan": mode })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_setting_is_required_off_or_the_repositorys() {
        assert_eq!(plan_mode(Some("required")), Ok(Some(PlanMode::Required)));
        assert_eq!(plan_mode(Some(" off ")), Ok(Some(PlanMode::Off)));
        assert_eq!(plan_mode(Some("default")), Ok(None));
        assert_eq!(plan_mode(None), Ok(None));
        assert!(plan_mode(Some("maybe")).unwrap_err().contains("required, off, default"));
        let absent: PlanModeBody = serde_json::from_str("{}").unwrap();
        let null: PlanModeBody = serde_json::from_str(r#"{"mode": null}"#).unwrap();
        assert_eq!((absent.mode, null.mode), (None, Some(None)));
    }
}
