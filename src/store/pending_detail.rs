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

impl Store {
    /// The pending tasks by what they wait for, with `max_attempts` from `analyzer.max_attempts`.
    pub async fn pending_detail(&self, max_attempts: u32) -> Result<PendingDetail> {
        // Each task counts once: given up first, then backing off, then claimed, else claimable.
        let sql = "SELECT \
             COALESCE(SUM(CASE WHEN analysis_attempts >= $2 THEN 1 ELSE 0 END), 0), \
             COALESCE(SUM(CASE WHEN analysis_attempts < $2 AND analysis_retry_at > $1 THEN 1 ELSE 0 END), 0), \
             COALESCE(SUM(CASE WHEN analysis_attempts < $2 AND (analysis_retry_at IS NULL OR analysis_retry_at <= $1) \
                 AND claim_expires_at >= $1 THEN 1 ELSE 0 END), 0), \
             count(*) \
             FROM executor_queue WHERE status = 'pending'";
        let (given_up, backing_off, analyzing, all): (i64, i64, i64, i64) = on_pool!(self, |p| {
            sqlx::query_as(sql).bind(now()).bind(i64::from(max_attempts)).fetch_one(p).await?
        });
        Ok(PendingDetail {
            claimable: all - given_up - backing_off - analyzing,
            analyzing,
            backing_off,
            given_up,
        })
    }
}
