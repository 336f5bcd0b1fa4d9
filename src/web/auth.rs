//! The security layer around every route: the `Host` allowlist, the login, sessions and CSRF checks,
//! and the headers every answer carries.
//!
//! Who may do what:
//! - a request whose `Host` is not a loopback name or listed in `web.allowed_hosts` is refused (403),
//!   whatever it carries (see `host`);
//! - `GET /?token=TOKEN` (the URL `executor serve` prints, or a person's from `executor users add`) or
//!   `POST /login` with the token logs a browser in: an HttpOnly, SameSite=Strict session cookie that
//!   names the person (signed), and a redirect without the token;
//! - every other request, reads too, needs that session cookie or `Authorization: Bearer TOKEN` (the
//!   dashboard's or a person's); a page without either is the login page (401), the API answers
//!   `{"error": …}`; only `/static/` is open;
//! - a person revoked is refused at once, sessions too; each request needs its role
//!   (`person::needed_role`): a viewer reads, an approver acts, an admin manages people (403 otherwise);
//! - `POST /logout` ends the browser's session (see `session` for ending all of them);
//! - a change (any method but GET and HEAD) from a session needs the session's CSRF value too (form
//!   field `csrf` or header `X-Executor-CSRF`, an HMAC of the session: see `session`), and a request
//!   with an `Origin` must come from this server's own (`http://{Host}`), whatever it carries.
//!
//! Every refusal is logged with method, path, peer and reason; never a token or a query string.

use std::net::SocketAddr;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::person::{self, Person};
use super::refusal_log::{Burst, shown};
use super::session::{self, Auth, same};

/// The header a page's script sends the CSRF value in, with the cookie.
pub const CSRF_HEADER: &str = "x-executor-csrf";
/// The form field a page's form sends the CSRF value in, with the cookie.
pub const CSRF_FIELD: &str = "csrf";

/// Inline script and style are forbidden: only the server's own files run.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The largest form body read to find its `csrf` field (the routes' own limit, see `web::BODY_LIMIT`).
const FORM_LIMIT: usize = super::BODY_LIMIT;

/// The dashboard's refusals in the log, a burst at a time.
static REFUSALS: Burst = Burst::new("dashboard");

/// Wraps every route with the security layer.
pub fn protect(routes: Router<AppState>, state: AppState) -> Router<AppState> {
    routes.layer(axum::middleware::from_fn_with_state(state, guard))
}

/// What kind of answer a path expects when it fails: JSON for the API, `/metrics` and the live log's
/// event stream (read by scripts), an HTML page for the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Json,
    Page,
}

impl Kind {
    pub fn of(path: &str) -> Kind {
        if path.starts_with("/api/") || path == "/metrics" || path.ends_with("/log/stream") {
            Kind::Json
        } else {
            Kind::Page
        }
    }
}

async fn guard(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.to_string())
        .unwrap_or_else(|| "unknown".into());
    let host = host_of(&req).unwrap_or_default();
    let mut response = match admit(&state, req).await {
        Ok(Admitted::Pass(req)) => match req.extensions().get::<Person>().cloned() {
            Some(who) => person::answering(who, next.run(req)).await,
            None => next.run(req).await,
        },
        Ok(Admitted::Answer(response)) => response,
        Err(refusal) => {
            // The path only: a query string may hold a token. Both cut: a stranger chose them.
            REFUSALS.warn(|| {
                format!(
                    "dashboard refused {method} {} from {peer} (Host {:?}): {} {}",
                    shown(&path),
                    shown(&host),
                    refusal.status.as_u16(),
                    refusal.why
                )
            });
            let github = state.github_login_secret.is_some() && state.config.web.github_login.is_some();
            refusal.into_response(Kind::of(&path), &host, &path, github)
        }
    };
    secure_headers(response.headers_mut());
    response
}

/// What happens to an admitted request.
enum Admitted {
    /// On to the route, with its [`Auth`] in the extensions (none for `/static/`).
    Pass(Request),
    /// Answered here: a login's cookie and redirect.
    Answer(Response),
}

/// Why a request was refused.
struct Refusal {
    status: StatusCode,
    why: String,
    /// A page answers with the login form rather than an error.
    login: bool,
}

impl Refusal {
    fn new(status: StatusCode, why: impl Into<String>) -> Refusal {
        Refusal { status, why: why.into(), login: false }
    }

