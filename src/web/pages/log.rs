//! `GET /sessions/{id}/log`: a worker's work log so far, and `GET /sessions/{id}/log/stream`, its
//! growth as server-sent events (see `web::live_log`). The file is the one the session's row names.

use std::path::PathBuf;

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;

use super::{PageError, ago, render};
use crate::store::{WorkerSession, now};
use crate::web::{AppState, live_log};

async fn session(state: &AppState, id: &str) -> Result<WorkerSession, PageError> {
    let found = match id.parse::<i64>() {
        Ok(id) => state.store.find_worker_session(id).await?,
        Err(_) => None,
    };
    found.ok_or_else(|| PageError::NotFound(format!("no worker session {id:?}")))
}

pub(super) async fn page(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Html<String>, PageError> {
    let s = session(&state, &id).await?;
    // The last MAX_READ bytes at most: a longer log starts part way, and says so.
    let (text, offset, cut) = match &s.log_path {
        Some(path) => {
            let path = PathBuf::from(path);
            let len = tokio::fs::metadata(&path).await.map(|m| m.len()).unwrap_or(0);
            let from = len.saturating_sub(live_log::MAX_READ);
            let (text, offset) = live_log::read_from(&path, from, live_log::MAX_READ)
                .await
                .map_err(|e| PageError::NotFound(format!("cannot read the work log: {e}")))?;
            (text, offset, from > 0)
        }
        None => (String::new(), 0, false),
    };
    let now = now();
    render(
        "log.html",
        minijinja::context! {
            nav => "runs",
            id => s.id,
            run_id => s.run_id,
            kind => s.kind.as_str(),
            agent => s.agent,
            started => ago(s.started_at, now),
            ended => s.ended_at.map(|t| ago(t, now)),
            end_reason => s.end_reason.map(|r| r.to_string()),
            log_path => s.log_path,
            text,
            offset,
            cut,
        },
    )
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct From {
    from: Option<u64>,
}

pub(super) async fn stream(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<From>,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    let s = session(&state, &id).await?;
    // A reconnecting EventSource says where it got to; that wins over the page's starting offset.
    let resumed = headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok());
    let offset = resumed.or(query.from).unwrap_or(0);
    let events = live_log::follow(state.store.clone(), s.id, s.log_path.map(PathBuf::from), offset);
    Ok(Sse::new(events).keep_alive(KeepAlive::default()).into_response())
}
