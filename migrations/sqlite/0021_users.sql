-- executor schema v21 (SQLite): the people who use the dashboard, each with a role and a personal token.
-- Same meaning as migrations/postgres/0021_users.sql.

-- One row per person. `role` is a stored fact, one of `viewer`, `approver`, `admin`. Only the SHA-256
-- of a personal token is kept (hex): the token itself is shown once, by `executor users add`.
-- A revoked person keeps the row (their name stays in the audit trail) and can no longer log in.
CREATE TABLE executor_users (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    name           TEXT NOT NULL,
    role           TEXT NOT NULL,
    token_sha256   TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    created_by     TEXT,
    revoked_at     TEXT,
    -- The GitHub account "Sign in with GitHub" logs in as this person (lowercase), if any.
    github_login   TEXT,
    -- When the person last marked Needs you as looked at: "what changed since" starts here.
    looked_at      TEXT
);
CREATE UNIQUE INDEX executor_users_token ON executor_users (token_sha256);
-- One active person per name; a revoked name may be given again.
CREATE UNIQUE INDEX executor_users_active_name ON executor_users (name) WHERE revoked_at IS NULL;
CREATE UNIQUE INDEX executor_users_active_github ON executor_users (github_login) WHERE revoked_at IS NULL;
