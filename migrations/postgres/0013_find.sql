-- executor schema v13 (PostgreSQL): finding tasks among 100,000 — full-text search and the queue's
-- sorts. Same meaning as migrations/sqlite/0013_find.sql.

-- The words of each task's description and notes, kept by the database itself on every write (a
-- generated column), with a GIN index. Words are runs of letters and digits: ASCII punctuation becomes
-- a space first, so that `login.rs` is the words `login` and `rs` as on SQLite (PostgreSQL's parser
-- would keep it as one file name), and the 'simple' configuration only folds case (no stemming, no
-- stop words: code identifiers stay whole). Only the first 100,000 characters count: a tsvector holds
-- at most 1 MB, and a longer text must still be storable.
ALTER TABLE executor_queue ADD COLUMN search_words tsvector GENERATED ALWAYS AS (
    to_tsvector('simple'::regconfig, left(regexp_replace(
        coalesce(description, '') || ' ' || coalesce(notes, ''),
        '[^0-9A-Za-z\u0080-\U0010FFFF]+', ' ', 'g'), 100000))
) STORED;
CREATE INDEX executor_queue_search ON executor_queue USING GIN (search_words);

-- One index per sort of the queue page, in the order `store/tasks/sort.rs` writes it (empty values
-- last, `id` the tie-break), so a page is read from the index's start or end (backwards for a
-- descending sort) instead of sorting 100,000 rows. The status sort (and a status filter under the
-- default sort) uses the second.
CREATE INDEX executor_queue_by_priority ON executor_queue (priority, added_at, id);
CREATE INDEX executor_queue_by_status ON executor_queue (status, priority, added_at, id);
CREATE INDEX executor_queue_by_source ON executor_queue (source, id);
CREATE INDEX executor_queue_by_complexity ON executor_queue (complexity, id);
CREATE INDEX executor_queue_by_feasibility ON executor_queue (feasibility, id);
CREATE INDEX executor_queue_by_added ON executor_queue (added_at, id);
CREATE INDEX executor_queue_by_updated ON executor_queue (updated_at, id);

-- Every column a filter or a sort reads, without the text: counting a filtered queue, or sorting a
-- filtered part of it by another column, can read this narrow copy (an index-only scan) instead of
-- 100,000 wide rows.
CREATE INDEX executor_queue_narrow ON executor_queue
    (status, source, repo, priority, added_at, updated_at, complexity, feasibility, task_gid);
