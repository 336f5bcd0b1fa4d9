//! Posting a `pr_review` worker's findings exactly once. GitHub may apply a review and still answer
//! with an error (a 502 from its gateway, GraphQL errors next to an applied mutation); the review's ids
//! are then never recorded, and on an account a human shares with executor the review would read as
//! that human's unresolved comment. So every part of a review carries a hidden marker naming its worker
//! session, and the pull request is read for it before posting: a review an earlier attempt posted is
//! recorded as executor's instead of posted again.

use super::{Comment, Forge, ForgeError, PrSnapshot};
use crate::domain::Run;
use crate::store::Store;
use crate::worker::result::ReviewResult;

/// What [`deliver_review`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewDelivery {
    Posted,
    /// An earlier attempt had posted it: its comments are now recorded as executor's. The snapshot the
    /// caller holds still shows them as someone else's.
    FoundEarlier,
    /// An earlier attempt's post may still land: nothing was posted; looked for again on a later view.
    MayStillLand,
}

/// Ends the review's body and each of its line comments (hidden on GitHub): which worker session's
/// review it is, so that a retry finds it and never takes another review with the same text for it.
pub fn review_marker(session_id: i64) -> String {
    format!("<!-- executor review {session_id} -->")
}

/// The comments of `pr` that belong to the review marked `marker`.
pub fn marked<'a>(pr: &'a PrSnapshot, marker: &'a str) -> impl Iterator<Item = &'a Comment> + 'a {
    pr.comments.iter().filter(move |c| c.body.contains(marker))
}

/// Posts session `session_id`'s review on the pull request unless `pr` (observed after any earlier
/// attempt) shows it already; either way its comments end up recorded as executor's.
pub async fn deliver_review(
    forge: &Forge,
    store: &Store,
    run: &Run,
    pr: &PrSnapshot,
    session_id: i64,
    review: &ReviewResult,
) -> Result<ReviewDelivery, ForgeError> {
    let marker = review_marker(session_id);
    let earlier: Vec<&Comment> = marked(pr, &marker).collect();
    if earlier.is_empty() {
        // An earlier attempt's post (its runner killed mid-request) may still land: only a view taken
        // once it could have shows whether it did.
        let started = store.review_post_started(session_id).await?;
        if super::may_still_land(started, pr.observed_at, forge.landing_time()) {
            if !super::may_still_land(started, chrono::Utc::now(), forge.landing_time()) {
                forge.forget_observation(pr.number);
            }
            return Ok(ReviewDelivery::MayStillLand);
        }
        store.mark_review_posting(session_id).await?;
        forge.post_review(run, pr, review, &marker).await?;
        return Ok(ReviewDelivery::Posted);
    }
    for c in &earlier {
        store.record_agent_comment(run.id, &c.id, None).await?;
    }
    let ids: Vec<String> = earlier.iter().map(|c| c.id.clone()).collect();
    forge.forget_observation(pr.number);
    tracing::info!(
        run = run.id,
        "the review of worker session {session_id} was already posted ({ids:?}): recorded, not posted again"
    );
    Ok(ReviewDelivery::FoundEarlier)
}

/// A run's newest review, for a page: the newest `pr_review` session that ended with a verdict, and
/// what its agent handed back (`None` when that does not read as a review).
pub fn latest_review(
    sessions: &[crate::store::WorkerSession],
) -> Option<(&crate::store::WorkerSession, Option<ReviewResult>)> {
    let review = sessions
        .iter()
        .rev()
        .find(|s| s.kind == crate::domain::WorkerKind::PrReview && s.verdict.is_some())?;
    let result = review.result_json.as_deref().and_then(|j| serde_json::from_str(j).ok());
    Some((review, result))
}
