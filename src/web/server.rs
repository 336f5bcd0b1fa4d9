//! The dashboard's accept loop: HTTP/1.1 with a header-read timeout, an idle timeout and a cap on the
//! connections held at once, so that idle sockets cannot take the server's file descriptors.
//!
//! Past the cap, a new connection closes one with no request in progress: first one that has sent part
//! of a request head and stopped (a slow header; a kept-alive connection between requests), then one
//! that has sent nothing for a second (`Conn::eviction_rank`). A client that actually asks
//! something is served within moments, whatever number of idle sockets is open, and a fresh connection
//! is not pushed out by strangers reconnecting before its request, sent at once, has been read. When accepting fails for want of file
//! descriptors anyway (a cap above `ulimit -n`), the longest-idle connection is closed too.
//!
//! A request in progress is never closed for another, so requests must not hold slots forever:
//! - an unauthenticated one (no session cookie, no bearer token: a login, a webhook delivery, a
//!   stranger) must be read and answered within `request_deadline` of its headers, or its connection
//!   is closed: a half-sent body holds a slot for that long at most;
//! - unauthenticated requests in progress may take all slots but `reserve` of them: a request with a
//!   session or the token always finds one (an idle connection to close), whatever strangers send; past
//!   that, an unauthenticated request is answered 503 at once, its body unread;
//! - one peer address holds at most `per_peer` connections (its own longest-idle is closed first), so a
//!   remote peer cannot push out everyone else's.
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::sync::watch;
use tokio::time::Instant;

mod conns;
mod heard;

use conns::{Busy, Conn, Conns};

/// How the server treats connections (from `[web]`).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    /// How long an unauthenticated request may take, from its headers to the end of its answer.
    pub request_deadline: Duration,
}

impl Limits {
    pub fn of(web: &crate::config::Web) -> Limits {
        Limits {
            max_connections: web.max_connections,
            header_read_timeout: web.header_read_timeout.std(),
            idle_timeout: web.idle_timeout.std(),
            // The same bound as the headers': a client that may take that long to send them gets as
            // long again for its body and our answer.
            request_deadline: web.header_read_timeout.std(),
        }
    }

    /// Slots unauthenticated requests may never take: a quarter, so that connections still reading
    /// their headers (a client's among strangers' reconnects) have room to turn over in.
    fn reserve(&self) -> usize {
        (self.max_connections / 4).max(1)
    }

    /// Connections one peer address may hold.
    fn per_peer(&self) -> usize {
        (self.max_connections / 2).max(8).min(self.max_connections)
    }
}

/// Whether a request's headers carry a valid session or the token (`auth::authenticated`).
pub type Trust = Arc<dyn Fn(&HeaderMap) -> bool + Send + Sync>;

/// Serves `router` on `listener` until `shutdown` becomes true; then lets requests in progress finish
/// (for a few seconds at most: a live log's stream never does). `trust` tells a request with a session
/// or the token from a stranger's.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: Limits,
    trust: Trust,
    mut shutdown: watch::Receiver<bool>,
) -> std::io::Result<()> {
    deepen_backlog(&listener);
    let conns = Arc::new(Conns::default());
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    let mut tasks = tokio::task::JoinSet::new();
    // Connections turned away because every slot was busy, told in the log now and then.
    let mut turned_away = 0u64;
    loop {
        let accepted = tokio::select! {
            changed = shutdown.changed() => {
                if changed.is_err() || *shutdown.borrow() {
                    break;
                }
                continue;
            }
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors (EMFILE/ENFILE) or memory: make room, or wait a moment.
                let evicted = conns.evict_idle(None);
                tracing::warn!("dashboard: accepting a connection failed: {e}");
                if !evicted {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                continue;
            }
        };
        let room = (conns.of_peer(peer.ip()) < limits.per_peer() || conns.evict_idle(Some(peer.ip())))
            && (conns.len() < limits.max_connections || conns.evict_idle(None));
        if !room {
            turned_away += 1;
            if turned_away.is_power_of_two() {
                tracing::warn!(
                    "dashboard: {turned_away} connection(s) refused so far, the last from {peer}: all \
                     {} (web.max_connections; {} for one address) have a request in progress",
                    limits.max_connections,
                    limits.per_peer()
                );
            }
            drop(stream);
            continue;
        }
        let (id, conn) = conns.add(peer.ip());
        let served = Served { conns: conns.clone(), conn, trust: trust.clone(), limits };
        let router = router.clone().layer(axum::Extension(ConnectInfo(peer)));
        let http = http.clone();
        let shutdown = shutdown.clone();
        let conns = conns.clone();
        tasks.spawn(async move {
            connection(http, stream, peer, router, served, shutdown).await;
            conns.remove(id);
        });
        // Reap the finished ones so the set does not grow.
        while tasks.try_join_next().is_some() {}
        // Lets the new connection read what its client has sent before the next one is accepted (and
        // may close one to make room): a burst of strangers' connections, accepted back to back, would
        // otherwise push out a client's before its request, already sent, had been looked at.
        tokio::task::yield_now().await;
    }
    drop(listener);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !tasks.is_empty() {
        match tokio::time::timeout_at(deadline, tasks.join_next()).await {
            Ok(_) => {}
            Err(_) => {
                conns.close_all();
                tasks.abort_all();
                break;
            }
        }
    }
    Ok(())
}

