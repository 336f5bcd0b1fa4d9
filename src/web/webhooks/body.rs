//! Reading a delivery's body before it is known to be GitHub's: its signature is checked as it arrives,
//! and what an unverified body holds in memory is bounded. Each delivery may hold
//! [`OWN_ALLOWANCE`] (GitHub's deliveries rarely reach it); beyond that, its bytes come out of one
//! budget shared by every delivery in flight ([`SHARED_BUDGET`]), given back when it ends. So a stranger
//! who sends many large unsigned bodies gets 503s, not the server's memory: at most the allowance per
//! unauthenticated request in progress (which the accept loop caps) plus the budget.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::body::{Body, Bytes};
use http_body_util::BodyExt;

use super::signature::{SignatureError, Verifier};

/// What one unverified delivery may hold without drawing on the shared budget.
pub const OWN_ALLOWANCE: usize = 256 * 1024;

/// What all unverified deliveries may hold beyond their own allowances, together.
pub const SHARED_BUDGET: usize = 64 * 1024 * 1024;

/// Why a body was not taken.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("the body is larger than the forge's 25 MB limit, or broke off")]
    TooLarge,
    #[error("too many large unverified deliveries are in flight; redeliver in a moment")]
    NoBudget,
    #[error("X-Hub-Signature-256: {0}")]
    Signature(SignatureError),
}

/// Bytes left for unverified bodies beyond their allowances.
pub struct Budget {
    left: AtomicUsize,
}

impl Budget {
    pub fn new(bytes: usize) -> Arc<Budget> {
        Arc::new(Budget { left: AtomicUsize::new(bytes) })
    }

    fn take(&self, bytes: usize) -> bool {
        self.left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| left.checked_sub(bytes)).is_ok()
    }
}

/// What one body has drawn from the budget, given back when it is dropped.
struct Drawn {
    budget: Arc<Budget>,
    bytes: usize,
}

impl Drawn {
    /// Draws enough that `held` bytes are covered; false when the budget has not that much left.
    fn cover(&mut self, held: usize) -> bool {
        let needed = held.saturating_sub(OWN_ALLOWANCE).saturating_sub(self.bytes);
        if needed == 0 {
            return true;
        }
        let ok = self.budget.take(needed);
        if ok {
            self.bytes += needed;
        }
        ok
    }
}

impl Drop for Drawn {
    fn drop(&mut self) {
        self.budget.left.fetch_add(self.bytes, Ordering::SeqCst);
    }
}

/// Reads `body` (at most `limit` bytes) while checking `verifier`'s signature over it; the body once
/// it is known to be what was signed. Without a verifier (a GitLab delivery, whose token was checked
/// before), only the bounds.
pub async fn read_signed(
    mut body: Body,
    mut verifier: Option<Verifier>,
    limit: usize,
    budget: &Arc<Budget>,
) -> Result<Vec<u8>, BodyError> {
    let mut drawn = Drawn { budget: budget.clone(), bytes: 0 };
    // The pieces as they came (no copy, no doubling growth), joined once verified.
    let mut pieces: Vec<Bytes> = Vec::new();
    let mut held = 0usize;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(|_| BodyError::TooLarge)?.into_data() else { continue };
        held += data.len();
        if held > limit {
            return Err(BodyError::TooLarge);
        }
        if !drawn.cover(held) {
            return Err(BodyError::NoBudget);
        }
        if let Some(v) = verifier.as_mut() {
            v.update(&data);
        }
        pieces.push(data);
    }
    if let Some(v) = verifier {
        v.finish().map_err(BodyError::Signature)?;
    }
    let mut whole = Vec::with_capacity(held);
    for piece in pieces {
        whole.extend_from_slice(&piece);
    }
    Ok(whole)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_shared_and_given_back() {
        let budget = Budget::new(1000);
        let mut a = Drawn { budget: budget.clone(), bytes: 0 };
        assert!(a.cover(OWN_ALLOWANCE), "within its own allowance: nothing drawn");
        assert!(a.cover(OWN_ALLOWANCE + 600));
        let mut b = Drawn { budget: budget.clone(), bytes: 0 };
        assert!(!b.cover(OWN_ALLOWANCE + 600), "600 + 600 > 1000");
        drop(a);
        assert!(b.cover(OWN_ALLOWANCE + 600), "given back when the first ends");
        drop(b);
        assert_eq!(budget.left.load(Ordering::SeqCst), 1000);
    }
}
