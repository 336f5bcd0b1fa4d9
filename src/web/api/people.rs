//! The API's people: who the caller is (`GET /me`), marking Needs you as seen (`POST /looked`), and for
//! admins (the security layer refuses anyone else) the CLI's `executor users list|add|revoke|role`.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{Value, json};

use super::writes::body;
use super::{ApiError, ApiResult};
use crate::domain::{PERSON_NAME_RULE, Role, valid_person_name};
use crate::store::now;
use crate::web::AppState;
use crate::web::person::{Person, login_url, new_token, token_sha256};

/// `GET /me` → `{"name", "role"}` (`name` null for the dashboard token).
pub async fn me(Extension(person): Extension<Person>) -> Json<Value> {
    Json(json!({ "name": person.name, "role": person.role }))
}

/// `POST /looked` → `{"looked_at"}`: what changed is counted from now for this person.
pub async fn looked(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
) -> ApiResult<Json<Value>> {
    let Some(id) = person.id else {
        return Err(ApiError::invalid(
            "the dashboard token has no name to keep a mark for: use a personal token",
        ));
    };
    let at = now();
    state.store.mark_looked(id, at).await?;
    Ok(Json(json!({ "looked_at": at })))
}

/// `GET /users` → every person ever added, as `executor users list --json`.
pub async fn list(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    Ok(Json(json!(state.store.users().await?)))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewUser {
    #[serde(default)]
    name: String,
    #[serde(default)]
    role: Option<String>,
}

fn role(raw: &str) -> ApiResult<Role> {
    raw.parse().map_err(|e: crate::domain::UnknownName| ApiError::invalid(e.to_string()))
}

/// `POST /users` `{"name", "role"}` → `{"user", "login_url", "token"}`: the token is shown this once.
pub async fn add(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    headers: HeaderMap,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let NewUser { name, role: raw } = body(&headers, &bytes)?;
    if !valid_person_name(&name) {
        return Err(ApiError::invalid(format!("{name:?} cannot be a name: a name is {PERSON_NAME_RULE}")));
    }
    let role = role(raw.as_deref().unwrap_or("approver"))?;
    let token = new_token().ok_or_else(|| ApiError::invalid("no randomness for a personal token"))?;
    let user = state.store.add_user(&name, role, &token_sha256(&token), person.by()).await?;
    Ok(Json(json!({ "user": user, "login_url": login_url(&state.config.web, &token), "token": token })))
}

/// `POST /users/{name}/revoke` → the person, revoked: their token and sessions stop working at once.
pub async fn revoke(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Path(name): Path<String>,
) -> ApiResult<Json<Value>> {
    Ok(Json(json!(state.store.revoke_user(&name, person.by()).await?)))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewRole {
    #[serde(default)]
    role: String,
}

/// `PUT /users/{name}/role` `{"role"}` → the person with their new role.
pub async fn set_role(
    State(state): State<AppState>,
    Extension(person): Extension<Person>,
    Path(name): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let NewRole { role: raw } = body(&headers, &bytes)?;
    Ok(Json(json!(state.store.set_user_role(&name, role(&raw)?, person.by()).await?)))
}