/// Connections the kernel may hold for the accept loop (capped by `net.core.somaxconn`).
const BACKLOG: i32 = 1024;

/// Raises the listening socket's backlog from the standard library's 128: a burst of strangers'
/// connections past it makes the kernel drop a client's SYN, which it then resends only a second
/// later. Calling `listen` again on a listening socket only changes its backlog (Linux).
fn deepen_backlog(listener: &tokio::net::TcpListener) {
    use std::os::fd::AsRawFd;
    // SAFETY: `listen` on a socket this listener owns; it reads nothing from our memory.
    if unsafe { libc::listen(listener.as_raw_fd(), BACKLOG) } != 0 {
        tracing::debug!("dashboard: raising the listen backlog failed: {}", std::io::Error::last_os_error());
    }
}

/// What a connection's requests are counted against.
#[derive(Clone)]
struct Served {
    conns: Arc<Conns>,
    conn: Arc<Conn>,
    trust: Trust,
    limits: Limits,
}

impl Served {
    /// Marks the connection busy for `headers`' request; `None`: a stranger past the slots strangers
    /// may take.
    fn begin(&self, headers: &HeaderMap) -> Option<Busy> {
        if (self.trust)(headers) {
            Some(Busy::new(self.conn.clone(), false))
        } else {
            self.conns.begin_stranger(&self.conn, &self.limits)
        }
    }
}

/// 503 at once, the body unread, and the connection closed after it.
fn no_room() -> Response {
    let mut response = (
        StatusCode::SERVICE_UNAVAILABLE,
        "too many unauthenticated requests in progress; try again in a few seconds\n",
    )
        .into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    super::auth::secure_headers(headers);
    response
}

/// Serves one connection until it ends, is closed for another, has been idle `idle_timeout`, or its
/// unauthenticated request has run past `request_deadline`.
async fn connection(
    http: hyper::server::conn::http1::Builder,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    router: Router,
    served: Served,
    mut shutdown: watch::Receiver<bool>,
) {
    let inner = TowerToHyperService::new(router);
    let (conn, limits) = (served.conn.clone(), served.limits);
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let busy = served.begin(req.headers());
        let answer = busy.is_some().then(|| hyper::service::Service::call(&inner, req));
        async move {
            let (Some(busy), Some(answer)) = (busy, answer) else {
                return Ok(no_room());
            };
            let response = answer.await?;
            // The connection stays busy until the answer's body is sent (or dropped).
            Ok::<_, std::convert::Infallible>(response.map(move |body| {
                Body::new(body.map_frame(move |frame| {
                    let _ = &busy;
                    frame
                }))
            }))
        }
    });
    let stream = heard::Heard { stream, heard: conn.heard.clone() };
    let served = http.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(served);
    let mut shutting_down = false;
    loop {
        let idle_check = tokio::time::sleep(match conn.idle_for() {
            Some(idle) => limits.idle_timeout.saturating_sub(idle),
            None => limits.idle_timeout,
        });
        let stranger = conn.stranger_since();
        let deadline = tokio::time::sleep_until(
            stranger.map_or_else(|| Instant::now() + limits.idle_timeout, |t| t + limits.request_deadline),
        );
        tokio::select! {
            result = served.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!("dashboard connection from {peer}: {e}");
                }
                return;
            }
            () = conn.close.notified() => return,
            () = conn.began.notified() => {}
            () = deadline, if stranger.is_some() => {
                if conn.stranger_since() == stranger {
                    tracing::debug!("dashboard connection from {peer}: an unauthenticated request ran past its deadline");
                    return;
                }
            }
            () = idle_check => {
                if conn.idle_for().is_some_and(|idle| idle >= limits.idle_timeout) {
                    return;
                }
            }
            changed = shutdown.changed(), if !shutting_down => {
                if changed.is_err() || *shutdown.borrow() {
                    shutting_down = true;
                    served.as_mut().graceful_shutdown();
                }
            }
        }
    }
}
