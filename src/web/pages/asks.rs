//! The pages' forms for a run that waits on a person's word, each the store operation its CLI command
//! calls, as `Actor::Web`: approve the plan that waits (`executor plan approve`), send it back with what
//! should change (`plan revise`), answer a worker's open question (`executor answer`), comment on its
//! pull request (`executor comment`, as the person), and a task's own plan setting (`plan set`). Each
//! needs the page's session token, and answers 303 back to its page with a signed message, as
//! `forms.rs` does: a refusal (someone decided first, nothing waits, an empty comment) is the message.

use crate::web::person::Person;
use axum::Extension;
use axum::extract::{Path, State};
use axum::response::Redirect;

use super::forms::{Back, Fields, parse_gid, signed_form};
use super::{MAX_ANSWER, PageError};
use crate::domain::AnswerVia;
use crate::store::PlanVerdict;
use crate::web::api::plan_mode;
use crate::web::session::Auth;
use crate::web::{AppState, comments};

fn run_id(raw: &str) -> Result<i64, PageError> {
    raw.parse().map_err(|_| PageError::NotFound(format!("no run with id {raw:?}")))
}

/// The form's required `field`, trimmed; or why not ("was not {done}: …").
fn text_of<'a>(fields: &'a Fields, field: &str, done: &str, hint: &str) -> Result<&'a str, String> {
    let text = fields.get(field).map(str::trim).unwrap_or("");
    if text.is_empty() {
        return Err(format!("was not {done}: {hint}"));
    }
    if text.chars().count() > MAX_ANSWER {
        return Err(format!("was not {done}: at most {MAX_ANSWER} characters"));
    }
    Ok(text)
}

pub(super) async fn approve_plan(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Extension(auth): Extension<Auth>,
    Path(id): Path<String>,
    body: String,
) -> Result<Redirect, PageError> {
    let fields = signed_form(&state, &auth, &body)?;
    let back = Back { state: &state, auth: &auth, fields: &fields };
    let id = run_id(&id)?;
    Ok(match state.store.decide_plan(id, &PlanVerdict::Approve, person.by()).await {
        Ok(plan) => back.to_page(
            None,
            Some(id),
            "flash",
            &format!(
                "plan revision {} of run {id} approved; the runner starts the implementation at its next tick",
                plan.revision
            ),
        ),
        Err(e) => back.to_page(None, Some(id), "error", &format!("the plan of run {id} was not approved: {e}")),
    })
}

pub(super) async fn revise_plan(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Extension(auth): Extension<Auth>,
    Path(id): Path<String>,
    body: String,
) -> Result<Redirect, PageError> {
    let fields = signed_form(&state, &auth, &body)?;
    let back = Back { state: &state, auth: &auth, fields: &fields };
    let id = run_id(&id)?;
    let comment = match text_of(&fields, "comment", "sent back", "say what should change in the plan") {
        Ok(comment) => comment,
        Err(why) => return Ok(back.to_page(None, Some(id), "error", &format!("the plan of run {id} {why}"))),
    };
    let verdict = PlanVerdict::RequestChanges(comment.to_string());
    Ok(match state.store.decide_plan(id, &verdict, person.by()).await {
        Ok(plan) => back.to_page(
            None,
            Some(id),
            "flash",
            &format!(
                "plan revision {} of run {id} sent back; the runner has revision {} written at its next tick",
                plan.revision,
                plan.revision + 1
            ),
        ),
        Err(e) => {
            back.to_page(None, Some(id), "error", &format!("the plan of run {id} was not sent back: {e}"))
        }
    })
}

pub(super) async fn answer(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Extension(auth): Extension<Auth>,
    Path(id): Path<String>,
    body: String,
) -> Result<Redirect, PageError> {
    let fields = signed_form(&state, &auth, &body)?;
    let back = Back { state: &state, auth: &auth, fields: &fields };
    let id = run_id(&id)?;
    let text = match text_of(&fields, "text", "answered", "say what the agent should do") {
        Ok(text) => text,
        Err(why) => {
            return Ok(back.to_page(None, Some(id), "error", &format!("the question of run {id} {why}")));
        }
    };
    Ok(match state.store.answer_question(id, text, AnswerVia::Web, person.by()).await {
        Ok(q) => back.to_page(
            None,
            Some(id),
            "flash",
            &format!("question {} of run {id} answered; its next worker starts with the answer", q.id),
        ),
        Err(e) => {
            back.to_page(None, Some(id), "error", &format!("the question of run {id} was not answered: {e}"))
        }
    })
}

/// A person's comment on the run's pull request (see `web::comments`): trusted, so the runner starts a
/// `fix_comments` worker on it.
pub(super) async fn comment(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Extension(auth): Extension<Auth>,
    Path(id): Path<String>,
    body: String,
) -> Result<Redirect, PageError> {
    let fields = signed_form(&state, &auth, &body)?;
    let back = Back { state: &state, auth: &auth, fields: &fields };
    let id = run_id(&id)?;
    Ok(match comments::post(&state, id, &person, fields.get("text").unwrap_or("")).await {
        Ok(posted) => back.to_page(
            None,
            Some(id),
            "flash",
            &format!(
                "comment {} posted on the {} of run {id}: a trusted comment, which its next fix_comments worker answers",
                posted.id,
                crate::domain::ChangeWords::of_forge(posted.forge).noun
            ),
        ),
        Err(e) => back.to_page(None, Some(id), "error", &format!("run {id}: {}", e.why)),
    })
}

pub(super) async fn task_plan(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Extension(auth): Extension<Auth>,
    Path(gid): Path<String>,
    body: String,
) -> Result<Redirect, PageError> {
    let fields = signed_form(&state, &auth, &body)?;
    let back = Back { state: &state, auth: &auth, fields: &fields };
    let gid = parse_gid(&gid)?;
    let mode = match plan_mode(fields.get("mode")) {
        Ok(mode) => mode,
        Err(why) => {
            return Ok(back.to(Some(&gid), "error", &format!("{gid}: plan setting not changed: {why}")));
        }
    };
    Ok(match state.store.set_task_plan_mode(&gid, mode, person.by()).await {
        Ok(()) => back.to(
            Some(&gid),
            "flash",
            &match mode {
                Some(m) => format!("{gid}: plan {m}"),
                None => format!("{gid}: plan as its repository says"),
            },
        ),
        Err(e) => back.to(Some(&gid), "error", &format!("{gid}: plan setting not changed: {e}")),
    })
}
