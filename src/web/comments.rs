//! A person's comment on a run's pull request, from the run page or the API: what lets the person at
//! the dashboard talk to a run whose review failed (it waits for a trusted comment or a new commit).
//!
//! The comment goes through the run's forge like `executor comment` — a local comment authored by the
//! person, or a GitHub comment posted with executor's token and signed "person (via executor): …" — and
//! its forge id is recorded as the person's. That record, never the text, is what makes the runner trust
//! it (`PrSnapshot::mark_dashboard_comments`): a stranger typing the same signature stays a stranger.

use axum::http::StatusCode;
use serde::Serialize;

use super::AppState;
use super::person::Person;
use crate::forge::{CommentPost, Forge};

/// The most characters a comment may have (GitHub takes 65,536; a signature goes before it).
pub const MAX_COMMENT: usize = 60_000;

/// A comment posted, as `executor comment RUN TEXT --json` answers.
#[derive(Debug, Clone, Serialize)]
pub struct Posted {
    pub id: String,
    pub run_id: i64,
    pub forge: &'static str,
    pub author: String,
    pub reply_to: Option<String>,
}

/// Why a comment was not posted: the status an API answer has, and words for a person.
#[derive(Debug)]
pub struct NotPosted {
    pub status: StatusCode,
    pub why: String,
}

impl NotPosted {
    fn new(status: StatusCode, why: impl Into<String>) -> NotPosted {
        NotPosted { status, why: why.into() }
    }
}

impl From<crate::store::StoreError> for NotPosted {
    fn from(e: crate::store::StoreError) -> NotPosted {
        let status = match e {
            crate::store::StoreError::UnknownRun(_) => StatusCode::NOT_FOUND,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        NotPosted::new(status, e.to_string())
    }
}

/// The body a forge is sent: on GitHub the comment is executor's token's, so it says whose it is.
fn signed(forge: &Forge, person: &str, text: &str) -> String {
    match forge {
        Forge::Local(_) => text.to_string(),
        Forge::GitHub(_) | Forge::GitLab(_) => format!("{person} (via executor): {text}"),
    }
}

/// Posts `text` by `who` on run `run_id`'s pull request, secrets redacted, and records it as theirs, so
/// the runner takes it as a trusted human's comment (a `fix_comments` worker follows), with an event in
/// their name. Only people who may approve get here (the security layer's roles).
pub async fn post(state: &AppState, run_id: i64, who: &Person, text: &str) -> Result<Posted, NotPosted> {
    // The dashboard token's holder has no name: their comments are `web`'s, as their other changes are.
    let person = who.name.as_deref().unwrap_or("web");
    let text = text.trim();
    if text.is_empty() {
        return Err(NotPosted::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "the comment is empty: say what the agent should change",
        ));
    }
    if text.chars().count() > MAX_COMMENT {
        return Err(NotPosted::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("the comment is at most {MAX_COMMENT} characters"),
        ));
    }
    let run = state.store.run(run_id).await?;
    if run.pr_number.is_none() {
        return Err(NotPosted::new(
            StatusCode::CONFLICT,
            format!(
                "run {run_id} has no {} yet; nothing to comment on",
                state.config.words_for(run.repo.as_deref()).noun
            ),
        ));
    }
    let conflict = |e: String| NotPosted::new(StatusCode::CONFLICT, e);
    let (name, repo) = state
        .config
        .repo_for(run.repo.as_deref(), &format!("run {run_id}"))
        .map_err(|e| conflict(e.to_string()))?;
    let forge = Forge::for_repo(&state.config, &state.store, name, repo, &mut state.github.clone())
        .map_err(conflict)?;
    // A pasted log may carry a token: the config's secrets (and the dashboard's) never go out.
    let body = state.redactor.redact(&signed(&forge, person, text));
    let post = CommentPost { body: &body, author: person, ..Default::default() };
    let id = forge.comment(&run, &post).await.map_err(|e| {
        tracing::warn!(run = run_id, "a comment from the dashboard was not posted: {e}");
        NotPosted::new(StatusCode::BAD_GATEWAY, format!("the comment was not posted: {e}"))
    })?;
    state.store.record_person_comment(run_id, &id, person).await?;
    let said = format!("commented on the pull request (comment {id})");
    state.store.record_note(who.by(), Some(&run.task_gid), Some(run_id), &said).await?;
    Ok(Posted { id, run_id, forge: forge.name(), author: person.to_string(), reply_to: None })
}
