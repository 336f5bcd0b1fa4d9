//! The dashboard's accept loop: HTTP/1.1 with a header-read timeout, an idle timeout and a cap on the
//! connections held at once, so that idle sockets cannot take the server's file descriptors.
//!
//! Past the cap, a new connection closes the one that has waited longest with no request in progress
//! (a socket that never sends anything is such a one): a client that actually asks something is served
//! within moments, whatever number of idle sockets is open. A connection with a request in progress (a
//! live log's event stream, say) is never closed for another. When accepting fails for want of file
//! descriptors anyway (a cap above `ulimit -n`), the longest-idle connection is closed too.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

/// How the server treats connections (from `[web]`).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
}

impl Limits {
    pub fn of(web: &crate::config::Web) -> Limits {
        Limits {
            max_connections: web.max_connections,
            header_read_timeout: web.header_read_timeout.std(),
            idle_timeout: web.idle_timeout.std(),
        }
    }
}

/// One open connection, as the loop sees it.
struct Conn {
    /// Requests in progress (until their answer's body is sent or dropped).
    busy: AtomicUsize,
    /// When it last had no request in progress.
    idle_since: Mutex<Instant>,
    /// Closes it at once.
    close: Notify,
}

impl Conn {
    fn idle_for(&self) -> Option<Duration> {
        if self.busy.load(Ordering::SeqCst) > 0 {
            return None;
        }
        Some(self.idle_since.lock().map(|t| t.elapsed()).unwrap_or_default())
    }
}

/// Marks its connection busy while it lives.
struct Busy(Arc<Conn>);

impl Busy {
    fn new(conn: Arc<Conn>) -> Busy {
        conn.busy.fetch_add(1, Ordering::SeqCst);
        Busy(conn)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Ok(mut t) = self.0.idle_since.lock() {
            *t = Instant::now();
        }
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The open connections.
#[derive(Default)]
struct Conns {
    next: AtomicU64,
    open: Mutex<HashMap<u64, Arc<Conn>>>,
}

impl Conns {
    fn len(&self) -> usize {
        self.open.lock().map(|m| m.len()).unwrap_or(0)
    }

    fn add(&self) -> (u64, Arc<Conn>) {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let conn = Arc::new(Conn {
            busy: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            close: Notify::new(),
        });
        if let Ok(mut m) = self.open.lock() {
            m.insert(id, conn.clone());
        }
        (id, conn)
    }

    fn remove(&self, id: u64) {
        if let Ok(mut m) = self.open.lock() {
            m.remove(&id);
        }
    }

    /// Closes the connection idle longest; false when every one has a request in progress.
    fn evict_idle(&self) -> bool {
        let Ok(mut m) = self.open.lock() else { return false };
        let oldest = m
            .iter()
            .filter_map(|(id, c)| c.idle_for().map(|idle| (*id, idle)))
            .max_by_key(|(_, idle)| *idle)
            .map(|(id, _)| id);
        match oldest.and_then(|id| m.remove(&id)) {
            Some(conn) => {
                conn.close.notify_one();
                true
            }
            None => false,
        }
    }

    fn close_all(&self) {
        if let Ok(m) = self.open.lock() {
            for conn in m.values() {
                conn.close.notify_one();
            }
        }
    }
}

/// Serves `router` on `listener` until `shutdown` becomes true; then lets requests in progress finish
/// (for a few seconds at most: a live log's stream never does).
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: Limits,
    mut shutdown: watch::Receiver<bool>,
) -> std::io::Result<()> {
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
                let evicted = conns.evict_idle();
                tracing::warn!("dashboard: accepting a connection failed: {e}");
                if !evicted {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                continue;
            }
        };
        if conns.len() >= limits.max_connections && !conns.evict_idle() {
            turned_away += 1;
            if turned_away.is_power_of_two() {
                tracing::warn!(
                    "dashboard: {turned_away} connection(s) refused so far, the last from {peer}: all \
                     {} (web.max_connections) have a request in progress",
                    limits.max_connections
                );
            }
            drop(stream);
            continue;
        }
        let (id, conn) = conns.add();
        let conns = conns.clone();
        let router = router.clone().layer(axum::Extension(ConnectInfo(peer)));
        let http = http.clone();
        let shutdown = shutdown.clone();
        tasks.spawn(async move {
            connection(http, stream, peer, router, conn, limits, shutdown).await;
            conns.remove(id);
        });
        // Reap the finished ones so the set does not grow.
        while tasks.try_join_next().is_some() {}
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

/// Serves one connection until it ends, is closed for another, or has been idle `idle_timeout`.
async fn connection(
    http: hyper::server::conn::http1::Builder,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    router: Router,
    conn: Arc<Conn>,
    limits: Limits,
    mut shutdown: watch::Receiver<bool>,
) {
    let inner = TowerToHyperService::new(router);
    let tracked = conn.clone();
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let busy = Busy::new(tracked.clone());
        let answer = hyper::service::Service::call(&inner, req);
        async move {
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
    let served = http.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(served);
    let mut shutting_down = false;
    loop {
        let idle_check = tokio::time::sleep(match conn.idle_for() {
            Some(idle) => limits.idle_timeout.saturating_sub(idle),
            None => limits.idle_timeout,
        });
        tokio::select! {
            result = served.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!("dashboard connection from {peer}: {e}");
                }
                return;
            }
            () = conn.close.notified() => return,
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
