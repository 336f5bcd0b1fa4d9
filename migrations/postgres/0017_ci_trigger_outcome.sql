-- executor schema v17 (PostgreSQL): what triggering CI at `ci_triggered_sha` did. Same meaning as
-- migrations/sqlite/0017_ci_trigger_outcome.sql.

-- One of not_configured, dispatched, rerun, nothing_to_rerun, local_ci (domain::CiTrigger); NULL for a
-- trigger recorded before v17, whose outcome nobody knows.
ALTER TABLE executor_runs ADD COLUMN ci_trigger_outcome TEXT;
