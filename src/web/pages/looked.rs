//! "Since you last looked": what changed (events, newest first) since the person at Needs you last
//! marked it as seen, and the form that marks it. Per person: the dashboard token's holder has no name
//! and so no mark.

use axum::Extension;
use axum::extract::State;
use axum::response::Redirect;

use super::detail::{EventLine, event_lines};
use super::forms::{Back, signed_form};
use super::{PageError, ago};
use crate::store::{EventFilter, now};
use crate::web::AppState;
use crate::web::person::Person;
use crate::web::session::Auth;

/// The newest changes listed; the count covers them all.
const SHOWN: i64 = 10;

#[derive(serde::Serialize)]
pub(super) struct SinceLooked {
    /// When they last marked it as seen; `None`: never yet.
    at: Option<String>,
    ago: Option<String>,
    total: i64,
    events: Vec<EventLine>,
}

/// What changed since `person` last looked; `None` for the token's holder.
pub(super) async fn since_looked(
    state: &AppState,
    person: &Person,
) -> Result<Option<SinceLooked>, PageError> {
    let Some(id) = person.id else { return Ok(None) };
    let Some(at) = state.store.user(id).await?.and_then(|u| u.looked_at) else {
        return Ok(Some(SinceLooked { at: None, ago: None, total: 0, events: Vec::new() }));
    };
    let total = state.store.events_count_since(at).await?;
    let mut events = state
        .store
        .events(&EventFilter { since: Some(at), limit: Some(SHOWN), ..Default::default() })
        .await?;
    events.reverse();
    Ok(Some(SinceLooked {
        at: Some(at.format("%Y-%m-%d %H:%M UTC").to_string()),
        ago: Some(ago(at, now())),
        total,
        events: event_lines(&events),
    }))
}

/// `POST /looked`: the person has seen what changed; counting starts again from now.
pub(super) async fn mark(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Extension(auth): Extension<Auth>,
    body: String,
) -> Result<Redirect, PageError> {
    let fields = signed_form(&state, &auth, &body)?;
    let back = Back { state: &state, auth: &auth, fields: &fields };
    let Some(id) = person.id else {
        return Ok(back.to(None, "error", "the dashboard token has no name to keep a mark for: log in with a personal URL (`executor users add`)"));
    };
    state.store.mark_looked(id, now()).await?;
    Ok(back.to(None, "flash", "marked as seen: what changes from now on is listed here"))
}
