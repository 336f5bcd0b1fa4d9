//! The pages' forms on tasks: approve (a pending task too, skipping triage, once confirmed), skip, and
//! approve or skip a selection; `actions.rs` has the rest (requeue, retry, runs, notices, sources). Each
//! needs a session and its CSRF value (the
//! form's hidden `csrf` field), or `Authorization: Bearer`; acts through the same store operations as
//! the CLI as `Actor::Web`; and answers 303 back to the page it came from with a message in the query
//! string, signed for the session (a page shows only a message the server signed; see `FlashQuery`).

use crate::web::person::Person;
use axum::Extension;
use axum::extract::{Path, State};
use axum::response::Redirect;
use percent_encoding::percent_decode_str;

use super::{MAX_REASON, PageError, encode, short};
use crate::domain::TaskGid;
use crate::web::AppState;
use crate::web::session::Auth;
use crate::web::task_view::VIEW_PARAMS;

/// Most tasks one "Approve selected" or "Skip selected" takes (a page shows 50).
const MAX_BULK: usize = 500;

/// A form body's fields in order (`gid` may come many times).
pub(super) struct Fields(Vec<(String, String)>);

impl Fields {
    pub(super) fn parse(body: &str) -> Fields {
        let decode = |s: &str| percent_decode_str(&s.replace('+', " ")).decode_utf8_lossy().into_owned();
        Fields(
            body.split('&')
                .filter(|pair| !pair.is_empty())
                .map(|pair| match pair.split_once('=') {
                    Some((k, v)) => (decode(k), decode(v)),
                    None => (decode(pair), String::new()),
                })
                .collect(),
        )
    }

    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> {
        self.0.iter().filter(move |(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// The form proves it comes from a page of this session (its `csrf` field); the security layer checked
/// it already, and this says so again where the change is made.
/// A posted form's fields, once its page's session token checks out (every state change needs it).
pub(super) fn signed_form(state: &AppState, auth: &Auth, body: &str) -> Result<Fields, PageError> {
    let fields = Fields::parse(body);
    check_token(state, auth, &fields)?;
    Ok(fields)
}

fn check_token(state: &AppState, auth: &Auth, fields: &Fields) -> Result<(), PageError> {
    if state.keys.csrf_ok(auth, fields.get("csrf").unwrap_or("")) {
        Ok(())
    } else {
        Err(PageError::Forbidden("this form needs the page's session: reload the page and try again".into()))
    }
}

/// Where a form's answer goes, and who it is signed for.
pub(super) struct Back<'a> {
    pub(super) state: &'a AppState,
    pub(super) auth: &'a Auth,
    pub(super) fields: &'a Fields,
}

pub(super) fn parse_gid(raw: &str) -> Result<TaskGid, PageError> {
    TaskGid::parse(raw).map_err(|e| PageError::BadRequest(e.to_string()))
}

impl Back<'_> {
    /// Back where the form came from, with `message` as `key` (`flash` or `error`) and its signature:
    /// "Needs you" (`back=needs`), the task's page (`back=task`), the run's page (`back=run`), or the
    /// queue with its filters and page.
    pub(super) fn to(&self, gid: Option<&TaskGid>, key: &str, message: &str) -> Redirect {
        self.to_page(gid, None, key, message)
    }

    /// `to`, for a form about run `run` (whose page `back=run` means).
    pub(super) fn to_page(
        &self,
        gid: Option<&TaskGid>,
        run: Option<i64>,
        key: &str,
        message: &str,
    ) -> Redirect {
        // A message is a line for a banner: long store errors or reasons are cut (the history has them).
        let message = short(message, 500);
        let sig = self.state.keys.flash_sig(self.auth, key, &message);
        let note = format!("{key}={}&sig={sig}", encode(&message));
        match (self.fields.get("back"), gid, run) {
            (Some("needs"), _, _) => return Redirect::to(&format!("/?{note}")),
            (Some("task"), Some(gid), _) => return Redirect::to(&format!("/tasks/{gid}?{note}")),
            (Some("run"), _, Some(run)) => return Redirect::to(&format!("/runs/{run}?{note}")),
            _ => {}
        }
        // The queue's whole view (filters, search, sort, page), as its `keep()` fields carried it.
        let mut query: Vec<String> = VIEW_PARAMS
            .into_iter()
            .filter_map(|name| {
                self.fields.get(name).filter(|v| !v.is_empty()).map(|v| format!("{name}={}", encode(v)))
            })
            .collect();
        query.push(note);
        Redirect::to(&format!("/queue?{}", query.join("&")))
    }
}

pub(super) async fn approve(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Extension(auth): Extension<Auth>,
    Path(gid): Path<String>,
    body: String,
) -> Result<Redirect, PageError> {
    let fields = signed_form(&state, &auth, &body)?;
    let back = Back { state: &state, auth: &auth, fields: &fields };
    let gid = parse_gid(&gid)?;
    // A pending task is approved only from the form that says so (behind its "Approve without
    // triage…" confirmation), as `executor approve --skip-triage`.
    let skip_triage = matches!(fields.get("skip_triage"), Some("on" | "true" | "1"));
    Ok(match state.store.approve_task(&gid, skip_triage, person.by()).await {
        Ok(done) if done.revision_approved => back.to(
            Some(&gid),
            "flash",
            &format!("approved the revision of {gid}: it is now the text agents are told"),
        ),
        Ok(_) if skip_triage => back.to(Some(&gid), "flash", &format!("approved {gid} without triage")),
        Ok(_) => back.to(Some(&gid), "flash", &format!("approved {gid}")),
        Err(e) => back.to(Some(&gid), "error", &format!("{gid} was not approved: {e}")),
    })
}

pub(super) async fn skip(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Extension(auth): Extension<Auth>,
    Path(gid): Path<String>,
    body: String,
) -> Result<Redirect, PageError> {
    let fields = signed_form(&state, &auth, &body)?;
    let back = Back { state: &state, auth: &auth, fields: &fields };
    let gid = parse_gid(&gid)?;
    let reason = match reason_of(&fields, "skipped") {
        Ok(reason) => reason,
        Err(why) => return Ok(back.to(Some(&gid), "error", &format!("{gid} {why}"))),
    };
    // The reason as given, as `executor skip` records it (the event's actor says it was the dashboard).
    Ok(match state.human_skip(&gid, reason, person.by()).await {
        Ok(_) => back.to(Some(&gid), "flash", &format!("skipped {gid}: {reason}")),
        Err(e) => back.to(Some(&gid), "error", &format!("{gid} was not skipped: {e}")),
    })
}

/// The form's required `reason`, trimmed; or why not ("was not {done}: say why").
pub(super) fn reason_of<'a>(fields: &'a Fields, done: &str) -> Result<&'a str, String> {
    let reason = fields.get("reason").map(str::trim).unwrap_or("");
    if reason.is_empty() {
        return Err(format!("was not {done}: say why"));
    }
    if reason.chars().count() > MAX_REASON {
        return Err(format!("was not {done}: a reason is at most {MAX_REASON} characters"));
    }
    Ok(reason)
}

