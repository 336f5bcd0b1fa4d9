//! The pages' forms beyond approve and skip, each the store operation its CLI command calls, as
//! `Actor::Web`, so the rules and the history are the CLI's: requeue (`executor queue requeue`), retry
//! (`executor queue retry`), resume and abandon a run (`executor runs resume|abandon`), and the two
//! acts of reading only the dashboard has — marking a notice read and dismissing a source's failed
//! fetch (see `store/needs_you.rs` for what "unread" means). Each answers 303 back to its page with a
//! signed message, as `forms.rs` does.

use crate::web::person::Person;
use axum::Extension;
use axum::extract::{Path, State};
use axum::response::Redirect;

use super::PageError;
use super::forms::{Back, Fields, parse_gid, reason_of, signed_form};
use crate::store::{REQUEUE_REASON, RETRY_REASON, Requeued};
use crate::web::AppState;
use crate::web::session::Auth;

/// A form's optional `reason`, or `default`; refused over `MAX_REASON` characters like a required one.
fn optional_reason<'a>(fields: &'a Fields, default: &'a str, done: &str) -> Result<&'a str, String> {
    match fields.get("reason").map(str::trim).filter(|r| !r.is_empty()) {
        None => Ok(default),
        Some(_) => reason_of(fields, done),
    }
}

fn run_id(raw: &str) -> Result<i64, PageError> {
    raw.parse().map_err(|_| PageError::NotFound(format!("no run with id {raw:?}")))
}

pub(super) async fn requeue(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Extension(auth): Extension<Auth>,
    Path(gid): Path<String>,
    body: String,
) -> Result<Redirect, PageError> {
    let fields = signed_form(&state, &auth, &body)?;
    let back = Back { state: &state, auth: &auth, fields: &fields };
    let gid = parse_gid(&gid)?;
    let reason = match optional_reason(&fields, REQUEUE_REASON, "requeued") {
        Ok(reason) => reason,
        Err(why) => return Ok(back.to(Some(&gid), "error", &format!("{gid} {why}"))),
    };
    Ok(match state.store.requeue_task(&gid, person.by(), reason).await {
        Ok(Requeued { task, from }) => back.to(
            Some(&gid),
            "flash",
            &format!(
                "{gid}: {} (analysis round {})",
                if from == crate::domain::QueueStatus::Skip {
                    "skip → pending, for the analyzer"
                } else {
                    "its given-up analysis starts afresh"
                },
                task.analysis_round
            ),
        ),
        Err(e) => back.to(Some(&gid), "error", &format!("{gid} was not requeued: {e}")),
    })
}

pub(super) async fn retry(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Extension(auth): Extension<Auth>,
    Path(gid): Path<String>,
    body: String,
) -> Result<Redirect, PageError> {
    let fields = signed_form(&state, &auth, &body)?;
    let back = Back { state: &state, auth: &auth, fields: &fields };
    let gid = parse_gid(&gid)?;
    let reason = match optional_reason(&fields, RETRY_REASON, "retried") {
        Ok(reason) => reason,
        Err(why) => return Ok(back.to(Some(&gid), "error", &format!("{gid} {why}"))),
    };
    Ok(match state.store.retry_task(&gid, person.by(), reason).await {
        Ok(_) => {
            back.to(Some(&gid), "flash", &format!("{gid}: the runner will start a new run on its next tick"))
        }
        Err(e) => back.to(Some(&gid), "error", &format!("{gid} was not retried: {e}")),
    })
}

pub(super) async fn resume(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Extension(auth): Extension<Auth>,
    Path(id): Path<String>,
    body: String,
) -> Result<Redirect, PageError> {
    let fields = signed_form(&state, &auth, &body)?;
    let back = Back { state: &state, auth: &auth, fields: &fields };
    let id = run_id(&id)?;
    let per_run = state.config.budget.per_run_usd;
    Ok(match state.store.resume_run_budget(id, person.by()).await {
        Ok(memory) => back.to_page(
            None,
            Some(id),
            "flash",
            &format!(
                "run {id} may spend another ${per_run:.2} (budget.per_run_usd) from ${:.2}; the runner picks it up on its next start",
                memory.budget_base_usd
            ),
        ),
        Err(e) => back.to_page(None, Some(id), "error", &format!("run {id} was not resumed: {e}")),
    })
}

pub(super) async fn abandon(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Extension(auth): Extension<Auth>,
    Path(id): Path<String>,
    body: String,
) -> Result<Redirect, PageError> {
    let fields = signed_form(&state, &auth, &body)?;
    let back = Back { state: &state, auth: &auth, fields: &fields };
    let id = run_id(&id)?;
    let reason = match reason_of(&fields, "abandoned") {
        Ok(reason) => reason,
        Err(why) => return Ok(back.to_page(None, Some(id), "error", &format!("run {id} {why}"))),
    };
    Ok(match state.human_abandon(id, reason, person.by()).await {
        Ok(_) => back.to_page(
            None,
            Some(id),
            "flash",
            &format!("run {id} abandoned; a running runner stops its worker at its next tick"),
        ),
        Err(e) => back.to_page(None, Some(id), "error", &format!("run {id} was not abandoned: {e}")),
    })
}

pub(super) async fn notice_read(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Extension(auth): Extension<Auth>,
    Path(id): Path<String>,
    body: String,
) -> Result<Redirect, PageError> {
    let fields = signed_form(&state, &auth, &body)?;
    let back = Back { state: &state, auth: &auth, fields: &fields };
    let id: i64 = id.parse().map_err(|_| PageError::NotFound(format!("no notice with id {id:?}")))?;
    Ok(match state.store.mark_notice_read(id, person.by()).await {
        Ok(()) => back.to(None, "flash", &format!("notice {id} marked read")),
        Err(e) => back.to(None, "error", &format!("notice {id} was not marked read: {e}")),
    })
}

pub(super) async fn source_dismiss(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Extension(auth): Extension<Auth>,
    body: String,
) -> Result<Redirect, PageError> {
    let fields = signed_form(&state, &auth, &body)?;
    let back = Back { state: &state, auth: &auth, fields: &fields };
    let Some(source) = fields.get("source").map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(back.to(None, "error", "no source named"));
    };
    Ok(match state.store.dismiss_source_error(source, person.by()).await {
        Ok(()) => back.to(
            None,
            "flash",
            &format!("source {source}: its failed fetch dismissed until it fails again"),
        ),
        Err(e) => back.to(None, "error", &format!("source {source}: {e}")),
    })
}
