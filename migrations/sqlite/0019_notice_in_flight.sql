-- executor schema v19 (SQLite): when the last attempt to post a notice, or a review, on its pull request
-- began. Same meaning as migrations/postgres/0019_notice_in_flight.sql.

-- Written before the post, as for an agent's reply (v16): a runner killed while GitHub still carries a
-- notice out leaves this behind, and the next runner looks for the notice only once it could have
-- landed, instead of posting it again.
ALTER TABLE executor_notifications ADD COLUMN post_started_at TEXT;

-- The same for a `pr_review` worker's review (`review_posted_at` is written after its post).
ALTER TABLE executor_worker_sessions ADD COLUMN review_post_started_at TEXT;