pub(super) async fn bulk_approve(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Extension(auth): Extension<Auth>,
    body: String,
) -> Result<Redirect, PageError> {
    let fields = signed_form(&state, &auth, &body)?;
    let back = Back { state: &state, auth: &auth, fields: &fields };
    let gids: Vec<&str> = fields.all("gid").collect();
    if gids.is_empty() {
        return Ok(back.to(None, "error", "no task selected"));
    }
    if gids.len() > MAX_BULK {
        return Err(PageError::BadRequest(format!("at most {MAX_BULK} tasks at once")));
    }
    let (mut approved, mut failed) = (0, Vec::new());
    for raw in gids {
        let outcome = match parse_gid(raw) {
            Ok(gid) => state.store.approve_task(&gid, false, person.by()).await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match outcome {
            Ok(_) => approved += 1,
            Err(e) => failed.push(format!("{raw}: {e}")),
        }
    }
    let done = format!("approved {approved} task{}", if approved == 1 { "" } else { "s" });
    Ok(if failed.is_empty() {
        back.to(None, "flash", &done)
    } else {
        back.to(None, "error", &format!("{done}; not approved: {}", failed.join("; ")))
    })
}

/// "Skip selected": each task skipped on its own with the one reason, as `executor skip` does for one;
/// one refusal does not stop the others.
pub(super) async fn bulk_skip(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Extension(auth): Extension<Auth>,
    body: String,
) -> Result<Redirect, PageError> {
    let fields = signed_form(&state, &auth, &body)?;
    let back = Back { state: &state, auth: &auth, fields: &fields };
    let gids: Vec<&str> = fields.all("gid").collect();
    if gids.is_empty() {
        return Ok(back.to(None, "error", "no task selected"));
    }
    if gids.len() > MAX_BULK {
        return Err(PageError::BadRequest(format!("at most {MAX_BULK} tasks at once")));
    }
    let reason = match reason_of(&fields, "skipped") {
        Ok(reason) => reason,
        Err(why) => return Ok(back.to(None, "error", &format!("the selection {why}"))),
    };
    let (mut skipped, mut failed) = (0, Vec::new());
    for raw in gids {
        let outcome = match parse_gid(raw) {
            Ok(gid) => state.human_skip(&gid, reason, person.by()).await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match outcome {
            Ok(_) => skipped += 1,
            Err(e) => failed.push(format!("{raw}: {e}")),
        }
    }
    let done = format!("skipped {skipped} task{}: {reason}", if skipped == 1 { "" } else { "s" });
    Ok(if failed.is_empty() {
        back.to(None, "flash", &done)
    } else {
        back.to(None, "error", &format!("{done}; not skipped: {}", failed.join("; ")))
    })
}

#[cfg(test)]
mod tests {
    use super::Fields;

    #[test]
    fn repeated_fields_and_escapes_are_read() {
        let f = Fields::parse("gid=a&gid=b%2Dc&reason=not+now%21&empty");
        assert_eq!(f.all("gid").collect::<Vec<_>>(), ["a", "b-c"]);
        assert_eq!(f.get("reason"), Some("not now!"));
        assert_eq!(f.get("empty"), Some(""));
        assert_eq!(f.get("missing"), None);
    }
}
