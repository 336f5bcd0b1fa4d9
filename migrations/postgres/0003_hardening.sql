-- executor schema v3 (PostgreSQL). Same meaning as migrations/sqlite/0003_hardening.sql, which explains
-- each column.

ALTER TABLE executor_worker_sessions ADD COLUMN start_sha TEXT;
ALTER TABLE executor_worker_sessions ADD COLUMN resumed_session TEXT;
ALTER TABLE executor_worker_sessions ADD COLUMN verdict TEXT CHECK (verdict IN ('pass','fail'));
ALTER TABLE executor_worker_sessions ADD COLUMN cost_estimated BIGINT NOT NULL DEFAULT 0;
ALTER TABLE executor_runs ADD COLUMN cost_estimated BIGINT NOT NULL DEFAULT 0;

ALTER TABLE executor_runs ADD COLUMN head_seen_at TIMESTAMPTZ;

ALTER TABLE executor_notifications ADD COLUMN attempts BIGINT NOT NULL DEFAULT 0;
ALTER TABLE executor_notifications ADD COLUMN last_error TEXT;
CREATE INDEX executor_notifications_unsent ON executor_notifications (id) WHERE delivered_at IS NULL;

ALTER TABLE executor_queue ADD COLUMN revision_description TEXT;
ALTER TABLE executor_queue ADD COLUMN revision_notes TEXT;
ALTER TABLE executor_queue ADD COLUMN revision_at TIMESTAMPTZ;

ALTER TABLE executor_local_ci DROP CONSTRAINT executor_local_ci_status_check;
ALTER TABLE executor_local_ci ADD CONSTRAINT executor_local_ci_status_check
    CHECK (status IN ('pending','success','failure','error'));

CREATE TABLE executor_runner_status (
    host        TEXT PRIMARY KEY,
    pid         BIGINT NOT NULL,
    started_at  TIMESTAMPTZ NOT NULL,
    ended_at    TIMESTAMPTZ,
    ticks       BIGINT NOT NULL DEFAULT 0,
    errors      BIGINT NOT NULL DEFAULT 0,
    last_error  TEXT,
    last_error_at TIMESTAMPTZ
);
