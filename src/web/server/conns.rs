//! The open connections as the accept loop sees them: which are busy, which serve a stranger, and
//! which idle one goes first to make room.
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::Limits;

/// How long a connection that has sent nothing yet counts as one whose request is on its way.
const FRESH: Duration = Duration::from_secs(1);

/// One open connection, as the loop sees it.
pub(super) struct Conn {
    pub(super) peer: IpAddr,
    /// Whether the client has sent anything on it yet.
    pub(super) heard: Arc<AtomicBool>,
    /// Whether a request has been answered on it (its answer may still be on its way out for a while
    /// after the connection stops counting it in progress).
    pub(super) answered: AtomicBool,
    /// Requests in progress (until their answer's body is sent or dropped).
    pub(super) busy: AtomicUsize,
    /// When it last had no request in progress.
    pub(super) idle_since: Mutex<Instant>,
    /// When its unauthenticated request in progress began, if it has one.
    pub(super) stranger_since: Mutex<Option<Instant>>,
    /// Told when an unauthenticated request begins, so its connection watches the deadline.
    pub(super) began: Notify,
    /// Closes it at once.
    pub(super) close: Notify,
}

impl Conn {
    pub(super) fn idle_for(&self) -> Option<Duration> {
        if self.busy.load(Ordering::SeqCst) > 0 {
            return None;
        }
        Some(self.idle_since.lock().map(|t| t.elapsed()).unwrap_or_default())
    }

    /// Which idle connection goes first to make room (the greatest): one the client has sent something
    /// on and then stopped, the longest idle first; then one that has said nothing for `FRESH`, the
    /// oldest first (a socket that never sends); last a fresh one, the newest first, so that a flood of
    /// connections pushes out its own latest rather than a client's that connected a moment earlier and
    /// whose request is on its way. A connection that has just answered a request counts as fresh:
    /// the answer's last bytes may not have left yet, and closing it would cut them off. `None`: a
    /// request is in progress.
    pub(super) fn eviction_rank(&self) -> Option<(u8, Duration)> {
        let idle = self.idle_for()?;
        let just_answered = idle < FRESH && self.answered.load(Ordering::SeqCst);
        Some(if self.heard.load(Ordering::SeqCst) && !just_answered {
            (2, idle)
        } else if idle >= FRESH {
            (1, idle)
        } else {
            (0, FRESH - idle)
        })
    }

    pub(super) fn stranger_since(&self) -> Option<Instant> {
        self.stranger_since.lock().ok().and_then(|t| *t)
    }
}

/// Marks its connection busy while it lives (and as serving a stranger, when `stranger`).
pub(super) struct Busy {
    pub(super) conn: Arc<Conn>,
    pub(super) stranger: bool,
}

impl Busy {
    pub(super) fn new(conn: Arc<Conn>, stranger: bool) -> Busy {
        conn.busy.fetch_add(1, Ordering::SeqCst);
        Busy { conn, stranger }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if self.stranger
            && let Ok(mut t) = self.conn.stranger_since.lock()
        {
            *t = None;
        }
        if let Ok(mut t) = self.conn.idle_since.lock() {
            *t = Instant::now();
        }
        self.conn.answered.store(true, Ordering::SeqCst);
        self.conn.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The open connections.
#[derive(Default)]
pub(super) struct Conns {
    pub(super) next: AtomicU64,
    pub(super) open: Mutex<HashMap<u64, Arc<Conn>>>,
}

impl Conns {
    pub(super) fn len(&self) -> usize {
        self.open.lock().map(|m| m.len()).unwrap_or(0)
    }

    pub(super) fn of_peer(&self, peer: IpAddr) -> usize {
        self.open.lock().map(|m| m.values().filter(|c| c.peer == peer).count()).unwrap_or(0)
    }

    pub(super) fn add(&self, peer: IpAddr) -> (u64, Arc<Conn>) {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let conn = Arc::new(Conn {
            peer,
            heard: Arc::new(AtomicBool::new(false)),
            answered: AtomicBool::new(false),
            busy: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            stranger_since: Mutex::new(None),
            began: Notify::new(),
            close: Notify::new(),
        });
        if let Ok(mut m) = self.open.lock() {
            m.insert(id, conn.clone());
        }
        (id, conn)
    }

    pub(super) fn remove(&self, id: u64) {
        if let Ok(mut m) = self.open.lock() {
            m.remove(&id);
        }
    }

    /// Closes a connection with no request in progress (of `peer`, when given): one the client has sent
    /// something on before one it has not, the one idle longest of those; false when every one has a
    /// request in progress.
    pub(super) fn evict_idle(&self, peer: Option<IpAddr>) -> bool {
        let Ok(mut m) = self.open.lock() else { return false };
        let oldest = m
            .iter()
            .filter(|(_, c)| peer.is_none_or(|p| c.peer == p))
            .filter_map(|(id, c)| c.eviction_rank().map(|rank| (*id, rank)))
            .max_by_key(|(_, rank)| *rank)
            .map(|(id, _)| id);
        match oldest.and_then(|id| m.remove(&id)) {
            Some(conn) => {
                conn.close.notify_one();
                true
            }
            None => false,
        }
    }

    /// Starts an unauthenticated request on `conn` if strangers, all of them and its peer's, stay
    /// clear of the reserved slots; counted and marked under one lock so that none slips past.
    pub(super) fn begin_stranger(&self, conn: &Arc<Conn>, limits: &Limits) -> Option<Busy> {
        let m = self.open.lock().ok()?;
        let strangers = m.values().filter(|c| c.stranger_since().is_some());
        let (all, of_peer) =
            strangers.fold((0, 0), |(all, own), c| (all + 1, own + usize::from(c.peer == conn.peer)));
        let reserve = limits.reserve();
        if all + reserve >= limits.max_connections || of_peer + reserve >= limits.per_peer() {
            return None;
        }
        *conn.stranger_since.lock().ok()? = Some(Instant::now());
        drop(m);
        conn.began.notify_one();
        Some(Busy::new(conn.clone(), true))
    }

    pub(super) fn close_all(&self) {
        if let Ok(m) = self.open.lock() {
            for conn in m.values() {
                conn.close.notify_one();
            }
        }
    }
}
