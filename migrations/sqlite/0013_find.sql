-- executor schema v13 (SQLite): finding tasks among 100,000 — full-text search and the queue's sorts.
-- Same meaning as migrations/postgres/0013_find.sql.

-- The words of each task's description and notes (FTS5, over the table itself: it stores no second
-- copy of the text). Words are runs of letters and digits, case folded, accents kept (as PostgreSQL's
-- 'simple' configuration keeps them). The triggers keep it in step with every write to the two columns,
-- whichever path makes it (intake, import, a revision accepted), so none of them has to know.
CREATE VIRTUAL TABLE executor_queue_fts USING fts5(
    description, notes,
    content = 'executor_queue', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 0'
);
INSERT INTO executor_queue_fts (executor_queue_fts) VALUES ('rebuild');
CREATE TRIGGER executor_queue_fts_insert AFTER INSERT ON executor_queue BEGIN
    INSERT INTO executor_queue_fts (rowid, description, notes) VALUES (new.id, new.description, new.notes);
END;
CREATE TRIGGER executor_queue_fts_delete AFTER DELETE ON executor_queue BEGIN
    INSERT INTO executor_queue_fts (executor_queue_fts, rowid, description, notes)
        VALUES ('delete', old.id, old.description, old.notes);
END;
CREATE TRIGGER executor_queue_fts_update AFTER UPDATE OF description, notes ON executor_queue BEGIN
    INSERT INTO executor_queue_fts (executor_queue_fts, rowid, description, notes)
        VALUES ('delete', old.id, old.description, old.notes);
    INSERT INTO executor_queue_fts (rowid, description, notes) VALUES (new.id, new.description, new.notes);
END;

-- One index per sort of the queue page, in the order `store/tasks/sort.rs` writes it (empty values
-- last; the rowid, `id`, ends every SQLite index, the tie-break), so a page is read from the index's
-- start or end instead of sorting 100,000 rows. The status sort (and a status filter under the
-- default sort) uses the second.
CREATE INDEX executor_queue_by_priority ON executor_queue (priority IS NULL, priority, added_at);
CREATE INDEX executor_queue_by_status ON executor_queue (status, priority IS NULL, priority, added_at);
CREATE INDEX executor_queue_by_source ON executor_queue (source IS NULL, source);
CREATE INDEX executor_queue_by_complexity ON executor_queue (complexity IS NULL, complexity);
CREATE INDEX executor_queue_by_feasibility ON executor_queue (feasibility IS NULL, feasibility);
CREATE INDEX executor_queue_by_added ON executor_queue (added_at);
CREATE INDEX executor_queue_by_updated ON executor_queue (updated_at);

-- Every column a filter or a sort reads, without the text: counting a filtered queue, or sorting a
-- filtered part of it by another column, reads this narrow copy instead of 100,000 wide rows.
CREATE INDEX executor_queue_narrow ON executor_queue
    (status, source, repo, priority, added_at, updated_at, complexity, feasibility, task_gid);
