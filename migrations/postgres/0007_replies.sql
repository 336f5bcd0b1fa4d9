-- executor schema v7 (PostgreSQL): agents' replies as an outbox. Same meaning as
-- migrations/sqlite/0007_replies.sql.

-- One row per comment a fix_comments worker's prompt offered it (written before the agent runs), then
-- the agent's reply to it (validated and redacted, from its final JSON line, the file EXECUTOR_REPLIES
-- names, or `executor comment --as-agent --reply-to`), then the forge's id of the reply once posted.
-- Unique per session and comment: a worker answers each comment once, whatever the channel, and a
-- runner that dies between the agent's end and the post posts it on its next tick, once.
CREATE TABLE executor_agent_replies (
    id                BIGSERIAL PRIMARY KEY,
    run_id            BIGINT NOT NULL REFERENCES executor_runs(id),
    session_id        BIGINT NOT NULL REFERENCES executor_worker_sessions(id),
    -- The forge's id of the comment answered (GitHub node id; local forge row id).
    comment_id        TEXT NOT NULL,
    offered_at        TIMESTAMPTZ NOT NULL,
    -- NULL until the agent answered.
    body              TEXT,
    answered_at       TIMESTAMPTZ,
    -- The forge's id of the reply; NULL until it is on the pull request.
    posted_comment_id TEXT,
    posted_at         TIMESTAMPTZ,
    attempts          BIGINT NOT NULL DEFAULT 0,
    last_error        TEXT
);
CREATE UNIQUE INDEX executor_agent_replies_once ON executor_agent_replies (session_id, comment_id);
CREATE INDEX executor_agent_replies_unposted ON executor_agent_replies (run_id)
    WHERE body IS NOT NULL AND posted_at IS NULL;
