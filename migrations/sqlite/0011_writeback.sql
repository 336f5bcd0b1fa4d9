-- executor schema v11 (SQLite): write-back to the trackers as an outbox. Same meaning as
-- migrations/postgres/0011_writeback.sql.

-- One row per message executor owes a task's tracker (the pull request opened, the run completed or
-- abandoned, ...): recorded before it is sent, claimed by one process for one attempt at a time
-- (`attempts` counts attempts begun, so a row with attempts > 0 may already be in the tracker and is
-- looked for there by its `marker` before it is sent again), and settled once the tracker answered:
-- `delivered` with the tracker's id of the comment, or `refused` (401, 403, 404: told to the human
-- once, never retried), `given_up` (too many failed attempts) or `withdrawn` (a skip no longer true).
CREATE TABLE executor_writebacks (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    task_gid        TEXT NOT NULL,
    run_id          INTEGER REFERENCES executor_runs(id),
    -- The [[sources]] name the task came from: which tracker, with which token.
    source          TEXT NOT NULL,
    -- A domain::WritebackEvent by name: pr_opened, complete, abandoned, skipped, approved.
    event           TEXT NOT NULL,
    -- Identifies the message within its task (e.g. run:12:pr_opened), so each is recorded once.
    event_key       TEXT NOT NULL,
    message         TEXT NOT NULL,
    -- A random token the message carries in the tracker, by which a retry finds an earlier attempt's.
    marker          TEXT NOT NULL,
    -- A domain::WritebackStatus by name: pending, delivered, refused, given_up, withdrawn.
    status          TEXT NOT NULL DEFAULT 'pending',
    created_at      TEXT NOT NULL,
    -- Not tried before this time: the back-off after a failure, or another process's attempt in flight.
    next_attempt_at TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT,
    -- The tracker's id of the comment (an Asana story gid, a GitHub comment id), once delivered.
    remote_id       TEXT,
    settled_at      TEXT
);
CREATE UNIQUE INDEX executor_writebacks_once ON executor_writebacks (task_gid, event_key);
CREATE INDEX executor_writebacks_pending ON executor_writebacks (id) WHERE status = 'pending';
