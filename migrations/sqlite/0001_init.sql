-- executor schema v1 (SQLite). Timestamps are UTC, stored as RFC 3339 text written by executor itself.
CREATE TABLE executor_schema (
    version    INTEGER PRIMARY KEY,
    applied_at TEXT NOT NULL
);

CREATE TABLE executor_queue (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    task_gid         TEXT NOT NULL UNIQUE,
    added_at         TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    source           TEXT,
    description      TEXT,
    notes            TEXT,
    status           TEXT NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending','for_review','awaiting_go','approved','skip','done')),
    priority         INTEGER,
    complexity       TEXT,
    feasibility      TEXT,
    analysis_summary TEXT,
    executor_run_id  INTEGER REFERENCES executor_runs(id),
    repo             TEXT
);
CREATE INDEX executor_queue_status ON executor_queue (status, priority, added_at);

CREATE TABLE executor_runs (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    task_gid           TEXT NOT NULL REFERENCES executor_queue(task_gid),
    repo               TEXT,
    worktree_path      TEXT,
    branch_name        TEXT,
    pr_url             TEXT,
    pr_number          INTEGER,
    thread_id          TEXT,
    started_at         TEXT NOT NULL,
    updated_at         TEXT NOT NULL,
    completed_at       TEXT,
    state              TEXT NOT NULL DEFAULT 'queued'
                       CHECK (state IN ('queued','in_progress','pr','complete','abandoned')),
    ci_attempts        INTEGER NOT NULL DEFAULT 0,
    worker_session_id  TEXT,
    worker_last_update TEXT,
    worker_pid         INTEGER,
    worker_stuck_count INTEGER NOT NULL DEFAULT 0,
    head_sha           TEXT,
    review_verdict     TEXT,
    review_sha         TEXT,
    lease_owner        TEXT,
    lease_expires_at   TEXT,
    cost_usd           REAL NOT NULL DEFAULT 0,
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0
);
-- One active run per task, whatever the number of processes creating runs.
CREATE UNIQUE INDEX executor_runs_one_active ON executor_runs (task_gid)
    WHERE state IN ('queued','in_progress','pr','complete');
CREATE INDEX executor_runs_state ON executor_runs (state);

CREATE TABLE executor_events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    at         TEXT NOT NULL,
    actor      TEXT NOT NULL,
    task_gid   TEXT,
    run_id     INTEGER,
    kind       TEXT NOT NULL,
    from_state TEXT,
    to_state   TEXT,
    reason     TEXT
);
CREATE INDEX executor_events_task ON executor_events (task_gid, id);
CREATE INDEX executor_events_run ON executor_events (run_id, id);
