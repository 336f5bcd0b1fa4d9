//! Fake model APIs for the real agent CLIs: Anthropic's Messages API (Claude Code) and OpenAI's
//! Responses API (Codex), in-process on 127.0.0.1, each playing a [`Script`]. No network, no money.
//!
//! A model that plays a script must know where it is in the conversation without keeping state of its
//! own (a CLI may retry a request, or send small side requests): each request is matched to a [`Role`]
//! by a phrase of its prompt (which worker kind the prompt is for), and the next step is the one after
//! the tool results the conversation already holds. Every request is logged for the test to assert on.
//!
//! Shapes: Anthropic's streaming events as its "Streaming Messages" documentation lists them
//! (`message_start`, `content_block_start/delta/stop` with `text_delta` and `input_json_delta`,
//! `message_delta` with `stop_reason` and usage, `message_stop`); OpenAI's Responses events as Codex
//! parses them (`response.created`, `response.output_item.added/done`, `response.completed` with usage).
#![allow(dead_code)]

mod anthropic;
mod openai;
mod script;

use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::Value;

pub use script::{Role, Script, Step, comment_ids};

/// Which API a server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Anthropic,
    OpenAi,
}

/// One request the server received, and what it made of it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// The role whose phrase the request's text contained (`None`: no role, answered plainly).
    pub role: Option<String>,
    /// How many tool results the conversation held: the step played.
    pub step: usize,
    pub stream: bool,
    /// The tool names the CLI offered the model (top level and, for Codex, inside `additional_tools`).
    pub tools: Vec<String>,
    /// What the model was made to do: `tool:NAME`, `answer` or `text`.
    pub played: String,
    /// The credential the request carried: Anthropic's `x-api-key`, or OpenAI's `authorization`.
    pub credential: Option<String>,
    pub body: Value,
}

struct Shared {
    api: Api,
    script: Script,
    seen: Mutex<Vec<Seen>>,
}

/// A running fake model API. It serves until the test process ends.
#[derive(Clone)]
pub struct FakeModel {
    addr: std::net::SocketAddr,
    shared: Arc<Shared>,
}

impl FakeModel {
    /// Starts a server for `api` on a thread and runtime of its own, so that a test may block (waiting
    /// for `executor runner`) while the CLI talks to it.
    pub fn start(api: Api, script: Script) -> FakeModel {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).expect("nonblocking listener");
        let addr = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared { api, script, seen: Mutex::new(Vec::new()) });
        let state = shared.clone();
        std::thread::spawn(move || {
            let runtime =
                tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
                let app = axum::Router::new().fallback(dispatch).with_state(state);
                let _ = axum::serve(listener, app).await;
            });
        });
        FakeModel { addr, shared }
    }

    /// `http://127.0.0.1:PORT` — what `ANTHROPIC_BASE_URL` is set to (the CLI adds `/v1/messages`).
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1` — a Codex provider's `base_url` (Codex adds `/responses`).
    pub fn v1(&self) -> String {
        format!("{}/v1", self.origin())
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every request so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        lock(&self.shared).clone()
    }
}

fn lock(shared: &Shared) -> MutexGuard<'_, Vec<Seen>> {
    shared.seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What a handler decided: the status, the content type and the body, and the log entry.
pub(crate) struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
}

impl Reply {
    pub fn json(status: u16, body: &Value) -> Reply {
        Reply { status, content_type: "application/json", body: body.to_string() }
    }

    /// Server-sent events, each `event: TYPE` and `data: JSON` (the event's own `type`) and a blank line.
    pub fn sse(events: &[Value]) -> Reply {
        let mut body = String::new();
        for e in events {
            let kind = e.get("type").and_then(Value::as_str).unwrap_or("message");
            body.push_str(&format!("event: {kind}\ndata: {e}\n\n"));
        }
        Reply { status: 200, content_type: "text/event-stream", body }
    }
}

async fn dispatch(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path = uri.path().to_string();
    let (reply, mut seen) = match shared.api {
        Api::Anthropic => anthropic::answer(&shared.script, &method, &path, &parsed),
        Api::OpenAi => openai::answer(&shared.script, &method, &path, &parsed),
    };
    seen.method = method.to_string();
    seen.path = path;
    seen.body = parsed;
    let credential = match shared.api {
        Api::Anthropic => headers.get("x-api-key"),
        Api::OpenAi => headers.get("authorization"),
    };
    seen.credential = credential.and_then(|v| v.to_str().ok()).map(str::to_string);
    lock(&shared).push(seen);
    Response::builder()
        .status(StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", reply.content_type)
        .body(Body::from(reply.body))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// A log entry for a request that matched nothing of the script.
pub(crate) fn unscripted(played: &str) -> Seen {
    Seen {
        method: String::new(),
        path: String::new(),
        role: None,
        step: 0,
        stream: false,
        tools: Vec::new(),
        played: played.to_string(),
        credential: None,
        body: Value::Null,
    }
}
