-- executor schema v4 (SQLite): what the GitHub forge needs. Same meaning as
-- migrations/postgres/0004_github.sql.

-- Comments executor posted on a forge (agents' replies through `executor comment --as-agent`, its
-- notices, a review's findings). On GitHub the agent and the human often share one account, so a
-- comment is known to be an agent's by its id recorded here — never by its author or its text.
-- in_reply_to: the comment it answers, where the forge itself does not say (conversation comments).
CREATE TABLE executor_agent_comments (
    comment_id  TEXT PRIMARY KEY,
    run_id      INTEGER NOT NULL REFERENCES executor_runs(id),
    in_reply_to TEXT,
    created_at  TEXT NOT NULL
);
CREATE INDEX executor_agent_comments_run ON executor_agent_comments (run_id);

-- When the runner last pushed the run's branch to the forge: a worker that ended after it has commits
-- to push (agents only commit; the runner pushes).
ALTER TABLE executor_runs ADD COLUMN pushed_at TEXT;

-- When a pr_review worker's findings were posted on the pull request as a review (once per review).
ALTER TABLE executor_worker_sessions ADD COLUMN review_posted_at TEXT;
