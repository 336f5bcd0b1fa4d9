//! What the pending tasks are waiting for, for `executor status`: the analyzer can take them now, one is
//! analyzing them, they wait out a back-off after a failed analysis, or the analyzer gave up on them
//! (`executor reanalyze --failed` tries those again).

use super::{Result, Store, now, on_pool};

/// Pending tasks by what they wait for. The four add up to the pending count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PendingDetail {
    /// An analyzer would take them now.
    pub claimable: i64,
    /// Under a live claim: being analyzed.
    pub analyzing: i64,
    /// Failed and waiting for `analysis_retry_at`.
    pub backing_off: i64,
    /// Failed `analyzer.max_attempts` times: left to a human.
    pub given_up: i64,
}

/// The pending tasks that may be anything but claimable: a failed analysis, a retry time or a claim.
/// Written exactly as the predicate of their index (migration 23), so both databases read only it.
const NOT_CLAIMABLE: &str = "status = 'pending' \
     AND (analysis_attempts > 0 OR analysis_retry_at IS NOT NULL OR claim_expires_at IS NOT NULL)";

impl Store {
    /// The pending tasks by what they wait for, with `max_attempts` from `analyzer.max_attempts`.
    ///
    /// Why two counts: reading every pending task to sort it into four took 275–694 ms at 66,000 pending
    /// tasks. All of them are counted from the status index; only the few that failed, wait or are
    /// claimed are read, from an index of their own, and the rest are claimable.
    pub async fn pending_detail(&self, max_attempts: u32) -> Result<PendingDetail> {
        let all: i64 = on_pool!(self, |p| {
            sqlx::query_scalar("SELECT count(*) FROM executor_queue WHERE status = 'pending'")
                .fetch_one(p)
                .await?
        });
        if max_attempts == 0 {
            // No attempt allowed: every pending task is given up on, as the condition below would say.
            return Ok(PendingDetail { given_up: all, ..Default::default() });
        }
        // Each task counts once: given up first, then backing off, then claimed, else claimable. A task
        // given up on (attempts >= max_attempts >= 1) is among NOT_CLAIMABLE, as is every one that backs
        // off (a retry time) or is being analyzed (a claim).
        let sql = format!(
            "SELECT \
             COALESCE(SUM(CASE WHEN analysis_attempts >= $2 THEN 1 ELSE 0 END), 0), \
             COALESCE(SUM(CASE WHEN analysis_attempts < $2 AND analysis_retry_at > $1 THEN 1 ELSE 0 END), 0), \
             COALESCE(SUM(CASE WHEN analysis_attempts < $2 AND (analysis_retry_at IS NULL OR analysis_retry_at <= $1) \
                 AND claim_expires_at >= $1 THEN 1 ELSE 0 END), 0) \
             FROM executor_queue WHERE {NOT_CLAIMABLE}"
        );
        let (given_up, backing_off, analyzing): (i64, i64, i64) = on_pool!(self, |p| {
            sqlx::query_as(&sql).bind(now()).bind(i64::from(max_attempts)).fetch_one(p).await?
        });
        Ok(PendingDetail {
            claimable: all - given_up - backing_off - analyzing,
            analyzing,
            backing_off,
            given_up,
        })
    }
}
