-- executor schema v3 (SQLite): what the hardening of the core needs. Same meaning as
-- migrations/postgres/0003_hardening.sql.

-- A worker session remembers what it started from and what it was asked to resume, and carries its
-- review verdict, so that the verdict is written in the same statement as the session's end.
-- start_sha: the pull request's head when the worker started (else its branch's head): a review is for
-- this commit only, and a worker that ends with the branch still here made no progress.
ALTER TABLE executor_worker_sessions ADD COLUMN start_sha TEXT;
-- The agent session this worker was asked to continue (--resume / exec resume), if any.
ALTER TABLE executor_worker_sessions ADD COLUMN resumed_session TEXT;
-- 'pass' or 'fail' for a pr_review worker that returned a verdict.
ALTER TABLE executor_worker_sessions ADD COLUMN verdict TEXT CHECK (verdict IN ('pass','fail'));
-- 1 while cost_usd is executor's estimate from tokens and the price table, 0 once the agent said it.
ALTER TABLE executor_worker_sessions ADD COLUMN cost_estimated INTEGER NOT NULL DEFAULT 0;
ALTER TABLE executor_runs ADD COLUMN cost_estimated INTEGER NOT NULL DEFAULT 0;

-- When the run's current head_sha was first observed: how long CI has had to report at this head.
ALTER TABLE executor_runs ADD COLUMN head_seen_at TEXT;

-- Notices are an outbox: recorded first (delivered_at NULL), sent, then marked; unsent ones are retried.
ALTER TABLE executor_notifications ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE executor_notifications ADD COLUMN last_error TEXT;
CREATE INDEX executor_notifications_unsent ON executor_notifications (id) WHERE delivered_at IS NULL;

-- A task's text that arrived after it was approved: kept aside until a human approves it, so the agents
-- are told what the human approved.
ALTER TABLE executor_queue ADD COLUMN revision_description TEXT;
ALTER TABLE executor_queue ADD COLUMN revision_notes TEXT;
ALTER TABLE executor_queue ADD COLUMN revision_at TEXT;

-- Local CI: 'error' is a check that could not run at all (infrastructure), not a code failure.
-- SQLite cannot change a CHECK constraint in place: rebuild the table.
CREATE TABLE executor_local_ci_v3 (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    pr_id       INTEGER NOT NULL REFERENCES executor_local_prs(id),
    sha         TEXT NOT NULL,
    name        TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('pending','success','failure','error')),
    pid         INTEGER,
    work_dir    TEXT,
    output_tail TEXT,
    started_at  TEXT NOT NULL,
    finished_at TEXT
);
INSERT INTO executor_local_ci_v3 SELECT id, pr_id, sha, name, status, pid, work_dir, output_tail, started_at, finished_at FROM executor_local_ci;
DROP TABLE executor_local_ci;
ALTER TABLE executor_local_ci_v3 RENAME TO executor_local_ci;
CREATE INDEX executor_local_ci_pr ON executor_local_ci (pr_id, sha, id);

-- What each host's runner last met: `executor status` shows it, and says when a runner keeps failing.
CREATE TABLE executor_runner_status (
    host        TEXT PRIMARY KEY,
    pid         INTEGER NOT NULL,
    started_at  TEXT NOT NULL,
    ended_at    TEXT,
    ticks       INTEGER NOT NULL DEFAULT 0,
    errors      INTEGER NOT NULL DEFAULT 0,
    last_error  TEXT,
    last_error_at TEXT
);
