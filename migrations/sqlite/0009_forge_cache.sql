-- executor schema v9 (SQLite): what a forge remembers between processes. Same meaning as
-- migrations/postgres/0009_forge_cache.sql.

-- Opaque values a forge keeps by (repo, key): for GitHub, the pull-request listing's ETag, the last
-- snapshot of each pull request, and the rate-limit blocks every process must honour. A runner started
-- by cron starts warm from them rather than with a full listing and every pull request asked again.
-- `repo` is a configured repository's name, or a scope several repositories share (a GitHub host's
-- rate limits). The store knows nothing of what `value` holds.
CREATE TABLE executor_forge_cache (
    repo       TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (repo, key)
);
