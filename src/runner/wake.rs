//! Being woken by a webhook delivery. `executor serve` may run on another host than the runner, over
//! one PostgreSQL, so the wake goes through the database: a delivery raises a counter
//! (`executor_wakes`), and a sleeping runner reads that one row every [`WAKE_POLL`] — a primary-key
//! read, cheap on both databases — and ticks as soon as it moved. No notification channel
//! (PostgreSQL's LISTEN, a socket) is needed, and SQLite works the same.

use std::time::Duration;

use crate::domain::WakeScope;
use crate::store::Store;

/// How often a sleeping runner reads the wake counter: a delivery starts the next tick within this.
pub(super) const WAKE_POLL: Duration = Duration::from_millis(250);

/// Woken ticks begin at least this long after the tick before. A CI matrix finishing sends dozens of
/// deliveries for one pull request within seconds; each woken tick asks GitHub for the marked pull
/// requests (GraphQL points shared with the agents), so a burst costs one look every few seconds,
/// never one per delivery. The first delivery after a quiet spell is answered at once.
pub(super) const WAKE_MIN_GAP: Duration = Duration::from_secs(2);

/// Returns once a wake beyond `seen` was requested, and not before `not_before`. A read that fails
/// (the database briefly out of reach) is retried at the next poll: the loop's own interval still
/// bounds the sleep.
pub(super) async fn requested_since(store: &Store, seen: i64, not_before: tokio::time::Instant) {
    tokio::time::sleep_until(not_before).await;
    loop {
        tokio::time::sleep(WAKE_POLL).await;
        match store.wake_state(WakeScope::Runner).await {
            Ok(state) if state.requested > seen => return,
            Ok(_) => {}
            Err(e) => tracing::debug!("reading the wake counter: {e}"),
        }
    }
}

/// Whether a wake beyond `seen` was requested (one read, no wait).
pub(super) async fn pending_since(store: &Store, seen: i64) -> bool {
    store.wake_state(WakeScope::Runner).await.is_ok_and(|s| s.requested > seen)
}
