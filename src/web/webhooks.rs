//! The webhook receivers: `POST /webhooks/github` and `POST /webhooks/gitlab`, outside the dashboard's
//! session auth (a forge has no session) but verified: GitHub's by the body's signature, GitLab's by the
//! secret token it sends (`X-Gitlab-Token`, compared in constant time before the body is read). It verifies, records the delivery (once per delivery id),
//! marks the pull requests of active runs it concerns as changed and wakes the runner — then answers.
//! The work happens after the answer, in the runner, from its own observation of GitHub: a payload is
//! never believed, so a lost, late, forged or repeated delivery changes nothing but how soon the runner
//! looks.
//!
//! What cannot be GitHub's is refused before its body is read (no signature, no event or delivery id,
//! not JSON, declared larger than GitHub sends); the rest is read with its signature checked as it
//! arrives, within a bound on what unverified bodies hold in memory (`body`). `GET` is 405, with the
//! security headers every answer carries.
//!
//! Every refusal is logged with the peer, the event and the delivery id as sent (quoted), never the
//! secret or the body.

pub mod body;
pub mod github;
pub mod gitlab;
pub mod signature;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{ConnectInfo, Extension, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use self::github::Concern;
use super::AppState;
use crate::domain::{DeliveryOutcome, WakeScope, WebhookSender};
use crate::store::{Delivery, PrOwner};

/// GitHub caps a delivery's payload at 25 MB: a larger body is refused before it is read whole.
pub const GITHUB_BODY_LIMIT: usize = 25 * 1024 * 1024;

/// GitHub gives up on a delivery after 10 seconds. Recording it waits for the database at most this
/// long; past it the answer is 503 and GitHub may redeliver (nothing was recorded, or all of it was).
const RECORD_TIMEOUT: Duration = Duration::from_secs(8);

/// The receiver's refusals in the log, a burst at a time.
static REFUSALS: super::refusal_log::Burst = super::refusal_log::Burst::new("webhook receiver");

/// The webhook routes. They are merged beside the dashboard's, not inside its security layer.
pub fn routes() -> Router<AppState> {
    let budget = body::Budget::new(body::SHARED_BUDGET);
    Router::new()
        .route("/webhooks/github", axum::routing::post(github_delivery).fallback(not_allowed))
        .route("/webhooks/gitlab", axum::routing::post(gitlab_delivery).fallback(not_allowed))
        .layer(axum::Extension(budget))
}

async fn not_allowed() -> Response {
    let mut response = answer(
        StatusCode::METHOD_NOT_ALLOWED,
        json!({ "error": "webhooks are delivered with POST; there is nothing to read here" }),
    );
    response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

/// A delivery's headers, as sent (untrusted until the signature or token is checked).
struct Received {
    sender: WebhookSender,
    peer: String,
    event: String,
    /// The id a redelivery repeats: GitHub's `X-GitHub-Delivery`; GitLab's `Idempotency-Key` (GitLab
    /// 17.4 and later, the same on every retry), else its `X-Gitlab-Event-UUID`.
    delivery: String,
}

impl Received {
    fn of(req: &Request, sender: WebhookSender) -> Received {
        let header = |name: &str| {
            let value = req.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("");
            // Shown quoted and bounded: a forger chooses it.
            value.chars().take(super::refusal_log::SHOWN_CHARS).collect::<String>()
        };
        Received {
            peer: req
                .extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0.to_string())
                .unwrap_or_else(|| "unknown".into()),
            event: header(if sender == WebhookSender::GitLab { "x-gitlab-event" } else { "x-github-event" }),
            delivery: match sender {
                WebhookSender::GitLab => Some(header("idempotency-key"))
                    .filter(|k| !k.trim().is_empty())
                    .unwrap_or_else(|| header("x-gitlab-event-uuid")),
                _ => header("x-github-delivery"),
            },
            sender,
        }
    }

    /// The headers of a delivery from `sender` and the secret to verify it with; or the refusal when
    /// webhooks from `sender` are not set up or the headers cannot be its.
    fn set_up(
        req: &Request,
        state: &AppState,
        sender: WebhookSender,
    ) -> Result<(Received, Arc<String>), Box<Response>> {
        let received = Received::of(req, sender);
        let (secret, config_key, env) = match sender {
            WebhookSender::GitLab => {
                (&state.gitlab_webhook_secret, "gitlab", &state.config.gitlab.webhook_secret_env)
            }
            _ => (&state.webhook_secret, "github", &state.config.github.webhook_secret_env),
        };
        let Some(secret) = secret.clone() else {
            return Err(Box::new(received.refuse_unread(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!(
                    "webhooks are not set up: the variable {env} ({config_key}.webhook_secret_env) is not set"
                ),
            )));
        };
        if let Err((status, why)) = looks_like(req.headers(), &received) {
            return Err(Box::new(received.refuse_unread(status, why)));
        }
        Ok((received, secret))
    }

    /// A refusal that closes the connection: the body may be unread, and is not to be read as the next
    /// request.
    fn refuse_unread(&self, status: StatusCode, why: &str) -> Response {
        let mut response = self.refuse(status, why);
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
    }

    /// A body that was not taken: too large, no budget left, or (GitHub) not what was signed.
    fn refuse_body(&self, e: body::BodyError) -> Response {
        let status = match e {
            body::BodyError::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            body::BodyError::NoBudget => StatusCode::SERVICE_UNAVAILABLE,
            body::BodyError::Signature(_) => StatusCode::UNAUTHORIZED,
        };
        self.refuse_unread(status, &e.to_string())
    }

    fn refuse(&self, status: StatusCode, why: &str) -> Response {
        REFUSALS.warn(|| {
            format!(
                "webhook refused from {}: {} {why} (event {:?}, delivery {:?})",
                self.peer,
                status.as_u16(),
                self.event,
                self.delivery
            )
        });
        answer(status, json!({ "error": why }))
    }
}

async fn github_delivery(
    State(state): State<AppState>,
    Extension(budget): Extension<Arc<body::Budget>>,
    req: Request,
) -> Response {
    let (received, secret) = match Received::set_up(&req, &state, WebhookSender::GitHub) {
        Ok(set_up) => set_up,
        Err(refused) => return *refused,
    };
    let signature = req.headers().get("x-hub-signature-256").and_then(|v| v.to_str().ok());
    let verifier = match signature::Verifier::github(secret.as_bytes(), signature) {
        Ok(verifier) => verifier,
        Err(e) => {
            return received.refuse_unread(StatusCode::UNAUTHORIZED, &format!("X-Hub-Signature-256: {e}"));
        }
    };
    // A body sent without a length (chunked) is cut off at the limit as it streams in.
    let body = match body::read_signed(req.into_body(), Some(verifier), GITHUB_BODY_LIMIT, &budget).await {
        Ok(body) => body,
        Err(e) => return received.refuse_body(e),
    };
    // Signed by GitHub from here on.
    take(&state, &received, &body, github::concern).await
}

async fn gitlab_delivery(
    State(state): State<AppState>,
    Extension(budget): Extension<Arc<body::Budget>>,
    req: Request,
) -> Response {
    let (received, secret) = match Received::set_up(&req, &state, WebhookSender::GitLab) {
        Ok(set_up) => set_up,
        Err(refused) => return *refused,
    };
    let token = req.headers().get("x-gitlab-token").and_then(|v| v.to_str().ok()).unwrap_or("");
    if !super::session::same(token, &secret) {
        return received.refuse_unread(
            StatusCode::UNAUTHORIZED,
            "X-Gitlab-Token is missing or is not the webhook's secret token (gitlab.webhook_secret_env)",
        );
    }
    // GitLab's from here on; the body is still bounded as it arrives.
    let body = match body::read_signed(req.into_body(), None, GITHUB_BODY_LIMIT, &budget).await {
        Ok(body) => body,
        Err(e) => return received.refuse_body(e),
    };
    take(&state, &received, &body, gitlab::concern).await
}

/// A verified delivery's body read, recorded and answered.
async fn take(
    state: &AppState,
    received: &Received,
    body: &[u8],
    concern_of: fn(&str, &serde_json::Value) -> Option<Concern>,
) -> Response {
    let payload: serde_json::Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) => {
            return received.refuse(
                StatusCode::BAD_REQUEST,
                "the body is not JSON (set the webhook's content type to application/json)",
            );
        }
    };
    let Some(concern) = concern_of(&received.event, &payload) else {
        return received.refuse(StatusCode::BAD_REQUEST, "the payload lacks what its event always carries");
    };
    match tokio::time::timeout(RECORD_TIMEOUT, record(state, received, &concern)).await {
        Ok(Ok((outcome, true))) => {
            tracing::info!(
                "webhook {} {:?} from {}: {outcome}",
                received.event,
                received.delivery,
                received.peer
            );
            answer(StatusCode::ACCEPTED, json!({ "outcome": outcome.as_str() }))
        }
        Ok(Ok((_, false))) => {
            tracing::info!(
                "webhook {} {:?} from {}: a redelivery, already received; ignored",
                received.event,
                received.delivery,
                received.peer
            );
            answer(StatusCode::OK, json!({ "outcome": "already_received" }))
        }
        Ok(Err(e)) => {
            tracing::warn!("webhook {:?}: recording it failed: {e}", received.delivery);
            answer(
                StatusCode::SERVICE_UNAVAILABLE,
                json!({ "error": "the database is out of reach; redeliver" }),
            )
        }
        Err(_) => {
            received.refuse(StatusCode::SERVICE_UNAVAILABLE, "the database did not answer in time; redeliver")
        }
    }
}

