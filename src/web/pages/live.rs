//! Pages that update themselves: "Needs you", the queue, the runs board and the status carry the store's
//! change mark (`Store::change_mark`) in `<main data-live>`; `static/app.js` asks `GET /changes` every
//! few seconds and, only when the mark moved, fetches the same page again and swaps its `<main>` in
//! place — no reload, the scroll position and the selected rows kept, and never while the person is
//! typing a reason or has a confirmation open.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use super::PageError;
use crate::web::AppState;

/// `GET /changes` → `{"mark": "…"}`: one small statement, whatever the size of the queue.
pub(super) async fn changes(State(state): State<AppState>) -> Result<Json<Value>, PageError> {
    Ok(Json(json!({ "mark": state.store.change_mark().await? })))
}

/// The mark a page is rendered with.
pub(super) async fn mark(state: &AppState) -> Result<String, PageError> {
    Ok(state.store.change_mark().await?)
}
