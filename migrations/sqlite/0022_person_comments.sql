-- executor schema v22 (SQLite): the comments a person posted from the dashboard, and the tasks whose
-- revision waits for a person. Same meaning as
-- migrations/postgres/0022_person_comments.sql.

-- One row per comment the dashboard posted on a run's pull request, by its forge id (GitHub node id,
-- local forge row id). Such a comment is a trusted human's, by this record alone: on GitHub it is
-- posted with executor's token, and its text ("alice (via executor): …") is what anyone could type.
CREATE TABLE executor_person_comments (
    comment_id  TEXT PRIMARY KEY,
    run_id      INTEGER NOT NULL REFERENCES executor_runs(id),
    person      TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX executor_person_comments_run ON executor_person_comments (run_id);

-- "Needs you" lists the tasks whose tracker revision waits for a person: a few among many tasks.
CREATE INDEX executor_queue_revisions ON executor_queue (revision_at, id) WHERE revision_at IS NOT NULL;
