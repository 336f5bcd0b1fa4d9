-- executor schema v20 (SQLite): a plan a human approves before code, a question an agent asks instead of
-- guessing, a task's own plan setting, and a merged change found reverted. Same meaning as
-- migrations/postgres/0020_plans_questions.sql.

-- One row per plan a `plan` worker wrote (its session is unique: a worker collected twice records it
-- once). The newest revision of a run is the one that counts; `status` is a stored fact, one of
-- `awaiting_approval`, `approved`, `changes_requested`.
CREATE TABLE executor_run_plans (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id       INTEGER NOT NULL REFERENCES executor_runs(id),
    session_id   INTEGER NOT NULL REFERENCES executor_worker_sessions(id),
    revision     INTEGER NOT NULL,
    -- The plan as the page, the tracker and the implementation prompt show it (redacted).
    body         TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    status       TEXT NOT NULL,
    -- Who approved it or asked for changes: the actor (cli, web) and, where known, the person.
    decided_actor TEXT,
    decided_by   TEXT,
    decided_at   TEXT,
    -- What should change, for the next revision's prompt.
    feedback     TEXT
);
CREATE UNIQUE INDEX executor_run_plans_session ON executor_run_plans (session_id);
CREATE INDEX executor_run_plans_run ON executor_run_plans (run_id, revision);

-- One row per question a worker ended with. Open while `answered_at` is NULL; the first answer wins.
CREATE TABLE executor_run_questions (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id        INTEGER NOT NULL REFERENCES executor_runs(id),
    session_id    INTEGER NOT NULL REFERENCES executor_worker_sessions(id),
    worker_kind   TEXT NOT NULL,
    question      TEXT NOT NULL,
    asked_at      TEXT NOT NULL,
    answer        TEXT,
    -- How the answer came (`cli`, `web`, `forge`, `tracker`) and who gave it (a forge login, an OS user).
    answered_via  TEXT,
    answered_by   TEXT,
    answered_at   TEXT
);
CREATE UNIQUE INDEX executor_run_questions_session ON executor_run_questions (session_id);
CREATE INDEX executor_run_questions_open ON executor_run_questions (run_id) WHERE answered_at IS NULL;

-- A task's own plan setting (`required`, `off`); NULL follows the repository's `plan`.
ALTER TABLE executor_queue ADD COLUMN plan_mode TEXT;

-- A merged pull request whose change was reverted on the base branch: when executor found the revert,
-- and the reverting commit.
ALTER TABLE executor_runs ADD COLUMN reverted_at TEXT;
ALTER TABLE executor_runs ADD COLUMN revert_sha TEXT;