    fn login(why: impl Into<String>) -> Refusal {
        Refusal { status: StatusCode::UNAUTHORIZED, why: why.into(), login: true }
    }

    /// The answer: JSON for the API, else the login page (offering GitHub when `github`) or an error page.
    fn into_response(self, kind: Kind, host: &str, path: &str, github: bool) -> Response {
        match kind {
            Kind::Json => (self.status, axum::Json(serde_json::json!({ "error": self.why }))).into_response(),
            Kind::Page if self.login => super::pages::login_page(self.status, &self.why, host, path, github),
            Kind::Page => super::pages::error_page(self.status, &self.why),
        }
    }
}

fn host_of(req: &Request) -> Option<String> {
    match req.headers().get(header::HOST) {
        Some(h) => h.to_str().ok().map(str::to_string),
        None => req.uri().authority().map(|a| a.to_string()),
    }
}

async fn admit(state: &AppState, mut req: Request) -> Result<Admitted, Refusal> {
    // Two names for one request: RFC 9112 (3.2) says 400, and neither is to be believed.
    if req.headers().get_all(header::HOST).iter().nth(1).is_some() {
        return Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            "a request names its host once (two Host headers)",
        ));
    }
    let host = host_of(&req).unwrap_or_default();
    if !super::host::allowed(&host, &state.config.web.allowed_hosts) {
        return Err(Refusal::new(
            StatusCode::FORBIDDEN,
            format!(
                "this dashboard does not answer to the host name {:?}: open it as localhost or \
                 127.0.0.1, or list the name in web.allowed_hosts",
                shown(&host)
            ),
        ));
    }
    let reads = matches!(*req.method(), Method::GET | Method::HEAD);
    // The stylesheet and the script: the login page needs them, and they hold nothing of the queue.
    if reads && req.uri().path().starts_with("/static/") {
        return Ok(Admitted::Pass(req));
    }
    // "Sign in with GitHub": how a session starts, so open; the callback checks its own state.
    if reads && matches!(req.uri().path(), "/login/github" | "/login/github/callback") {
        return Ok(Admitted::Pass(req));
    }
    let now = chrono::Utc::now().timestamp();
    if reads && let Some(given) = query_token(req.uri().query()) {
        let Some(who) = whose_token(state, &given).await? else {
            return Err(Refusal::login("the token in the address is not this dashboard's or anyone's"));
        };
        let location = without_token(&req);
        return log_in(state, now, &location, who.id).map(Admitted::Answer);
    }
    let headers = req.headers();
    if req.method() == Method::POST && req.uri().path() == "/login" {
        if !same_origin(headers) {
            return Err(Refusal::new(StatusCode::FORBIDDEN, "a login from another origin refused"));
        }
        let (_, body) = req.into_parts();
        let bytes = axum::body::to_bytes(body, FORM_LIMIT)
            .await
            .map_err(|_| Refusal::new(StatusCode::PAYLOAD_TOO_LARGE, "form too large"))?;
        let given = form_field(&bytes, "token").unwrap_or_default();
        let Some(who) = whose_token(state, given.trim()).await? else {
            return Err(Refusal::login("that is not this dashboard's token or anyone's"));
        };
        let next = form_field(&bytes, "next").unwrap_or_default();
        return log_in(state, now, &local_path(&next), who.id).map(Admitted::Answer);
    }
    let (auth, who) = match authenticated(state, headers, now) {
        Some(auth) => {
            let who = person_of(state, &auth).await?;
            (auth, who)
        }
        None => match bearer(headers) {
            Some(given) if given.starts_with(person::TOKEN_PREFIX) => {
                match whose_token(state, given).await? {
                    Some(who) => (Auth::Bearer, who),
                    None => return Err(Refusal::login("that bearer token is no one's (revoked?)")),
                }
            }
            _ => {
                return Err(Refusal::login(
                    "this dashboard needs you to log in: open the URL `executor serve` (or `executor users \
                     add`) printed, or send Authorization: Bearer TOKEN",
                ));
            }
        },
    };
    let needed = person::needed_role(req.method(), req.uri().path());
    if !who.role.allows(needed) {
        return Err(Refusal::new(StatusCode::FORBIDDEN, who.not_allowed(needed)));
    }
    if reads {
        req.extensions_mut().insert(auth);
        req.extensions_mut().insert(who);
        return Ok(Admitted::Pass(req));
    }
    if !same_origin(headers) {
        return Err(Refusal::new(StatusCode::FORBIDDEN, "request from another origin refused"));
    }
    // No CSRF value asked: every page has the button, and a forged logout from a page on another
    // site carries no cookie (SameSite=Strict) or another Origin.
    if req.method() == Method::POST && req.uri().path() == "/logout" {
        return log_out(state, &auth).map(Admitted::Answer);
    }
    if auth == Auth::Bearer
        || headers
            .get(CSRF_HEADER)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| state.keys.csrf_ok(&auth, v))
    {
        req.extensions_mut().insert(auth);
        req.extensions_mut().insert(who);
        return Ok(Admitted::Pass(req));
    }
    // A browser form: the session's CSRF value must be in its `csrf` field. The body is read and put back.
    if !is_form(headers) {
        return Err(Refusal::new(
            StatusCode::FORBIDDEN,
            "a change from a browser needs the page's X-Executor-CSRF header or csrf field",
        ));
    }
    let (mut parts, body) = req.into_parts();
    let bytes: Bytes = axum::body::to_bytes(body, FORM_LIMIT)
        .await
        .map_err(|_| Refusal::new(StatusCode::PAYLOAD_TOO_LARGE, "form too large"))?;
    let field = form_field(&bytes, CSRF_FIELD).unwrap_or_default();
    if !state.keys.csrf_ok(&auth, &field) {
        return Err(Refusal::new(
            StatusCode::FORBIDDEN,
            "the form's csrf field is missing or not this session's: reload the page and try again",
        ));
    }
    parts.extensions.insert(auth);
    parts.extensions.insert(who);
    Ok(Admitted::Pass(Request::from_parts(parts, Body::from(bytes))))
}

