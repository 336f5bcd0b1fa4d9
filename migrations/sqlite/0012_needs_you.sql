-- executor schema v12 (SQLite): what a human has read on the dashboard's "Needs you". Same meaning as
-- migrations/postgres/0012_needs_you.sql.

-- A notice is unread until a human marks it read on the dashboard. Delivery (a forge comment, a Slack
-- message) is not reading: it only says where the notice went. `read_by` is the actor who marked it.
ALTER TABLE executor_notifications ADD COLUMN read_at TEXT;
ALTER TABLE executor_notifications ADD COLUMN read_by TEXT CHECK (read_by IN ('cli','web'));
CREATE INDEX executor_notifications_unread ON executor_notifications (kind, run_id) WHERE read_at IS NULL;

-- Pending tasks whose analysis failed: "Needs you" finds those given up on (analyzer.max_attempts) among
-- 100,000 pending ones without reading them all.
CREATE INDEX executor_queue_failed_analysis ON executor_queue (analysis_attempts) WHERE status = 'pending' AND analysis_attempts > 0;

-- A source's failed fetch is unread until a human dismisses it; a later failure (a newer last_error_at)
-- is unread again.
ALTER TABLE executor_source_cursors ADD COLUMN error_read_at TEXT;
