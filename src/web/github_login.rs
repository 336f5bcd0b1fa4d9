//! "Sign in with GitHub" (`[web.github_login]`): GitHub's OAuth web flow, for the people `executor users
//! add NAME --github LOGIN` links to a GitHub account.
//!
//! - `GET /login/github` sends the browser to GitHub's authorize page with a random `state`, kept in a
//!   short-lived HttpOnly cookie;
//! - `GET /login/github/callback?code&state` checks the state against that cookie (constant time),
//!   trades the code for a token (the client secret from the environment, never the config), asks
//!   GitHub who that is (`GET {github.api_url}/user`), and logs the browser in as the active person
//!   linked to that account; anyone else is refused, named, with the command that would let them in.
//!
//! Both are open routes (the security layer lets them through without a session): they are how a
//! session starts. The GitHub token is used once and dropped; only the session cookie remains.

use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::AppState;
use super::auth::{cookie, session_cookie};
use super::session::same;

/// The cookie that carries the flow's `state` from the redirect to the callback. SameSite=Lax: the
/// callback is a top-level navigation from GitHub, which a Strict cookie would not come with.
const STATE_COOKIE: &str = "executor_github_state";

/// How long a person has to approve on GitHub.
const STATE_MAX_AGE_SECS: u32 = 600;

fn refused(status: StatusCode, why: &str) -> Response {
    super::pages::error_page(status, why)
}

fn random_hex() -> Option<String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new().fill(&mut bytes).ok()?;
    Some(super::session::hex(&bytes))
}

/// Where GitHub sends the browser back: this server as the browser named it (the `Host` the security
/// layer's allowlist admitted).
fn callback_url(headers: &HeaderMap) -> String {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost");
    format!("http://{host}/login/github/callback")
}

/// `GET /login/github`: off (404) unless configured with its secret set.
pub async fn start(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let (Some(login), Some(_)) = (&state.config.web.github_login, &state.github_login_secret) else {
        return refused(
            StatusCode::NOT_FOUND,
            "signing in with GitHub is not set up here ([web.github_login])",
        );
    };
    let Some(flow) = random_hex() else {
        return refused(StatusCode::INTERNAL_SERVER_ERROR, "no randomness for signing in");
    };
    let mut authorize =
        match reqwest::Url::parse(&format!("{}/login/oauth/authorize", login.url.trim_end_matches('/'))) {
            Ok(url) => url,
            Err(_) => {
                return refused(StatusCode::INTERNAL_SERVER_ERROR, "web.github_login.url is not an address");
            }
        };
    authorize
        .query_pairs_mut()
        .append_pair("client_id", &login.client_id)
        .append_pair("redirect_uri", &callback_url(&headers))
        .append_pair("state", &flow)
        .append_pair("allow_signup", "false");
    let mut response = StatusCode::SEE_OTHER.into_response();
    let set = format!(
        "{STATE_COOKIE}={flow}; HttpOnly; SameSite=Lax; Path=/login/github; Max-Age={STATE_MAX_AGE_SECS}"
    );
    if let (Ok(location), Ok(set)) = (HeaderValue::from_str(authorize.as_str()), HeaderValue::from_str(&set))
    {
        response.headers_mut().insert(header::LOCATION, location);
        response.headers_mut().insert(header::SET_COOKIE, set);
    }
    response
}

#[derive(Debug, Deserialize)]
pub struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
struct TokenAnswer {
    access_token: Option<String>,
    error_description: Option<String>,
}

#[derive(Debug, Deserialize)]
struct GitHubUser {
    login: String,
}

