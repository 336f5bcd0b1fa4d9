-- executor schema v16 (PostgreSQL): when the last attempt to post an agent's reply began. Same meaning as
-- migrations/sqlite/0016_reply_in_flight.sql.

-- Written before the post: a runner killed while GitHub still carries a post out leaves this behind,
-- and the next runner looks for the reply only once it could have landed, instead of posting it again.
ALTER TABLE executor_agent_replies ADD COLUMN post_started_at TIMESTAMPTZ;
