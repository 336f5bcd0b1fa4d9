-- executor schema v24 (SQLite): GitLab delivers webhooks too. Same meaning as
-- migrations/postgres/0024_gitlab_deliveries.sql.

-- A delivery's id is unique per sender: GitLab's (`Idempotency-Key`, else `X-Gitlab-Event-UUID`) joins
-- GitHub's and Asana's. SQLite cannot change a CHECK in place, so the table is made again with its rows.
CREATE TABLE executor_webhook_deliveries_v24 (
    sender      TEXT NOT NULL CHECK (sender IN ('github','asana','gitlab')),
    delivery_id TEXT NOT NULL,
    event       TEXT NOT NULL,
    received_at TEXT NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('marked','not_ours','unknown_repo','ignored_event','woke')),
    PRIMARY KEY (sender, delivery_id)
);
INSERT INTO executor_webhook_deliveries_v24 (sender, delivery_id, event, received_at, outcome)
    SELECT sender, delivery_id, event, received_at, outcome FROM executor_webhook_deliveries;
DROP TABLE executor_webhook_deliveries;
ALTER TABLE executor_webhook_deliveries_v24 RENAME TO executor_webhook_deliveries;
CREATE INDEX executor_webhook_deliveries_at ON executor_webhook_deliveries (received_at);
