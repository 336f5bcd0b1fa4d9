-- executor schema v16 (SQLite): what the dashboard's insights read. Same meaning as
-- migrations/postgres/0014_insights.sql.

-- The insights page counts a window of 7 to 90 days of events by day. The events table only grows
-- (every task added, every status and state change), so the window is read through this index, and
-- entirely from it: it holds every column the count reads.
CREATE INDEX executor_events_at ON executor_events (at, kind, to_state, run_id);

-- Cost per day and how each worker kind ended, over the same window, without reading older sessions.
CREATE INDEX executor_worker_sessions_started ON executor_worker_sessions (started_at);

-- GitHub's hourly budget of GraphQL points, as the forge observes it: one row per hour window (GitHub's
-- window ends at `reset_at`), with the fewest points seen left in it. Used = hour_limit - lowest_remaining
-- counts every caller on the token, the agents' own `gh` included. `hour_limit` is GitHub's
-- `x-ratelimit-limit` when it sent one.
CREATE TABLE executor_github_usage (
    resource         TEXT NOT NULL,
    reset_at         TEXT NOT NULL,
    lowest_remaining INTEGER NOT NULL,
    hour_limit       INTEGER,
    observed_at      TEXT NOT NULL,
    PRIMARY KEY (resource, reset_at)
);