/// Finds the active runs the delivery concerns and records it, with their marks and the runner's
/// wake, in one transaction. Returns what it did and whether it was new (not a redelivery).
async fn record(
    state: &AppState,
    received: &Received,
    concern: &Concern,
) -> Result<(DeliveryOutcome, bool), crate::store::StoreError> {
    let mut marks: Vec<(String, i64)> = Vec::new();
    let outcome = match concern {
        Concern::Nothing => DeliveryOutcome::IgnoredEvent,
        Concern::PullRequests(targets) => {
            let sent_by = |r: &crate::config::Repo| match received.sender {
                WebhookSender::GitLab => {
                    r.forge == "gitlab" && r.gitlab.eq_ignore_ascii_case(&targets.repository)
                }
                _ => r.forge == "github" && r.github.eq_ignore_ascii_case(&targets.repository),
            };
            let repos: Vec<&String> =
                state.config.repos.iter().filter(|(_, r)| sent_by(r)).map(|(name, _)| name).collect();
            let only = state.config.repos.len() == 1;
            for name in &repos {
                for owner in state.store.pr_owners(name, only).await? {
                    if concerns(&owner, targets) {
                        marks.push(((*name).clone(), owner.pr_number));
                    }
                }
            }
            marks.sort();
            marks.dedup();
            match (repos.is_empty(), marks.is_empty()) {
                (true, _) => DeliveryOutcome::UnknownRepo,
                (false, true) => DeliveryOutcome::NotOurs,
                (false, false) => DeliveryOutcome::Marked,
            }
        }
    };
    let delivery = Delivery {
        sender: received.sender,
        id: &received.delivery,
        event: &received.event,
        outcome,
        marks: &marks,
        wake: (!marks.is_empty()).then_some(WakeScope::Runner),
    };
    let new = state.store.record_delivery(&delivery).await?;
    Ok((outcome, new))
}

