-- executor schema v1 (PostgreSQL). Same meaning as migrations/sqlite/0001_init.sql.
CREATE TABLE executor_schema (
    version    BIGINT PRIMARY KEY,
    applied_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE executor_queue (
    id               BIGSERIAL PRIMARY KEY,
    task_gid         TEXT NOT NULL UNIQUE,
    added_at         TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    source           TEXT,
    description      TEXT,
    notes            TEXT,
    status           TEXT NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending','for_review','awaiting_go','approved','skip','done')),
    priority         BIGINT,
    complexity       TEXT,
    feasibility      TEXT,
    analysis_summary TEXT,
    executor_run_id  BIGINT,
    repo             TEXT
);
CREATE INDEX executor_queue_status ON executor_queue (status, priority, added_at);

CREATE TABLE executor_runs (
    id                 BIGSERIAL PRIMARY KEY,
    task_gid           TEXT NOT NULL REFERENCES executor_queue(task_gid),
    repo               TEXT,
    worktree_path      TEXT,
    branch_name        TEXT,
    pr_url             TEXT,
    pr_number          BIGINT,
    thread_id          TEXT,
    started_at         TIMESTAMPTZ NOT NULL,
    updated_at         TIMESTAMPTZ NOT NULL,
    completed_at       TIMESTAMPTZ,
    state              TEXT NOT NULL DEFAULT 'queued'
                       CHECK (state IN ('queued','in_progress','pr','complete','abandoned')),
    ci_attempts        BIGINT NOT NULL DEFAULT 0,
    worker_session_id  TEXT,
    worker_last_update TIMESTAMPTZ,
    worker_pid         BIGINT,
    worker_stuck_count BIGINT NOT NULL DEFAULT 0,
    head_sha           TEXT,
    review_verdict     TEXT,
    review_sha         TEXT,
    lease_owner        TEXT,
    lease_expires_at   TIMESTAMPTZ,
    cost_usd           DOUBLE PRECISION NOT NULL DEFAULT 0,
    input_tokens       BIGINT NOT NULL DEFAULT 0,
    output_tokens      BIGINT NOT NULL DEFAULT 0
);
ALTER TABLE executor_queue ADD CONSTRAINT executor_queue_run_fk
    FOREIGN KEY (executor_run_id) REFERENCES executor_runs(id);
CREATE UNIQUE INDEX executor_runs_one_active ON executor_runs (task_gid)
    WHERE state IN ('queued','in_progress','pr','complete');
CREATE INDEX executor_runs_state ON executor_runs (state);

CREATE TABLE executor_events (
    id         BIGSERIAL PRIMARY KEY,
    at         TIMESTAMPTZ NOT NULL,
    actor      TEXT NOT NULL,
    task_gid   TEXT,
    run_id     BIGINT,
    kind       TEXT NOT NULL,
    from_state TEXT,
    to_state   TEXT,
    reason     TEXT
);
CREATE INDEX executor_events_task ON executor_events (task_gid, id);
CREATE INDEX executor_events_run ON executor_events (run_id, id);
