//! The client against a scripted HTTP server on 127.0.0.1: each test lists the answers the server
//! gives, in order, and checks what the client made of them and what the server was sent.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap as AxumHeaders, Method as AxumMethod, Uri};
use chrono::{DateTime, TimeDelta, Utc};
use reqwest::Method;
use serde_json::{Value, json};

use super::*;
use crate::config::{Duration, GitHub};

const TOKEN: &str = "ghp_test_token_that_must_not_leak";

#[derive(Clone, Default)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    delay: std::time::Duration,
}

fn reply(status: u16, body: Value) -> Reply {
    Reply { status, body: body.to_string(), ..Reply::default() }
}

impl Reply {
    fn header(mut self, name: &str, value: impl ToString) -> Reply {
        self.headers.push((name.into(), value.to_string()));
        self
    }
}

#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    headers: AxumHeaders,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// A server that answers with its scripted replies, in order, and records every request.
struct Fake {
    url: String,
    port: u16,
    replies: Arc<Mutex<VecDeque<Reply>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Fake {
    async fn start(replies: Vec<Reply>) -> Fake {
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (r, s) = (replies.clone(), seen.clone());
        let app = axum::Router::new().fallback(
            move |method: AxumMethod, uri: Uri, headers: AxumHeaders, body: String| {
                let (replies, seen) = (r.clone(), s.clone());
                async move {
                    let path = uri.path_and_query().map(|p| p.to_string()).unwrap_or_default();
                    seen.lock().unwrap().push(Seen { method: method.to_string(), path, headers, body });
                    let next = replies.lock().unwrap().pop_front();
                    let reply = next.unwrap_or_else(|| reply(599, json!({"message": "no reply scripted"})));
                    tokio::time::sleep(reply.delay).await;
                    let mut response = axum::http::Response::builder().status(reply.status);
                    for (name, value) in &reply.headers {
                        response = response.header(name, value);
                    }
                    response.body(axum::body::Body::from(reply.body)).unwrap()
                }
            },
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Fake { url: format!("http://127.0.0.1:{port}"), port, replies, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn push(&self, reply: Reply) {
        self.replies.lock().unwrap().push_back(reply);
    }
}

fn config(url: &str) -> GitHub {
    GitHub {
        api_url: url.into(),
        request_timeout: Duration::secs(10),
        reserve_points: 1000,
        ..GitHub::default()
    }
}

fn client(fake: &Fake) -> GitHubClient {
    GitHubClient::with_sources(&config(&fake.url), TokenSources::given(TOKEN)).unwrap()
}

fn in_an_hour() -> DateTime<Utc> {
    DateTime::from_timestamp(Utc::now().timestamp() + 3600, 0).unwrap()
}

#[tokio::test]
async fn graphql_returns_data_and_records_the_rate_limit_it_reports() {
    let reset = in_an_hour();
    let data = json!({"rateLimit": {"cost": 3, "remaining": 4990, "resetAt": reset.to_rfc3339()}, "viewer": {"login": "x"}});
    let fake = Fake::start(vec![reply(200, json!({ "data": data }))]).await;
    let gh = client(&fake);

    let answer = gh.graphql("query { viewer { login } }", json!({"n": 1})).await.unwrap();

    assert_eq!(answer, data);
    let seen = fake.seen();
    assert_eq!((seen[0].method.as_str(), seen[0].path.as_str()), ("POST", "/graphql"));
    assert_eq!(seen[0].header("authorization"), Some(format!("Bearer {TOKEN}").as_str()));
    assert!(seen[0].header("user-agent").unwrap().starts_with("executor/"));
    let sent: Value = serde_json::from_str(&seen[0].body).unwrap();
    assert_eq!(sent, json!({"query": "query { viewer { login } }", "variables": {"n": 1}}));
    assert_eq!(gh.counts(), RequestCounts { rest: 0, graphql: 1, graphql_points: 3, not_modified: 0 });
    assert_eq!(gh.rate().graphql_remaining, Some(4990));
    assert_eq!(gh.rate().graphql_reset, Some(reset));
}

#[tokio::test]
async fn graphql_errors_make_the_answer_partial_even_with_data() {
    let fake = Fake::start(vec![reply(
        200,
        json!({"data": {"a": {"number": 1}, "b": null}, "errors": [
            {"type": "NOT_FOUND", "message": "Could not resolve to a PullRequest with the number of 9."},
            {"message": "Something else"}
        ]}),
    )])
    .await;
    let err = client(&fake).graphql("query { a }", json!({})).await.unwrap_err();
    match err {
        GitHubError::Partial(m) => {
            assert!(m.contains("number of 9") && m.contains("Something else"), "{m}")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_rate_limited_graphql_error_is_a_rate_limit_not_a_partial_answer() {
    let fake = Fake::start(vec![
        reply(200, json!({"errors": [{"type": "RATE_LIMITED", "message": "API rate limit exceeded"}]}))
            .header("x-ratelimit-remaining", 0)
            .header("x-ratelimit-reset", in_an_hour().timestamp())
            .header("x-ratelimit-resource", "graphql"),
    ])
    .await;
    let gh = client(&fake);
    let err = gh.graphql("query { a }", json!({})).await.unwrap_err();
    assert!(err.is_rate_limit(), "{err:?}");
    assert!(gh.graphql("query { a }", json!({})).await.unwrap_err().is_rate_limit());
    assert_eq!(fake.seen().len(), 1, "the second call was refused without a request");
}

#[tokio::test]
async fn graphql_at_the_reserve_is_refused_without_a_request() {
    let data = json!({"rateLimit": {"cost": 1, "remaining": 1000, "resetAt": in_an_hour().to_rfc3339()}});
    let fake =
        Fake::start(vec![reply(200, json!({ "data": data })), reply(200, json!({"resources": {}}))]).await;
    let gh = client(&fake);
    gh.graphql("query { a }", json!({})).await.unwrap();

    let err = gh.graphql("query { a }", json!({})).await.unwrap_err();

    match &err {
        GitHubError::RateLimited { until, why } => {
            assert_eq!(*until, gh.rate().graphql_reset.unwrap());
            assert!(why.contains("reserve"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(fake.seen().len(), 1);
    assert_eq!(gh.counts().graphql, 1);
    gh.rest(Method::GET, "/rate_limit", None).await.unwrap(); // REST is not held back by the reserve
    assert_eq!(fake.seen().len(), 2);
}

#[tokio::test]
async fn retry_after_blocks_the_calls_that_follow() {
    let fake = Fake::start(vec![
        reply(403, json!({"message": "You have exceeded a secondary rate limit."}))
            .header("retry-after", 120),
    ])
    .await;
    let gh = client(&fake);
    let before = Utc::now();

    let err = gh.rest(Method::GET, "/repos/o/r/pulls", None).await.unwrap_err();

    let GitHubError::RateLimited { until, .. } = err else { panic!("{err:?}") };
    assert!(until >= before + TimeDelta::seconds(120) && until <= Utc::now() + TimeDelta::seconds(120));
    assert!(gh.rest(Method::GET, "/repos/o/r/pulls", None).await.unwrap_err().is_rate_limit());
    assert!(gh.graphql("query { a }", json!({})).await.unwrap_err().is_rate_limit());
    assert!(gh.get_if_changed("/x").await.unwrap_err().is_rate_limit());
    assert!(gh.download_text("/x", 10).await.unwrap_err().is_rate_limit());
    assert_eq!(fake.seen().len(), 1, "nothing sent while blocked");
    assert_eq!(gh.rate().blocked_until, Some(until));
}

#[tokio::test]
async fn an_exhausted_limit_blocks_until_its_reset() {
    let reset = in_an_hour();
    let fake = Fake::start(vec![
        reply(429, json!({"message": "API rate limit exceeded"}))
            .header("x-ratelimit-remaining", 0)
            .header("x-ratelimit-reset", reset.timestamp())
            .header("x-ratelimit-resource", "core"),
    ])
    .await;
    let gh = client(&fake);
    let err = gh
        .rest(Method::POST, "/repos/o/r/issues/1/labels", Some(&json!({"labels": ["x"]})))
        .await
        .unwrap_err();
    let GitHubError::RateLimited { until, .. } = err else { panic!("{err:?}") };
    assert_eq!(until, reset);
    assert_eq!(gh.rate().blocked_until, Some(reset));
    assert_eq!(gh.rate().rest_remaining, Some(0));
}

#[tokio::test]
async fn a_secondary_limit_without_headers_backs_off_at_least_a_minute() {
    let fake = Fake::start(vec![reply(
        403,
        json!({"message": "You have exceeded a secondary rate limit. Please wait."}),
    )])
    .await;
    let gh = client(&fake);
    let before = Utc::now();
    let err = gh.rest(Method::GET, "/x", None).await.unwrap_err();
    let GitHubError::RateLimited { until, why } = err else { panic!("{err:?}") };
    assert!(until >= before + TimeDelta::seconds(60), "{until} {before}");
    assert!(until <= Utc::now() + TimeDelta::seconds(72), "at most 20% jitter");
    assert!(why.contains("secondary"), "{why}");
}

#[tokio::test]
async fn a_forbidden_answer_that_is_no_rate_limit_is_http_403() {
    let fake =
        Fake::start(vec![reply(403, json!({"message": "Resource not accessible by integration"}))]).await;
    let gh = client(&fake);
    let err = gh.rest(Method::POST, "/repos/o/r/issues/1/labels", None).await.unwrap_err();
    assert!(
        matches!(&err, GitHubError::Http { status: 403, message } if message.contains("not accessible")),
        "{err:?}"
    );
    assert_eq!(gh.rate().blocked_until, None);
}

#[tokio::test]
async fn a_conditional_get_sends_the_etag_and_304_means_unchanged() {
    let fake = Fake::start(vec![
        reply(200, json!([{"number": 1}])).header("etag", "W/\"abc\""),
        reply(304, json!(null)).header("etag", "W/\"abc\""),
    ])
    .await;
    let gh = client(&fake);
    let path = "/repos/o/r/pulls?state=open&sort=updated&direction=desc&per_page=100";

    assert_eq!(gh.get_if_changed(path).await.unwrap(), Some(json!([{"number": 1}])));
    assert_eq!(gh.get_if_changed(path).await.unwrap(), None);

    let seen = fake.seen();
    assert_eq!(seen[0].path, path);
    assert_eq!(seen[0].header("if-none-match"), None);
    assert_eq!(seen[1].header("if-none-match"), Some("W/\"abc\""));
    assert_eq!(seen[1].header("accept"), Some("application/vnd.github+json"));
    assert_eq!(seen[1].header("x-github-api-version"), Some("2022-11-28"));
    assert_eq!(gh.counts(), RequestCounts { rest: 2, graphql: 0, graphql_points: 0, not_modified: 1 });

    gh.forget_etag(path);
    fake.push(reply(200, json!([])));
    assert_eq!(gh.get_if_changed(path).await.unwrap(), Some(json!([])));
    assert_eq!(fake.seen()[2].header("if-none-match"), None);
}

#[tokio::test]
async fn rest_returns_the_json_body_or_null_when_empty() {
    let fake = Fake::start(vec![
        reply(201, json!({"id": 5})).header("x-ratelimit-remaining", 4999).header("x-ratelimit-reset", 1),
        Reply { status: 204, ..Reply::default() },
    ])
    .await;
    let gh = client(&fake);
    let body = json!({"body": "hello"});
    assert_eq!(
        gh.rest(Method::POST, "/repos/o/r/issues/3/comments", Some(&body)).await.unwrap(),
        json!({"id": 5})
    );
    assert_eq!(gh.rest(Method::PUT, "/x", None).await.unwrap(), Value::Null);
    let seen = fake.seen();
    assert_eq!(seen[0].method, "POST");
    assert_eq!(serde_json::from_str::<Value>(&seen[0].body).unwrap(), body);
    assert_eq!(gh.rate().rest_remaining, Some(4999));
}

#[tokio::test]
async fn error_answers_map_to_their_kinds() {
    let fake = Fake::start(vec![
        reply(500, json!({"message": "Server Error"})),
        reply(404, json!({"message": "Not Found"})),
        Reply { status: 200, body: "<html>not json".into(), ..Reply::default() },
        Reply { status: 200, body: "{\"data\": ".into(), ..Reply::default() },
        reply(200, json!({"data": null})),
    ])
    .await;
    let gh = client(&fake);
    let e500 = gh.rest(Method::GET, "/a", None).await.unwrap_err();
    assert!(
        matches!(&e500, GitHubError::Http { status: 500, message } if message == "Server Error"),
        "{e500:?}"
    );
    let e404 = gh.rest(Method::GET, "/repos/o/gone", None).await.unwrap_err();
    assert!(matches!(&e404, GitHubError::NotFound(m) if m.contains("/repos/o/gone")), "{e404:?}");
    assert!(matches!(gh.rest(Method::GET, "/c", None).await.unwrap_err(), GitHubError::Malformed(_)));
    assert!(matches!(gh.graphql("q", json!({})).await.unwrap_err(), GitHubError::Malformed(_)));
    assert!(matches!(gh.graphql("q", json!({})).await.unwrap_err(), GitHubError::Malformed(_)));
}

#[tokio::test]
async fn a_slow_answer_is_a_timeout() {
    let fake = Fake::start(vec![Reply {
        status: 200,
        body: "{}".into(),
        delay: std::time::Duration::from_secs(5),
        ..Reply::default()
    }])
    .await;
    let mut config = config(&fake.url);
    config.request_timeout = Duration(std::time::Duration::from_millis(200));
    let gh = GitHubClient::with_sources(&config, TokenSources::given(TOKEN)).unwrap();
    assert!(matches!(gh.graphql("q", json!({})).await.unwrap_err(), GitHubError::Timeout));
}

#[tokio::test]
async fn a_closed_port_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let gh = GitHubClient::with_sources(&config(&url), TokenSources::given(TOKEN)).unwrap();
    let err = gh.rest(Method::GET, "/x", None).await.unwrap_err();
    assert!(matches!(err, GitHubError::Transport(_)), "{err:?}");
}

#[tokio::test]
async fn a_refused_token_says_where_it_came_from_and_never_shows_it() {
    let fake = Fake::start(vec![reply(401, json!({"message": "Bad credentials"}))]).await;
    let gh = client(&fake);
    let err = gh.rest(Method::GET, "/user", None).await.unwrap_err();
    let shown = format!("{err} {err:?} {gh:?}");
    assert!(matches!(err, GitHubError::Auth(_)));
    assert!(shown.contains("the token given to executor") && shown.contains("Bad credentials"), "{shown}");
    assert!(!shown.contains(TOKEN), "{shown}");
}

#[tokio::test]
async fn a_job_log_is_downloaded_from_another_host_without_the_token_keeping_the_tail() {
    // Lines of "é" (two bytes), so a cut at an odd byte count falls inside a character and a line.
    let log = "ééééééééé\n".repeat(4_000);
    let storage = Fake::start(vec![Reply { status: 200, body: log.clone(), ..Reply::default() }]).await;
    // Another host: "localhost" is not "127.0.0.1", whatever the port.
    let location = format!("http://localhost:{}/logs/123?sig=secret", storage.port);
    let api =
        Fake::start(vec![Reply { status: 302, ..Reply::default() }.header("location", &location)]).await;
    let gh = client(&api);

    let text = gh.download_text("/repos/o/r/actions/jobs/123/logs", 1001).await.unwrap();

    // The last 1001 bytes hold 52 whole lines of 19 bytes; the line the cut lands in is dropped.
    assert_eq!(text, "ééééééééé\n".repeat(52), "the last 1001 bytes, from a whole line");
    let (to_api, to_storage) = (&api.seen()[0], &storage.seen()[0]);
    assert_eq!(to_api.path, "/repos/o/r/actions/jobs/123/logs");
    assert_eq!(to_api.header("authorization"), Some(format!("Bearer {TOKEN}").as_str()));
    assert_eq!(to_storage.path, "/logs/123?sig=secret");
    assert_eq!(to_storage.header("authorization"), None);
    assert_eq!(gh.counts().rest, 2);
}

#[tokio::test]
async fn a_download_redirected_within_the_api_keeps_the_token() {
    let api = Fake::start(vec![
        Reply { status: 302, ..Reply::default() }.header("location", "/blob/1"),
        Reply { status: 200, body: "line 1\nline 2\n".into(), ..Reply::default() },
    ])
    .await;
    let gh = client(&api);
    assert_eq!(gh.download_text("/logs", 1000).await.unwrap(), "line 1\nline 2\n");
    let seen = api.seen();
    assert_eq!(seen[1].path, "/blob/1");
    assert!(seen[1].header("authorization").is_some());
}

#[tokio::test]
async fn an_expired_log_is_not_found() {
    let api = Fake::start(vec![reply(404, json!({"message": "Not Found"}))]).await;
    let err = client(&api).download_text("/repos/o/r/actions/jobs/1/logs", 10).await.unwrap_err();
    assert!(matches!(err, GitHubError::NotFound(_)), "{err:?}");
}

#[test]
fn the_tail_starts_at_a_whole_line() {
    assert_eq!(last_bytes_as_text("abc".as_bytes(), 10), "abc");
    assert_eq!(last_bytes_as_text("one\ntwo é\nthree".as_bytes(), 9), "three");
    assert_eq!(last_bytes_as_text("aé".as_bytes(), 1), "");
    assert_eq!(last_bytes_as_text("x é b".as_bytes(), 4), "b");
}

/// Issue 32 item 1, on GitHub: a CI log cut inside a token kept its random part, which reached the
/// fix_ci prompt; the line the cut lands in is dropped.
#[test]
fn a_log_tail_cut_inside_a_token_keeps_no_part_of_it() {
    let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
    let log = format!("step 1\nexport GH_TOKEN={token}\nerror: tests failed\n");
    for max in 20..log.len() - 25 {
        let tail = last_bytes_as_text(log.as_bytes(), max);
        for piece in token.as_bytes().windows(12) {
            let piece = std::str::from_utf8(piece).unwrap();
            assert!(!tail.contains(piece), "cut at {max} kept {piece:?}: {tail:?}");
        }
    }
}

#[test]
fn the_graphql_endpoint_follows_the_api_url() {
    let mut c = config("https://ghe.example.com/api/v3/");
    let gh = GitHubClient::with_sources(&c, TokenSources::given(TOKEN)).unwrap();
    assert_eq!(gh.api_url, "https://ghe.example.com/api/v3");
    assert_eq!(gh.graphql_url, "https://ghe.example.com/api/graphql");
    c.api_url = "not a url".into();
    assert!(GitHubClient::with_sources(&c, TokenSources::given(TOKEN)).is_err());
}

// --- The GitHub App flow: the JWT, the installation token, its renewal. ---

const APP_KEY: &str = include_str!("../testdata/app_key_pkcs1.pem");
const APP_PUBLIC_KEY: &[u8] = include_bytes!("../testdata/app_key_public_pkcs1.der");

fn app_client(api: &Fake, key_path: &std::path::Path) -> GitHubClient {
    let mut sources = TokenSources::given("unused");
    sources.given = None;
    sources.app = Some(crate::github::AppSettings {
        app_id: 42,
        installation_id: 7,
        private_key_path: key_path.to_path_buf(),
    });
    GitHubClient::with_sources(&config(&api.url), sources).unwrap()
}

fn token_reply(token: &str, expires_at: DateTime<Utc>) -> Reply {
    reply(
        201,
        json!({"token": token, "expires_at": expires_at.to_rfc3339(), "permissions": {"pull_requests": "write"}}),
    )
}

/// Checks the JWT's RS256 signature with the key's public half and returns its claims.
fn verified_claims(authorization: &str) -> Value {
    use base64::Engine;
    let jwt = authorization.strip_prefix("Bearer ").unwrap();
    let (signed, signature) = jwt.rsplit_once('.').unwrap();
    let signature = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(signature).unwrap();
    ring::signature::UnparsedPublicKey::new(&ring::signature::RSA_PKCS1_2048_8192_SHA256, APP_PUBLIC_KEY)
        .verify(signed.as_bytes(), &signature)
        .expect("the JWT is signed with the App's key");
    let (header, claims) = signed.split_once('.').unwrap();
    let decode = |part: &str| -> Value {
        serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(part).unwrap())
            .unwrap()
    };
    assert_eq!(decode(header), json!({"alg": "RS256", "typ": "JWT"}));
    decode(claims)
}

#[tokio::test]
async fn a_github_app_signs_a_jwt_and_uses_the_installation_token_until_near_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let key_path = dir.path().join("app.pem");
    std::fs::write(&key_path, APP_KEY).unwrap();
    let api = Fake::start(vec![
        token_reply("ghs_first", in_an_hour()),
        reply(200, json!({"n": 1})),
        reply(200, json!({"n": 2})),
    ])
    .await;
    let gh = app_client(&api, &key_path);

    gh.rest(Method::GET, "/repos/o/r", None).await.unwrap();
    gh.rest(Method::GET, "/repos/o/r", None).await.unwrap();

    let seen = api.seen();
    assert_eq!(seen.len(), 3, "one installation token for both calls");
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("POST", "/app/installations/7/access_tokens")
    );
    let claims = verified_claims(seen[0].header("authorization").unwrap());
    assert_eq!(claims["iss"], json!("42"));
    let (iat, exp) = (claims["iat"].as_i64().unwrap(), claims["exp"].as_i64().unwrap());
    assert_eq!(exp - iat, 600);
    assert!(iat <= Utc::now().timestamp() - 60 && exp > Utc::now().timestamp());
    assert_eq!(seen[1].header("authorization"), Some("Bearer ghs_first"));
    assert_eq!(seen[2].header("authorization"), Some("Bearer ghs_first"));
    assert_eq!(gh.counts().rest, 3);
}

#[tokio::test]
async fn an_installation_token_close_to_expiry_is_renewed() {
    let dir = tempfile::tempdir().unwrap();
    let key_path = dir.path().join("app.pem");
    std::fs::write(&key_path, include_str!("../testdata/app_key_pkcs8.pem")).unwrap();
    // Four minutes left: inside the five-minute margin, so every call mints a new one.
    let soon = Utc::now() + TimeDelta::minutes(4);
    let api = Fake::start(vec![
        token_reply("ghs_one", soon),
        reply(200, json!({})),
        token_reply("ghs_two", in_an_hour()),
        reply(200, json!({})),
    ])
    .await;
    let gh = app_client(&api, &key_path);
    gh.rest(Method::GET, "/a", None).await.unwrap();
    gh.rest(Method::GET, "/b", None).await.unwrap();
    let seen = api.seen();
    assert_eq!(seen[1].header("authorization"), Some("Bearer ghs_one"));
    assert_eq!(seen[2].path, "/app/installations/7/access_tokens");
    assert_eq!(seen[3].header("authorization"), Some("Bearer ghs_two"));
}

#[tokio::test]
async fn a_refused_app_is_an_auth_error_naming_the_app() {
    let dir = tempfile::tempdir().unwrap();
    let key_path = dir.path().join("app.pem");
    std::fs::write(&key_path, APP_KEY).unwrap();
    let api =
        Fake::start(vec![reply(401, json!({"message": "A JSON web token could not be decoded"}))]).await;
    let err = app_client(&api, &key_path).rest(Method::GET, "/a", None).await.unwrap_err();
    let GitHubError::Auth(message) = err else { panic!("{err:?}") };
    assert!(message.contains("GitHub App 42") && message.contains("could not be decoded"), "{message}");
    assert_eq!(api.seen().len(), 1);
}

#[tokio::test]
async fn a_missing_app_key_is_an_auth_error_naming_the_file() {
    let api = Fake::start(vec![]).await;
    let err =
        app_client(&api, std::path::Path::new("/nonexistent/app.pem")).rest(Method::GET, "/a", None).await;
    let Err(GitHubError::Auth(message)) = err else { panic!("{err:?}") };
    assert!(message.contains("/nonexistent/app.pem") && message.contains("private_key_path"), "{message}");
    assert!(api.seen().is_empty());
}

#[tokio::test]
async fn a_refusing_download_host_is_an_http_error_that_blocks_nothing() {
    let storage =
        Fake::start(vec![Reply { status: 403, body: "AuthenticationFailed".into(), ..Reply::default() }])
            .await;
    let location = format!("http://localhost:{}/logs/1?sig=expired", storage.port);
    let api =
        Fake::start(vec![Reply { status: 302, ..Reply::default() }.header("location", &location)]).await;
    let gh = client(&api);
    let err = gh.download_text("/repos/o/r/actions/jobs/1/logs", 10).await.unwrap_err();
    assert!(matches!(&err, GitHubError::Http { status: 403, .. }), "{err:?}");
    assert!(!err.to_string().contains("sig=expired"), "{err}");
    assert_eq!(gh.rate().blocked_until, None);
}