/// Whether a delivery naming `targets` concerns the run's pull request: by number, head commit or
/// branch.
fn concerns(owner: &PrOwner, targets: &github::Targets) -> bool {
    targets.numbers.contains(&owner.pr_number)
        || owner.head_sha.as_ref().is_some_and(|sha| targets.shas.contains(sha))
        || owner.branch.as_ref().is_some_and(|b| targets.branches.contains(b))
}

/// What any delivery has, checked before its body is read: the event and delivery id, a JSON body, a
/// declared length within the forge's limit (GitLab's is smaller than GitHub's 25 MB).
fn looks_like(headers: &HeaderMap, received: &Received) -> Result<(), (StatusCode, &'static str)> {
    if declared_length(headers).is_some_and(|n| n > GITHUB_BODY_LIMIT) {
        return Err((StatusCode::PAYLOAD_TOO_LARGE, "the body is larger than the forge's 25 MB limit"));
    }
    if received.event.trim().is_empty() || received.delivery.trim().is_empty() {
        return Err((
            StatusCode::BAD_REQUEST,
            match received.sender {
                WebhookSender::GitLab => {
                    "X-Gitlab-Event and X-Gitlab-Event-UUID (or Idempotency-Key) are required"
                }
                _ => "X-GitHub-Event and X-GitHub-Delivery are required",
            },
        ));
    }
    let json = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| {
        v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
    });
    if !json {
        return Err((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "the body is not JSON (set the webhook's content type to application/json)",
        ));
    }
    Ok(())
}

fn declared_length(headers: &HeaderMap) -> Option<usize> {
    headers.get(header::CONTENT_LENGTH)?.to_str().ok()?.parse().ok()
}

fn answer(status: StatusCode, body: serde_json::Value) -> Response {
    let mut response = (status, axum::Json(body)).into_response();
    super::auth::secure_headers(response.headers_mut());
    response
}
