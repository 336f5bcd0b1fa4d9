//! Pages that update themselves: "Needs you", the queue, the runs board and the status carry the store's
//! change mark (`Store::change_mark`) in `<main data-live>`; `static/app.js` asks `GET /changes` every
//! few seconds and, only when the mark moved, fetches the same page again and swaps its `<main>` in
//! place — no reload, the scroll position and the selected rows kept, and never while the person is
//! typing a reason or has a confirmation open. The tab's title carries the count of "Needs you"
//! (`/needs-count`), asked again whenever the mark moves.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use super::PageError;
use crate::web::AppState;

/// `GET /changes` → `{"mark": "…"}`: one small statement, whatever the size of the queue.
pub(super) async fn changes(State(state): State<AppState>) -> Result<Json<Value>, PageError> {
    Ok(Json(json!({ "mark": state.store.change_mark().await? })))
}

/// `GET /needs-count` → `{"total": N}`: how many items "Needs you" holds, every list counted whole (no
/// item read). Every page's tab title carries it, asked when the page opens and again when the change
/// mark moves, so it is a few counts only then, not on every look.
pub(super) async fn needs_count(State(state): State<AppState>) -> Result<Json<Value>, PageError> {
    let limits = crate::store::NeedsYouLimits {
        per_list: 0,
        max_analysis_attempts: state.config.analyzer.max_attempts,
    };
    Ok(Json(json!({ "total": state.store.needs_you(limits).await?.total() })))
}

/// The mark a page is rendered with.
pub(super) async fn mark(state: &AppState) -> Result<String, PageError> {
    Ok(state.store.change_mark().await?)
}
