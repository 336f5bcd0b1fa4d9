-- executor schema v24 (PostgreSQL): GitLab delivers webhooks too. Same meaning as
-- migrations/sqlite/0024_gitlab_deliveries.sql.

-- A delivery's id is unique per sender: GitLab's (`Idempotency-Key`, else `X-Gitlab-Event-UUID`) joins
-- GitHub's and Asana's.
ALTER TABLE executor_webhook_deliveries DROP CONSTRAINT executor_webhook_deliveries_sender_check;
ALTER TABLE executor_webhook_deliveries ADD CONSTRAINT executor_webhook_deliveries_sender_check
    CHECK (sender IN ('github','asana','gitlab'));
