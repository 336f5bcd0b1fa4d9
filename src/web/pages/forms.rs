//! The pages' forms: approve, skip, approve a selection. Each needs the dashboard token (the form's
//! hidden `csrf` field, or `Authorization: Bearer`), acts through the same store operations as the
//! CLI as `Actor::Web`, and answers 303 back to the page it came from with a message in the query
//! string (which the page escapes like any other value).

use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::Redirect;
use percent_encoding::percent_decode_str;

use super::{PageError, encode};
use crate::domain::{Actor, QueueStatus, TaskGid};
use crate::web::AppState;

/// Most tasks one "Approve selected" approves (a page shows 50).
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

    fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> {
        self.0.iter().filter(move |(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// The form proves it comes from a page of ours (its `csrf` field) or from a holder of the token.
fn check_token(state: &AppState, headers: &HeaderMap, fields: &Fields) -> Result<(), PageError> {
    let token = super::csrf_token(state);
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let given = [fields.get("csrf"), bearer];
    if given.into_iter().flatten().any(|g| same(g.as_bytes(), token.as_bytes())) {
        Ok(())
    } else {
        Err(PageError::Forbidden("this form needs the dashboard token: reload the page and try again".into()))
    }
}

/// Compares without stopping at the first difference, so timing tells nothing of the token.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn parse_gid(raw: &str) -> Result<TaskGid, PageError> {
    TaskGid::parse(raw).map_err(|e| PageError::BadRequest(e.to_string()))
}

/// Where the form came from: the task's page (`back=task`) or the queue with its filters and page.
fn back_to(fields: &Fields, gid: Option<&TaskGid>, key: &str, message: &str) -> Redirect {
    if let (Some("task"), Some(gid)) = (fields.get("back"), gid) {
        return Redirect::to(&format!("/tasks/{gid}?{key}={}", encode(message)));
    }
    let mut query: Vec<String> = ["status", "source", "q", "page"]
        .into_iter()
        .filter_map(|name| {
            fields.get(name).filter(|v| !v.is_empty()).map(|v| format!("{name}={}", encode(v)))
        })
        .collect();
    query.push(format!("{key}={}", encode(message)));
    Redirect::to(&format!("/?{}", query.join("&")))
}

pub(super) async fn approve(
    State(state): State<AppState>,
    Path(gid): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Result<Redirect, PageError> {
    let fields = Fields::parse(&body);
    check_token(&state, &headers, &fields)?;
    let gid = parse_gid(&gid)?;
    Ok(match state.store.approve_task(&gid, false, Actor::Web).await {
        Ok(done) if done.revision_approved => back_to(
            &fields,
            Some(&gid),
            "flash",
            &format!("approved the revision of {gid}: it is now the text agents are told"),
        ),
        Ok(_) => back_to(&fields, Some(&gid), "flash", &format!("approved {gid}")),
        Err(e) => back_to(&fields, Some(&gid), "error", &format!("{gid} was not approved: {e}")),
    })
}

pub(super) async fn skip(
    State(state): State<AppState>,
    Path(gid): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Result<Redirect, PageError> {
    let fields = Fields::parse(&body);
    check_token(&state, &headers, &fields)?;
    let gid = parse_gid(&gid)?;
    let reason = fields.get("reason").map(str::trim).unwrap_or("");
    if reason.is_empty() {
        return Ok(back_to(&fields, Some(&gid), "error", &format!("{gid} was not skipped: say why")));
    }
    // The reason as given, as `executor skip` records it (the event's actor says it was the dashboard).
    Ok(match state.store.set_task_status(&gid, QueueStatus::Skip, Actor::Web, Some(reason)).await {
        Ok(_) => back_to(&fields, Some(&gid), "flash", &format!("skipped {gid}: {reason}")),
        Err(e) => back_to(&fields, Some(&gid), "error", &format!("{gid} was not skipped: {e}")),
    })
}

pub(super) async fn bulk_approve(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: String,
) -> Result<Redirect, PageError> {
    let fields = Fields::parse(&body);
    check_token(&state, &headers, &fields)?;
    let gids: Vec<&str> = fields.all("gid").collect();
    if gids.is_empty() {
        return Ok(back_to(&fields, None, "error", "no task selected"));
    }
    if gids.len() > MAX_BULK {
        return Err(PageError::BadRequest(format!("at most {MAX_BULK} tasks at once")));
    }
    let (mut approved, mut failed) = (0, Vec::new());
    for raw in gids {
        let outcome = match parse_gid(raw) {
            Ok(gid) => state.store.approve_task(&gid, false, Actor::Web).await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match outcome {
            Ok(_) => approved += 1,
            Err(e) => failed.push(format!("{raw}: {e}")),
        }
    }
    let done = format!("approved {approved} task{}", if approved == 1 { "" } else { "s" });
    Ok(if failed.is_empty() {
        back_to(&fields, None, "flash", &done)
    } else {
        back_to(&fields, None, "error", &format!("{done}; not approved: {}", failed.join("; ")))
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

    #[test]
    fn tokens_compare_whole() {
        assert!(super::same(b"abc", b"abc"));
        assert!(!super::same(b"abc", b"abd"));
        assert!(!super::same(b"abc", b"abcd"));
    }
}
