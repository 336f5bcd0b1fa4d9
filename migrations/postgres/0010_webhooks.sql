-- executor schema v10 (PostgreSQL): webhooks make executor look sooner. Same meaning as
-- migrations/sqlite/0010_webhooks.sql.

-- Every verified delivery, by its sender's id (GitHub's X-GitHub-Delivery): a redelivery finds its row
-- and is acknowledged without doing anything again. Forged or unsigned deliveries are never written
-- (anyone could fill the table); they are logged. `outcome` is what the delivery did, by name.
CREATE TABLE executor_webhook_deliveries (
    sender      TEXT NOT NULL CHECK (sender IN ('github','asana')),
    delivery_id TEXT NOT NULL,
    event       TEXT NOT NULL,
    received_at TIMESTAMPTZ NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('marked','not_ours','unknown_repo','ignored_event','woke')),
    PRIMARY KEY (sender, delivery_id)
);
CREATE INDEX executor_webhook_deliveries_at ON executor_webhook_deliveries (received_at);

-- Pull requests a delivery said changed: the forge's next observation asks GitHub for them whatever
-- its ETag and last observation say, then removes the marks it honoured (up to the id it read, so a
-- mark made during the observation stays for the next one).
CREATE TABLE executor_pr_marks (
    id        BIGSERIAL PRIMARY KEY,
    repo      TEXT NOT NULL,
    pr_number BIGINT NOT NULL,
    marked_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX executor_pr_marks_repo ON executor_pr_marks (repo, id);

-- Wake-ups: `requested` counts the deliveries that asked for a look, `seen` the highest count a process
-- had read when it last began a pass. requested > seen: nobody has looked since. The sleeping runner
-- (and `executor serve`, which starts one when none is alive) read this one row a few times a second.
CREATE TABLE executor_wakes (
    scope        TEXT PRIMARY KEY CHECK (scope IN ('runner','analyzer')),
    requested    BIGINT NOT NULL,
    seen         BIGINT NOT NULL,
    requested_at TIMESTAMPTZ
);
INSERT INTO executor_wakes (scope, requested, seen) VALUES ('runner', 0, 0), ('analyzer', 0, 0);
