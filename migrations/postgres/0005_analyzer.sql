-- executor schema v5 (PostgreSQL): what the analyzer needs. Same meaning as
-- migrations/sqlite/0005_analyzer.sql.

-- What the task's source said besides its text, for the skip filters (at intake and on re-analysis).
ALTER TABLE executor_queue ADD COLUMN url TEXT;
-- 1 when the tracker says the task is done, 0 when it says not, NULL when it does not say.
ALTER TABLE executor_queue ADD COLUMN completed BIGINT;
ALTER TABLE executor_queue ADD COLUMN assignee TEXT;
ALTER TABLE executor_queue ADD COLUMN source_modified_at TIMESTAMPTZ;
-- The source's whole object (JSON), for the filters' raw.* fields.
ALTER TABLE executor_queue ADD COLUMN raw_json TEXT;

-- The filter that skipped the task (its name in the config) and its sentence. NULL when the task was not
-- skipped by a filter (the analyzer's triage, or a human, skipped it).
ALTER TABLE executor_queue ADD COLUMN skip_rule TEXT;
ALTER TABLE executor_queue ADD COLUMN skip_why TEXT;
-- The triage's acceptance criteria (a JSON array of strings), which the pr_review prompt checks.
ALTER TABLE executor_queue ADD COLUMN acceptance_criteria TEXT;
ALTER TABLE executor_queue ADD COLUMN analyzed_at TIMESTAMPTZ;
-- Failed analyses of the task as it stands: the last error, how many, and when it may be tried again.
ALTER TABLE executor_queue ADD COLUMN analysis_error TEXT;
ALTER TABLE executor_queue ADD COLUMN analysis_attempts BIGINT NOT NULL DEFAULT 0;
ALTER TABLE executor_queue ADD COLUMN analysis_retry_at TIMESTAMPTZ;
-- How many times the task was sent back from skip to pending for another look: new tasks (round 0) are
-- analyzed before re-analyzed ones, so a re-analysis of hundreds never holds up new work.
ALTER TABLE executor_queue ADD COLUMN analysis_round BIGINT NOT NULL DEFAULT 0;
-- An analyzer's claim on a pending task while it analyzes it (owner = host:pid), until it expires.
ALTER TABLE executor_queue ADD COLUMN claim_owner TEXT;
ALTER TABLE executor_queue ADD COLUMN claim_expires_at TIMESTAMPTZ;
CREATE INDEX executor_queue_pending ON executor_queue (analysis_round, id) WHERE status = 'pending';

-- One analysis of one task by an agent: its process, its cost (counted in the daily budget) and its end.
CREATE TABLE executor_analysis_sessions (
    id             BIGSERIAL PRIMARY KEY,
    task_gid       TEXT NOT NULL REFERENCES executor_queue(task_gid),
    agent          TEXT NOT NULL,
    host           TEXT NOT NULL,
    pid            BIGINT,
    pid_start_time BIGINT,
    log_path       TEXT,
    session_id     TEXT,
    started_at     TIMESTAMPTZ NOT NULL,
    ended_at       TIMESTAMPTZ,
    end_reason     TEXT,
    cost_usd       DOUBLE PRECISION NOT NULL DEFAULT 0,
    input_tokens   BIGINT NOT NULL DEFAULT 0,
    output_tokens  BIGINT NOT NULL DEFAULT 0,
    result_error   TEXT
);
CREATE INDEX executor_analysis_sessions_task ON executor_analysis_sessions (task_gid, id);
CREATE INDEX executor_analysis_sessions_started ON executor_analysis_sessions (started_at);

-- Where each source's incremental fetch goes on from, and how its last fetch went.
CREATE TABLE executor_source_cursors (
    source        TEXT PRIMARY KEY,
    cursor        TIMESTAMPTZ,
    fetched_at    TIMESTAMPTZ,
    last_error    TEXT,
    last_error_at TIMESTAMPTZ
);
