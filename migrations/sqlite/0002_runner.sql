-- executor schema v2 (SQLite): worker sessions, the runner's memory per run, the local forge, notices.

-- One row per agent process over a run's life. At most one live (ended_at IS NULL) per run: the database,
-- not the caller, guarantees that a run never has two workers.
CREATE TABLE executor_worker_sessions (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id         INTEGER NOT NULL REFERENCES executor_runs(id),
    kind           TEXT NOT NULL,
    agent          TEXT NOT NULL,
    host           TEXT NOT NULL,
    pid            INTEGER,
    pid_start_time INTEGER,
    output_path    TEXT,
    output_offset  INTEGER NOT NULL DEFAULT 0,
    log_path       TEXT,
    session_id     TEXT,
    started_at     TEXT NOT NULL,
    last_output_at TEXT,
    ended_at       TEXT,
    end_reason     TEXT,
    exit_code      INTEGER,
    num_turns      INTEGER,
    cost_usd       REAL NOT NULL DEFAULT 0,
    input_tokens   INTEGER NOT NULL DEFAULT 0,
    output_tokens  INTEGER NOT NULL DEFAULT 0,
    result_json    TEXT,
    result_error   TEXT
);
CREATE UNIQUE INDEX executor_worker_sessions_one_live ON executor_worker_sessions (run_id) WHERE ended_at IS NULL;
CREATE INDEX executor_worker_sessions_run ON executor_worker_sessions (run_id, id);

ALTER TABLE executor_runs ADD COLUMN last_decision TEXT;
ALTER TABLE executor_runs ADD COLUMN last_decision_at TEXT;
ALTER TABLE executor_runs ADD COLUMN ci_triggered_sha TEXT;
-- The pull request as last observed (forge-neutral JSON), for `runs show`.
ALTER TABLE executor_runs ADD COLUMN last_snapshot TEXT;
-- What the run had spent when a human last resumed it past its cap: the cap applies to spending since.
ALTER TABLE executor_runs ADD COLUMN budget_base_usd REAL NOT NULL DEFAULT 0;
ALTER TABLE executor_runs ADD COLUMN budget_stopped INTEGER NOT NULL DEFAULT 0;

-- The local forge: a pull request is a branch plus a row.
CREATE TABLE executor_local_prs (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id     INTEGER NOT NULL UNIQUE REFERENCES executor_runs(id),
    repo       TEXT,
    branch     TEXT NOT NULL,
    base       TEXT NOT NULL,
    state      TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open','merged','closed')),
    draft      INTEGER NOT NULL DEFAULT 1,
    labels     TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE executor_local_comments (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    pr_id       INTEGER NOT NULL REFERENCES executor_local_prs(id),
    author      TEXT NOT NULL,
    body        TEXT NOT NULL,
    path        TEXT,
    line        INTEGER,
    in_reply_to INTEGER,
    by_agent    INTEGER NOT NULL DEFAULT 0,
    resolved    INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL
);
CREATE INDEX executor_local_comments_pr ON executor_local_comments (pr_id, id);

-- Local CI: one row per check run at a head sha; pending while its process runs.
CREATE TABLE executor_local_ci (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    pr_id       INTEGER NOT NULL REFERENCES executor_local_prs(id),
    sha         TEXT NOT NULL,
    name        TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('pending','success','failure')),
    pid         INTEGER,
    work_dir    TEXT,
    output_tail TEXT,
    started_at  TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX executor_local_ci_pr ON executor_local_ci (pr_id, sha, id);

-- Notices to the human (completion, abandonment, stuck workers, budget stops).
CREATE TABLE executor_notifications (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id       INTEGER REFERENCES executor_runs(id),
    task_gid     TEXT,
    kind         TEXT NOT NULL,
    -- Identifies the notice within its run (e.g. completed:<sha>), so each is sent once.
    notice_key   TEXT,
    message      TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    delivered_at TEXT,
    delivery     TEXT
);
CREATE UNIQUE INDEX executor_notifications_once ON executor_notifications (run_id, notice_key);