/// Who a token belongs to (see `person::whose_token`).
async fn whose_token(state: &AppState, given: &str) -> Result<Option<Person>, Refusal> {
    person::whose_token(&state.store, &state.token, given).await.map_err(unavailable)
}

/// Who an authenticated request is from: the person its session names (refused once they are revoked),
/// or the token's holder.
async fn person_of(state: &AppState, auth: &Auth) -> Result<Person, Refusal> {
    let Auth::Session(id) = auth else { return Ok(Person::token_holder()) };
    let Some(user_id) = session::person_of(id) else { return Ok(Person::token_holder()) };
    match state.store.user(user_id).await.map_err(unavailable)? {
        Some(u) if u.active() => Ok(Person::from(u)),
        _ => Err(Refusal::login("your access to this dashboard was revoked; ask an admin for a new login")),
    }
}

fn unavailable(e: crate::store::StoreError) -> Refusal {
    tracing::warn!("dashboard: looking up a person failed: {e}");
    Refusal::new(StatusCode::SERVICE_UNAVAILABLE, "the database did not answer; try again")
}

/// Who `headers` say the request is from: the token as a bearer, or a session this server signed.
pub fn authenticated(state: &AppState, headers: &HeaderMap, now: i64) -> Option<Auth> {
    if bearer(headers).is_some_and(|b| same(b, &state.token)) {
        return Some(Auth::Bearer);
    }
    cookie(headers, session::COOKIE).and_then(|c| state.keys.session(c, now)).map(Auth::Session)
}

/// A new session for `person` (`None`: the token's holder): its cookie, and a redirect to `location` (a
/// path of this server).
fn log_in(state: &AppState, now: i64, location: &str, person: Option<i64>) -> Result<Response, Refusal> {
    let cookie = session_cookie(state, now, person)
        .ok_or_else(|| Refusal::new(StatusCode::INTERNAL_SERVER_ERROR, "no randomness for a session"))?;
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    // The path came from a valid URI: a valid header value; if not, the browser is simply not redirected.
    if let Ok(location) = HeaderValue::from_str(location) {
        headers.insert(header::LOCATION, location);
        headers.insert(header::SET_COOKIE, cookie);
    }
    Ok(response)
}

/// The `Set-Cookie` of a new session for `person` (`None`: the token's holder); `None` without
/// randomness.
pub(super) fn session_cookie(state: &AppState, now: i64, person: Option<i64>) -> Option<HeaderValue> {
    let value = state.keys.new_session(now, person)?;
    let cookie = format!(
        "{}={value}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        session::COOKIE,
        session::MAX_AGE_SECS
    );
    // The session is digits, dots and hex: a valid header value.
    HeaderValue::from_str(&cookie).ok()
}

