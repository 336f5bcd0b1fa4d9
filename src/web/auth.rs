//! The security layer around every route: the dashboard token, same-origin checks against cross-site
//! request forgery, and the headers every answer carries.
//!
//! Who may do what:
//! - a read (GET/HEAD) on a loopback bind needs nothing; beyond loopback it needs the token (cookie or
//!   bearer);
//! - every other method needs the token: `Authorization: Bearer T` (API clients), or the cookie set by
//!   `?token=T` together with the same token again in the `X-Executor-CSRF` header or in a form field
//!   `csrf` (a page can read it only from its own server: see [`csrf_token`]); and when the request
//!   carries an `Origin`, it must be this server's own (`http://{Host}`), whatever the token.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;

/// The cookie `?token=` sets.
pub const COOKIE: &str = "executor_token";
/// The header a page's script sends the token in, with the cookie.
pub const CSRF_HEADER: &str = "x-executor-csrf";
/// The form field a page's form sends the token in, with the cookie.
pub const CSRF_FIELD: &str = "csrf";

/// Inline script and style are forbidden: only the server's own files run.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The largest form body read to find its `csrf` field.
const FORM_LIMIT: usize = 1 << 20;

/// Wraps every route with the security layer.
pub fn protect(routes: Router<AppState>, state: AppState) -> Router<AppState> {
    routes.layer(axum::middleware::from_fn_with_state(state, guard))
}

/// The token a page puts in its forms (a hidden field named [`CSRF_FIELD`]) or a script sends in the
/// [`CSRF_HEADER`] header, so that a state-changing request from the page passes [`protect`]. Another
/// site cannot read it: it is only ever in this server's own answers (and the HttpOnly cookie).
/// Templates must not put it anywhere but there (never in a URL: it would reach logs and history).
pub fn csrf_token(state: &AppState) -> &str {
    state.token.as_str()
}

async fn guard(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let api = req.uri().path().starts_with("/api/");
    let mut response = match admit(&state, req).await {
        Ok(Admitted::Pass(req)) => next.run(req).await,
        Ok(Admitted::Redirect(response)) => response,
        Err(refusal) => refusal.into_response(api),
    };
    secure_headers(response.headers_mut());
    response
}

/// What happens to an admitted request.
enum Admitted {
    Pass(Request),
    /// `?token=` was right: the cookie is set and the browser sent on without the token in the URL.
    Redirect(Response),
}

/// Why a request was refused.
struct Refusal {
    status: StatusCode,
    why: &'static str,
}

impl Refusal {
    fn unauthorized(why: &'static str) -> Refusal {
        Refusal { status: StatusCode::UNAUTHORIZED, why }
    }

    fn into_response(self, api: bool) -> Response {
        if api {
            (self.status, axum::Json(serde_json::json!({ "error": self.why }))).into_response()
        } else {
            (self.status, self.why).into_response()
        }
    }
}

async fn admit(state: &AppState, req: Request) -> Result<Admitted, Refusal> {
    let token = csrf_token(state);
    let reads = matches!(*req.method(), Method::GET | Method::HEAD);
    if reads && let Some(given) = query_token(req.uri().query()) {
        if !same_token(&given, token) {
            return Err(Refusal::unauthorized("wrong token in the URL"));
        }
        return Ok(Admitted::Redirect(set_cookie_and_redirect(&req, token)));
    }
    let headers = req.headers();
    let bearer = bearer(headers).is_some_and(|b| same_token(b, token));
    let cookie = cookie(headers).is_some_and(|c| same_token(c, token));
    if reads {
        if state.loopback || bearer || cookie {
            return Ok(Admitted::Pass(req));
        }
        return Err(Refusal::unauthorized(
            "this dashboard needs its token: open the URL `executor serve` printed, or send \
             Authorization: Bearer TOKEN",
        ));
    }
    if !same_origin(headers) {
        return Err(Refusal { status: StatusCode::FORBIDDEN, why: "request from another origin refused" });
    }
    if bearer {
        return Ok(Admitted::Pass(req));
    }
    if !cookie {
        return Err(Refusal::unauthorized(
            "a change needs the dashboard token: Authorization: Bearer TOKEN, or the page's cookie and form",
        ));
    }
    if headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok()).is_some_and(|v| same_token(v, token)) {
        return Ok(Admitted::Pass(req));
    }
    // A browser form: the token must also be in its `csrf` field. The body is read and put back.
    if !is_form(headers) {
        return Err(Refusal::unauthorized("the cookie needs the X-Executor-CSRF header or the csrf field"));
    }
    let (parts, body) = req.into_parts();
    let bytes: Bytes = axum::body::to_bytes(body, FORM_LIMIT)
        .await
        .map_err(|_| Refusal { status: StatusCode::PAYLOAD_TOO_LARGE, why: "form too large" })?;
    let field = form_field(&bytes, CSRF_FIELD);
    if !field.is_some_and(|f| same_token(&f, token)) {
        return Err(Refusal::unauthorized("the form's csrf field is missing or wrong"));
    }
    Ok(Admitted::Pass(Request::from_parts(parts, Body::from(bytes))))
}

/// Sets the cookie and sends the browser to the same address without `token=`.
fn set_cookie_and_redirect(req: &Request, token: &str) -> Response {
    let rest: Vec<&str> = req
        .uri()
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|pair| !pair.is_empty() && pair.split('=').next() != Some("token"))
        .collect();
    // One leading slash: "//host/…" would send the browser to another site.
    let mut location = format!("/{}", req.uri().path().trim_start_matches('/'));
    if !rest.is_empty() {
        location.push('?');
        location.push_str(&rest.join("&"));
    }
    let cookie = format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/");
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    // The token is letters and digits (see `cli::serve`) and the path came from a valid URI: both are
    // valid header values; if not, the browser is simply not redirected.
    if let (Ok(location), Ok(cookie)) = (HeaderValue::from_str(&location), HeaderValue::from_str(&cookie)) {
        headers.insert(header::LOCATION, location);
        headers.insert(header::SET_COOKIE, cookie);
    }
    response
}

fn query_token(query: Option<&str>) -> Option<String> {
    form_field(query?.as_bytes(), "token")
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::AUTHORIZATION)?.to_str().ok()?.strip_prefix("Bearer ").map(str::trim)
}

fn cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(COOKIE)?.strip_prefix('='))
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

/// Compares in time that depends only on the lengths, so the token cannot be guessed byte by byte.
/// An empty expected token matches nothing.
fn same_token(given: &str, expected: &str) -> bool {
    let (a, b) = (given.as_bytes(), expected.as_bytes());
    if b.is_empty() || a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The headers of every answer: no inline script, no sniffing, no referrer to other sites; HTML and
/// JSON not stored.
fn secure_headers(headers: &mut HeaderMap) {
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
    fn tokens_compare_whole() {
        assert!(same_token("abc", "abc"));
        assert!(!same_token("abd", "abc"));
        assert!(!same_token("ab", "abc"));
        assert!(!same_token("", ""));
    }

    #[test]
    fn form_fields_are_decoded() {
        assert_eq!(form_field(b"a=1&csrf=x%2By+z", "csrf").as_deref(), Some("x+y z"));
        assert_eq!(form_field(b"a=1", "csrf"), None);
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
