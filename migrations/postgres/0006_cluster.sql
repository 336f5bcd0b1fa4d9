-- executor schema v6 (PostgreSQL): several hosts share one database. Same meaning as
-- migrations/sqlite/0006_cluster.sql.

-- One row per runner process (instance), on any host. Its id is the lease owner of the runs it holds.
-- Times come from the database's clock: hosts' clocks never decide who is alive.
CREATE TABLE executor_runners (
    id            TEXT PRIMARY KEY,
    host          TEXT NOT NULL,
    pid           BIGINT NOT NULL,
    version       TEXT NOT NULL,
    -- The machine it runs on (/etc/machine-id): a host name given to two machines is seen, not obeyed.
    machine       TEXT NOT NULL DEFAULT '',
    started_at    TIMESTAMPTZ NOT NULL,
    heartbeat_at  TIMESTAMPTZ NOT NULL,
    -- heartbeat_at + this runner's lease_ttl: past it, the runner is dead and its runs are rescued.
    alive_until   TIMESTAMPTZ NOT NULL,
    ended_at      TIMESTAMPTZ,
    -- 'stopped' (it ended itself), 'died' (its process vanished on its host), 'lost' (its heartbeat lapsed).
    end_reason    TEXT CHECK (end_reason IN ('stopped','died','lost')),
    max_workers   BIGINT NOT NULL,
    ticks         BIGINT NOT NULL DEFAULT 0,
    errors        BIGINT NOT NULL DEFAULT 0,
    last_error    TEXT,
    last_error_at TIMESTAMPTZ
);
CREATE INDEX executor_runners_live ON executor_runners (host) WHERE ended_at IS NULL;
-- One row per host before v6; executor_runners says everything it said, per runner.
DROP TABLE executor_runner_status;

-- The runner instance supervising a worker (NULL: a worker run by hand).
ALTER TABLE executor_worker_sessions ADD COLUMN runner_id TEXT;
CREATE INDEX executor_worker_sessions_live ON executor_worker_sessions (runner_id) WHERE ended_at IS NULL;

-- 1 when the run's holder let it go because its host had no free worker slot: a runner with one takes it.
ALTER TABLE executor_runs ADD COLUMN wants_slot BIGINT NOT NULL DEFAULT 0;
CREATE INDEX executor_runs_lease ON executor_runs (lease_owner) WHERE state IN ('queued','in_progress','pr','complete');
-- A claim walks, by id, only the runs of its kind (the same conditions as in Store::claim_runs): those
-- that only need watching, and those that need a worker. Neither walks past the other, nor past the
-- abandoned runs (most, over time).
CREATE INDEX executor_runs_to_watch ON executor_runs (id)
    WHERE state IN ('in_progress','pr','complete') AND wants_slot = 0;
CREATE INDEX executor_runs_to_work ON executor_runs (id)
    WHERE state = 'queued' OR (wants_slot = 1 AND state IN ('in_progress','pr','complete'));

-- The host whose runner started a local CI run: only that host can see its process and its files.
ALTER TABLE executor_local_ci ADD COLUMN host TEXT;

-- Which runner (its id in executor_runners) made a run's state change: `actor` says `runner`, this says
-- which of them.
ALTER TABLE executor_events ADD COLUMN actor_id TEXT;