/// Why the code could not be traded for a GitHub account, for the person and the log.
async fn github_account(state: &AppState, code: &str, headers: &HeaderMap) -> Result<String, String> {
    let (Some(login), Some(secret)) = (&state.config.web.github_login, &state.github_login_secret) else {
        return Err("signing in with GitHub is not set up here".into());
    };
    let http = reqwest::Client::builder()
        // Within the deadline the server gives a request without a session (`web.header_read_timeout`).
        .timeout(Duration::from_secs(8))
        .user_agent(concat!("executor/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("no HTTP client: {e}"))?;
    let answer: TokenAnswer = http
        .post(format!("{}/login/oauth/access_token", login.url.trim_end_matches('/')))
        .header(header::ACCEPT, "application/json")
        .form(&[
            ("client_id", login.client_id.as_str()),
            ("client_secret", secret.as_str()),
            ("code", code),
            ("redirect_uri", &callback_url(headers)),
        ])
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| format!("GitHub did not answer the sign-in: {}", e.without_url()))?
        .json()
        .await
        .map_err(|e| format!("GitHub's answer to the sign-in is not what it documents: {e}"))?;
    let Some(token) = answer.access_token else {
        return Err(format!(
            "GitHub refused the sign-in: {}",
            answer.error_description.as_deref().unwrap_or("no token in its answer")
        ));
    };
    let user: GitHubUser = http
        .get(format!("{}/user", state.config.github.api_url.trim_end_matches('/')))
        .bearer_auth(&token)
        .header(header::ACCEPT, "application/vnd.github+json")
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| format!("GitHub did not say who signed in: {}", e.without_url()))?
        .json()
        .await
        .map_err(|e| format!("GitHub's user is not what it documents: {e}"))?;
    Ok(user.login)
}

/// `GET /login/github/callback`: the browser back from GitHub.
pub async fn callback(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(back): Query<Callback>,
) -> Response {
    let expected = cookie(&headers, STATE_COOKIE).unwrap_or_default();
    let given = back.state.as_deref().unwrap_or_default();
    if !same(given, expected) {
        return refused(
            StatusCode::FORBIDDEN,
            "this sign-in did not start here (or took over 10 minutes): start again from the login page",
        );
    }
    if let Some(error) = back.error {
        return refused(
            StatusCode::FORBIDDEN,
            &format!("GitHub did not sign you in: {}", super::refusal_log::shown(&error)),
        );
    }
    let Some(code) = back.code.filter(|c| !c.is_empty()) else {
        return refused(StatusCode::BAD_REQUEST, "GitHub sent no code: start again from the login page");
    };
    let account = match github_account(&state, &code, &headers).await {
        Ok(account) => account,
        Err(why) => {
            tracing::warn!("dashboard: signing in with GitHub failed: {why}");
            return refused(StatusCode::BAD_GATEWAY, &why);
        }
    };
    let person = match state.store.user_by_github(&account).await {
        Ok(Some(person)) => person,
        Ok(None) => {
            let shown = super::refusal_log::shown(&account);
            return refused(
                StatusCode::FORBIDDEN,
                &format!(
                    "GitHub user {shown} has no login here: an admin links them with `executor users add NAME \
                     --github {shown}` (or `executor users github NAME {shown}`)"
                ),
            );
        }
        Err(e) => {
            tracing::warn!("dashboard: looking up a GitHub sign-in failed: {e}");
            return refused(StatusCode::SERVICE_UNAVAILABLE, "the database did not answer; try again");
        }
    };
    let Some(session) = session_cookie(&state, chrono::Utc::now().timestamp(), Some(person.id)) else {
        return refused(StatusCode::INTERNAL_SERVER_ERROR, "no randomness for a session");
    };
    // A page that moves on by itself rather than a redirect: the session cookie is SameSite=Strict, and
    // a redirect chain that began on github.com would not carry it to the first page.
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" \
         content=\"0;url=/\"><title>Signed in · executor</title></head><body><p>Signed in as {}. \
         <a href=\"/\">Go on to Needs you</a></p></body></html>",
        person.name
    );
    let mut response =
        (StatusCode::OK, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response();
    let clear = format!("{STATE_COOKIE}=; HttpOnly; SameSite=Lax; Path=/login/github; Max-Age=0");
    response.headers_mut().append(header::SET_COOKIE, session);
    if let Ok(clear) = HeaderValue::from_str(&clear) {
        response.headers_mut().append(header::SET_COOKIE, clear);
    }
    response
}