/// Ends the session (kept ended across restarts), clears its cookie and sends the browser to the
/// login page.
fn log_out(state: &AppState, auth: &Auth) -> Result<Response, Refusal> {
    if let Auth::Session(id) = auth {
        state.keys.end_session(id).map_err(|e| {
            tracing::warn!("dashboard: recording a logout failed: {e}");
            Refusal::new(StatusCode::INTERNAL_SERVER_ERROR, "the logout could not be recorded; try again")
        })?;
    }
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    headers.insert(header::LOCATION, HeaderValue::from_static("/"));
    let cleared = format!("{}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0", session::COOKIE);
    if let Ok(cleared) = HeaderValue::from_str(&cleared) {
        headers.insert(header::SET_COOKIE, cleared);
    }
    Ok(response)
}

/// The request's path and query without `token=`.
fn without_token(req: &Request) -> String {
    let rest: Vec<&str> = req
        .uri()
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|pair| !pair.is_empty() && pair.split('=').next() != Some("token"))
        .collect();
    let mut location = local_path(req.uri().path());
    if !rest.is_empty() {
        location.push('?');
        location.push_str(&rest.join("&"));
    }
    location
}

/// A path on this server: one leading slash ("//host/…" or "/\host" would send the browser to
/// another site), and no characters a header cannot hold.
fn local_path(path: &str) -> String {
    let trimmed = path.trim_start_matches(['/', '\\']);
    if trimmed.chars().any(|c| c.is_control()) {
        return "/".into();
    }
    format!("/{trimmed}")
}

fn query_token(query: Option<&str>) -> Option<String> {
    form_field(query?.as_bytes(), "token")
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::AUTHORIZATION)?.to_str().ok()?.strip_prefix("Bearer ").map(str::trim)
}

/// The value of cookie `name`.
pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(name)?.strip_prefix('='))
}

/// No `Origin` (curl, old browsers on same-origin GETs) or this server's own: `http://` + `Host`.
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    match (origin.to_str().ok(), host) {
        (Some(origin), Some(host)) => origin.strip_prefix("http://") == Some(host),
        _ => false,
    }
}

/// The first value of `name` in an `application/x-www-form-urlencoded` text.
fn form_field(body: &[u8], name: &str) -> Option<String> {
    form_fields(body).into_iter().find_map(|(k, v)| (k == name).then_some(v))
}

/// Every (name, value) of an `application/x-www-form-urlencoded` text, decoded, in order; nothing if
/// the text is not UTF-8.
pub(crate) fn form_fields(body: &[u8]) -> Vec<(String, String)> {
    let Ok(text) = std::str::from_utf8(body) else { return Vec::new() };
    text.split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(key), decode(value))
        })
        .collect()
}

/// Whether a request's body is a browser form.
pub(crate) fn is_form(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"))
}

fn decode(text: &str) -> String {
    percent_encoding::percent_decode_str(&text.replace('+', " ")).decode_utf8_lossy().into_owned()
}

/// The headers of every answer: no inline script, no sniffing, no referrer to other sites; HTML and
/// JSON not stored.
pub(super) fn secure_headers(headers: &mut HeaderMap) {
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // Not "no-referrer": under it browsers send `Origin: null` with every form POST (the Fetch
    // standard), which the same-origin check must refuse. "same-origin" still tells other sites nothing.
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    // A handler that chose its own caching (the static files) keeps it.
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_fields_are_decoded() {
        assert_eq!(form_field(b"a=1&csrf=x%2By+z", "csrf").as_deref(), Some("x+y z"));
        assert_eq!(form_field(b"a=1", "csrf"), None);
    }

    #[test]
    fn redirects_stay_on_this_server() {
        assert_eq!(local_path("//evil.example/x"), "/evil.example/x");
        assert_eq!(local_path("/\\evil.example"), "/evil.example");
        assert_eq!(local_path("https://evil.example"), "/https://evil.example");
        assert_eq!(local_path("/runs?x=1"), "/runs?x=1");
        assert_eq!(local_path("/a\r\nSet-Cookie: x"), "/");
    }

    #[test]
    fn origin_must_be_this_host() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8370"));
        assert!(same_origin(&h));
        h.insert(header::ORIGIN, HeaderValue::from_static("http://127.0.0.1:8370"));
        assert!(same_origin(&h));
        h.insert(header::ORIGIN, HeaderValue::from_static("http://evil.example"));
        assert!(!same_origin(&h));
        h.insert(header::ORIGIN, HeaderValue::from_static("null"));
        assert!(!same_origin(&h));
    }
}
