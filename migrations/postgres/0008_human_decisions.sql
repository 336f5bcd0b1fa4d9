-- executor schema v8 (PostgreSQL): what a human decided stays decided. Same meaning as
-- migrations/sqlite/0008_human_decisions.sql.

-- Who made the last decision to skip a task, while it is skipped: 'filter' (its name is skip_rule),
-- 'triage' (the analyzer's agent), 'human' (executor skip, the dashboard; whatever decided before) or
-- 'imported' (skipped in a v1 export). `executor reanalyze` leaves a human's skip alone unless asked.
ALTER TABLE executor_queue ADD COLUMN skipped_by TEXT;

-- Skips from before v8, from what was recorded then: a filter's name; else the last event that moved
-- the task to skip (the analyzer's is a triage; the import's, imported; any other actor's, a human's);
-- else, with no such event, a triage if the task was analyzed and a human's otherwise.
UPDATE executor_queue SET skipped_by = CASE
    WHEN skip_rule IS NOT NULL THEN 'filter'
    ELSE COALESCE(
        (SELECT CASE WHEN e.actor = 'analyzer' THEN 'triage'
                     WHEN e.reason = 'imported from v1' THEN 'imported'
                     ELSE 'human' END
           FROM executor_events e
          WHERE e.task_gid = executor_queue.task_gid AND e.kind = 'queue_status' AND e.to_state = 'skip'
          ORDER BY e.id DESC LIMIT 1),
        CASE WHEN analyzed_at IS NOT NULL THEN 'triage' ELSE 'human' END)
    END
WHERE status = 'skip';

-- The ids (a JSON list) of every comment on the pull request in the observation that completed the
-- run: a trusted comment not among them is new since the completion, whatever its timestamp (GitHub
-- stamps whole seconds). NULL for a run completed before v8 or imported: its comments are judged by
-- time, to the second.
ALTER TABLE executor_runs ADD COLUMN completion_comment_ids TEXT;
