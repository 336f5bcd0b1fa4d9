-- executor schema v15 (SQLite): what a runner reads per tick and as it starts, whatever the number of
-- runners that ever ended. Same meaning as migrations/postgres/0015_ended_runners.sql.

-- Cron starts a runner every minute on every host, and each leaves a row in executor_runners once it
-- ends (kept for 7 days): thousands. Each tick looks for what gone runners left from the few rows that
-- say it, the runs with a lease (here) and the live worker sessions (executor_worker_sessions_live),
-- never from the ended runners. This index replaces executor_runs_lease: a lease is held on an active
-- run (abandoning a run lets it go), and freeing a lost runner's leases reads them in any state.
DROP INDEX executor_runs_lease;
CREATE INDEX executor_runs_leased ON executor_runs (lease_owner) WHERE lease_owner IS NOT NULL;

-- The runners that ended recently (a host absent for less than the ttl is not absent) and those ended
-- long ago (forgotten as a runner registers), without reading the others.
CREATE INDEX executor_runners_ended ON executor_runners (ended_at) WHERE ended_at IS NOT NULL;

-- The agents a lost runner may have left running on its host, read by each runner of the host as it
-- starts, without reading the host's other sessions.
CREATE INDEX executor_worker_sessions_host_lost ON executor_worker_sessions (host, id)
    WHERE end_reason = 'host_lost' AND pid IS NOT NULL;
