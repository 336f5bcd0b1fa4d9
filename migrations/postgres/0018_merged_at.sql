-- executor schema v18 (PostgreSQL): when a run's pull request was first seen merged. Same meaning as
-- migrations/sqlite/0018_merged_at.sql.

-- Written once, when the runner first observes the merge (a run stays `complete` whether or not its
-- pull request is merged): the fact insights count merged pull requests and time to merge by. NULL for a
-- run whose merge was never seen, or seen before v18.
ALTER TABLE executor_runs ADD COLUMN merged_at TIMESTAMPTZ;
CREATE INDEX executor_runs_merged_at ON executor_runs (merged_at) WHERE merged_at IS NOT NULL;
