-- executor schema v23 (PostgreSQL): the insights and the status answer from indexes at 100,000 tasks. Same
-- meaning as migrations/sqlite/0023_fast_counts.sql.

-- Tasks in and out per day (`store/day_flows.rs`) count one kind of event over one day at a time: with
-- the kind first and the time next, each count is a range of this index, read in order, without the
-- rows and without sorting the window's 100,000 intake events by day.
CREATE INDEX executor_events_kind_at ON executor_events (kind, at, to_state, run_id);

-- What the pending tasks wait for (`store/pending_detail.rs`): only a pending task that failed an
-- analysis, waits for a retry or is claimed is anything but claimable, and those are few; the rest are
-- counted from the status index. Every column the detail reads is in this index.
CREATE INDEX executor_queue_pending_not_claimable ON executor_queue
    (analysis_attempts, analysis_retry_at, claim_expires_at)
    WHERE status = 'pending'
      AND (analysis_attempts > 0 OR analysis_retry_at IS NOT NULL OR claim_expires_at IS NOT NULL);
