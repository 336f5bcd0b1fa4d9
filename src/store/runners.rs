//! Runner processes (`executor_runners`): each registers when it starts, heartbeats by the database's
//! clock while it lives, and ends. A runner whose heartbeat lapsed past its lease is lost: its workers
//! end as `host_lost` and its runs are free for another runner to rescue. `executor status` lists them.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::clock::secs;
use super::row::Cols;
use super::workers::parse_col;
use super::{BeginWrite, Result, Store, WorkerEnd, on_pool};
use crate::domain::{Actor, EndReason, RunnerEnd, TaskGid};

/// What a runner says about itself when it starts.
#[derive(Debug, Clone)]
pub struct RunnerRegistration<'a> {
    /// `host/instance`: the lease owner of the runs it holds.
    pub id: &'a str,
    pub host: &'a str,
    pub pid: i64,
    pub version: &'a str,
    /// The machine it runs on, to tell a host name shared by two machines (a mistake) from one host.
    pub machine: &'a str,
    /// Its `runner.lease_ttl`: without a heartbeat for this long, it is dead.
    pub ttl: Duration,
    pub max_workers: u32,
}

/// What a heartbeat found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heartbeat {
    /// Still registered as alive; `leases` runs were renewed.
    Alive { leases: u64 },
    /// Another runner declared this one lost (it missed its heartbeats): its runs were taken over.
    Lost,
}

/// A runner as `executor status` shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunnerStatus {
    pub id: String,
    pub host: String,
    pub pid: i64,
    pub version: String,
    pub started_at: DateTime<Utc>,
    pub heartbeat_at: DateTime<Utc>,
    pub alive_until: DateTime<Utc>,
    /// Not ended, and its heartbeat is fresh by the database's clock.
    pub alive: bool,
    pub ended_at: Option<DateTime<Utc>>,
    pub end_reason: Option<RunnerEnd>,
    pub max_workers: i64,
    pub ticks: i64,
    /// Errors met since it started: steps that failed, workers that could not start, notices not sent.
    pub errors: i64,
    pub last_error: Option<String>,
    pub last_error_at: Option<DateTime<Utc>>,
    /// Runs whose lease it holds.
    pub leases: i64,
    /// Worker sessions it supervises.
    pub workers: i64,
}

/// A runner not ended on a host, as another runner of the host sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRunner {
    pub id: String,
    pub pid: i64,
    pub machine: String,
}

/// A runner that was declared lost, and what was taken from it.
#[derive(Debug, Clone, PartialEq)]
pub struct LostRunner {
    pub id: String,
    pub host: String,
    /// Its worker sessions, ended as `host_lost`, with their runs.
    pub sessions: Vec<(i64, i64)>,
    /// Runs whose lease it held, now free.
    pub runs_freed: u64,
}

impl RunnerStatus {
    /// `alive`, `stopped`, `died` or `lost`, as people read it. A runner whose heartbeat lapsed is lost
    /// even before another runner declared it so.
    pub fn state(&self) -> &'static str {
        match (self.end_reason, self.ended_at) {
            (Some(end), _) => end.as_str(),
            (None, Some(_)) => "ended",
            (None, None) if self.alive => "alive",
            (None, None) => RunnerEnd::Lost.as_str(),
        }
    }
}

fn status_from_row(r: &impl Cols) -> Result<RunnerStatus> {
    Ok(RunnerStatus {
        id: r.req_text("id")?,
        host: r.req_text("host")?,
        pid: r.req_int("pid")?,
        version: r.req_text("version")?,
        started_at: r.req_time("started_at")?,
        heartbeat_at: r.req_time("heartbeat_at")?,
        alive_until: r.req_time("alive_until")?,
        alive: r.int("alive")?.unwrap_or(0) != 0,
        ended_at: r.time("ended_at")?,
        end_reason: r.text("end_reason")?.map(|v| parse_col("end_reason", &v)).transpose()?,
        max_workers: r.req_int("max_workers")?,
        ticks: r.int("ticks")?.unwrap_or(0),
        errors: r.int("errors")?.unwrap_or(0),
        last_error: r.text("last_error")?,
        last_error_at: r.time("last_error_at")?,
        leases: r.int("leases")?.unwrap_or(0),
        workers: r.int("workers")?.unwrap_or(0),
    })
}

/// A runner's id and its host.
type IdAndHost = (String, String);

/// Ended runners are kept this long for `executor status` and then forgotten.
const KEEP_ENDED_DAYS: f64 = 7.0;

impl Store {
    /// A runner starts: its row, stamped by the database's clock. Old rows of ended runners go.
    pub async fn register_runner(&self, r: &RunnerRegistration<'_>) -> Result<()> {
        let (now, later) = (self.pool.now_sql(), self.pool.later_sql(6));
        let insert = format!(
            "INSERT INTO executor_runners (id, host, pid, version, max_workers, machine, started_at, heartbeat_at, alive_until) \
             VALUES ($1, $2, $3, $4, $5, $7, {now}, {now}, {later})"
        );
        let prune = format!(
            "DELETE FROM executor_runners WHERE ended_at IS NOT NULL AND ended_at < {}",
            self.pool.later_sql(1)
        );
        on_pool!(self, |p| {
            sqlx::query(&insert)
                .bind(r.id)
                .bind(r.host)
                .bind(r.pid)
                .bind(r.version)
                .bind(i64::from(r.max_workers))
                .bind(secs(r.ttl))
                .bind(r.machine)
                .execute(p)
                .await?;
            sqlx::query(&prune).bind(-KEEP_ENDED_DAYS * 86_400.0).execute(p).await?;
        });
        Ok(())
    }

    /// The runner is alive: stamps its heartbeat and renews the lease of every run it holds, in one
    /// transaction, by the database's clock. `Lost` when another runner declared it lost meanwhile.
    pub async fn heartbeat(&self, id: &str, ttl: Duration) -> Result<Heartbeat> {
        let (now, later) = (self.pool.now_sql(), self.pool.later_sql(2));
        let beat = format!(
            "UPDATE executor_runners SET heartbeat_at = {now}, alive_until = {later} WHERE id = $1 AND ended_at IS NULL"
        );
        let renew = format!(
            "UPDATE executor_runs SET lease_expires_at = {later} WHERE lease_owner = $1 \
             AND state IN ('queued','in_progress','pr','complete')"
        );
        on_pool!(self, |p| {
            let mut tx = p.begin_write().await?;
            let alive = sqlx::query(&beat).bind(id).bind(secs(ttl)).execute(&mut *tx).await?.rows_affected();
            if alive == 0 {
                return Ok(Heartbeat::Lost);
            }
            let leases =
                sqlx::query(&renew).bind(id).bind(secs(ttl)).execute(&mut *tx).await?.rows_affected();
            tx.commit().await?;
            Ok(Heartbeat::Alive { leases })
        })
    }

    /// One tick done, with the errors it met and the last of them.
    pub async fn runner_ticked(&self, id: &str, errors: i64, last_error: Option<&str>) -> Result<()> {
        let sql = format!(
            "UPDATE executor_runners SET ticks = ticks + 1, errors = errors + $1, \
               last_error = COALESCE($2, last_error), \
               last_error_at = CASE WHEN $2 IS NULL THEN last_error_at ELSE {} END \
             WHERE id = $3",
            self.pool.now_sql()
        );
        on_pool!(self, |p| {
            sqlx::query(&sql).bind(errors).bind(last_error).bind(id).execute(p).await?;
        });
        Ok(())
    }

    /// The runner ends itself: it lets go of every run it still holds.
    pub async fn runner_ended(&self, id: &str) -> Result<()> {
        let end = format!(
            "UPDATE executor_runners SET ended_at = {}, end_reason = 'stopped' WHERE id = $1 AND ended_at IS NULL",
            self.pool.now_sql()
        );
        on_pool!(self, |p| {
            let mut tx = p.begin_write().await?;
            sqlx::query(&end).bind(id).execute(&mut *tx).await?;
            sqlx::query(
                "UPDATE executor_runs SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = $1",
            )
            .bind(id)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
        });
        Ok(())
    }

    /// A runner of this host whose process is gone (`dead`) is ended at once, without waiting for its
    /// heartbeat to lapse, and the runs it held pass to `heir` (a live runner of the same host, which
    /// adopts the workers it left running). `false` if it had ended already.
    pub async fn declare_runner_died(&self, dead: &str, heir: &str, ttl: Duration) -> Result<bool> {
        let end = format!(
            "UPDATE executor_runners SET ended_at = {}, end_reason = 'died' WHERE id = $1 AND ended_at IS NULL",
            self.pool.now_sql()
        );
        let pass = format!(
            "UPDATE executor_runs SET lease_owner = $1, lease_expires_at = {} WHERE lease_owner = $3",
            self.pool.later_sql(2)
        );
        Ok(on_pool!(self, |p| {
            let mut tx = p.begin_write().await?;
            let n = sqlx::query(&end).bind(dead).execute(&mut *tx).await?.rows_affected();
            if n == 1 {
                sqlx::query(&pass).bind(heir).bind(secs(ttl)).bind(dead).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            n == 1
        }))
    }

    /// Declares lost every runner whose heartbeat lapsed (by the database's clock; each by one caller),
    /// and takes from runners that are gone what they left: the leases of a lost runner are freed for
    /// a rescue; the live workers of a runner whose host has no live runner left end as `host_lost`
    /// (their cost so far stays on the run; on a host with a live runner, that runner adopts them);
    /// and such a host's local CI runs, which nobody else can see, are forgotten so that CI runs again.
    /// Idempotent, and run every tick: it also finishes what a caller killed half-way left undone.
    pub async fn declare_lost_runners(&self) -> Result<Vec<LostRunner>> {
        let now = self.pool.now_sql();
        let mark = format!(
            "UPDATE executor_runners SET ended_at = {now}, end_reason = 'lost' \
             WHERE ended_at IS NULL AND alive_until < {now} RETURNING id, host"
        );
        // Read from the few rows that say what is left to take (runs with a lease, live worker sessions:
        // each through its partial index), never from the ended runners, which cron's restarts leave by
        // the thousand (soak finding: 1.0-1.6 s a tick with 2,400 of them on PostgreSQL, whose estimate
        // of a query over all of them grows past its JIT thresholds, and then compiles it every call).
        let gone = format!(
            "SELECT x.id, x.host FROM executor_runners x WHERE x.id IN \
               (SELECT r.lease_owner FROM executor_runs r WHERE r.lease_owner IS NOT NULL) \
               AND x.ended_at IS NOT NULL AND x.end_reason = 'lost' \
             UNION \
             SELECT x.id, x.host FROM executor_runners x WHERE x.id IN \
               (SELECT s.runner_id FROM executor_worker_sessions s WHERE s.ended_at IS NULL) \
               AND x.ended_at IS NOT NULL \
               AND NOT EXISTS (SELECT 1 FROM executor_runners h WHERE h.host = x.host AND h.ended_at IS NULL \
                 AND h.alive_until > {now}) \
             ORDER BY id"
        );
        let (marked, gone): (Vec<IdAndHost>, Vec<IdAndHost>) = on_pool!(self, |p| {
            let marked = sqlx::query_as(&mark).fetch_all(p).await?;
            (marked, sqlx::query_as(&gone).fetch_all(p).await?)
        });
        let mut taken = Vec::new();
        for (id, host) in gone {
            let newly_lost = marked.iter().any(|(m, _)| *m == id);
            let lost = self.take_from_gone(id, host).await?;
            if newly_lost || !lost.sessions.is_empty() || lost.runs_freed > 0 {
                taken.push(lost);
            }
        }
        // Lost with nothing left to take: said all the same.
        for (id, host) in marked {
            if !taken.iter().any(|t| t.id == id) {
                taken.push(LostRunner { id, host, sessions: Vec::new(), runs_freed: 0 });
            }
        }
        Ok(taken)
    }

    async fn take_from_gone(&self, id: String, host: String) -> Result<LostRunner> {
        let host_alive = format!(
            "SELECT count(*) FROM executor_runners WHERE host = $1 AND ended_at IS NULL AND alive_until > {}",
            self.pool.now_sql()
        );
        let (live, host_alive): (Vec<(i64, i64)>, i64) = on_pool!(self, |p| {
            let live = sqlx::query_as(
                "SELECT id, run_id FROM executor_worker_sessions WHERE runner_id = $1 AND ended_at IS NULL ORDER BY id",
            )
            .bind(&id)
            .fetch_all(p)
            .await?;
            (live, sqlx::query_scalar(&host_alive).bind(&host).fetch_one(p).await?)
        });
        let mut sessions = Vec::new();
        for (session, run) in live.into_iter().filter(|_| host_alive == 0) {
            if self.end_worker_session(session, None, &WorkerEnd::new(EndReason::HostLost)).await? {
                sessions.push((session, run));
            }
        }
        let freed: Vec<(i64, String)> = on_pool!(self, |p| {
            sqlx::query_as(
                "UPDATE executor_runs SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = $1 \
                 RETURNING id, task_gid",
            )
            .bind(&id)
            .fetch_all(p)
            .await?
        });
        for (run, gid) in &freed {
            let why =
                format!("runner {id} on host {host} stopped heartbeating; another runner takes the run over");
            let gid = TaskGid::parse(gid).ok();
            self.record_note(Actor::Runner, gid.as_ref(), Some(*run), &why).await?;
        }
        if host_alive == 0 {
            self.forget_local_ci_of(&host).await?;
        }
        Ok(LostRunner { id, host, sessions, runs_freed: freed.len() as u64 })
    }

    /// Local CI runs started on `host` can only be seen from there (their process and files): with no
    /// live runner left on it, they are forgotten, and their runs' CI is triggered again.
    async fn forget_local_ci_of(&self, host: &str) -> Result<()> {
        let live_here = format!(
            "SELECT count(*) FROM executor_runners WHERE host = $1 AND ended_at IS NULL AND alive_until > {}",
            self.pool.now_sql()
        );
        on_pool!(self, |p| {
            let mut tx = p.begin_write().await?;
            let live: i64 = sqlx::query_scalar(&live_here).bind(host).fetch_one(&mut *tx).await?;
            if live == 0 {
                sqlx::query(
                    "UPDATE executor_runs SET ci_triggered_sha = NULL, ci_trigger_outcome = NULL WHERE id IN (SELECT p.run_id FROM executor_local_ci c \
                     JOIN executor_local_prs p ON p.id = c.pr_id WHERE c.status = 'pending' AND c.host = $1)",
                )
                .bind(host)
                .execute(&mut *tx)
                .await?;
                sqlx::query("DELETE FROM executor_local_ci WHERE status = 'pending' AND host = $1")
                    .bind(host)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
        });
        Ok(())
    }

    /// Whether `host` has had no runner for `ttl` by the database's clock: none registered and not ended,
    /// and none ended within `ttl`. A host whose runner exits and is started again by cron is not absent.
    pub async fn host_absent_for(&self, host: &str, ttl: Duration) -> Result<bool> {
        // Read through two indexes, the host's live runners and the runners ended within `ttl` (migration
        // 15), never through the host's older runners.
        let sql = format!(
            "SELECT count(*) FROM executor_runners WHERE host = $1 AND (ended_at IS NULL OR ended_at > {})",
            self.pool.later_sql(2)
        );
        let n: i64 =
            on_pool!(self, |p| sqlx::query_scalar(&sql).bind(host).bind(-secs(ttl)).fetch_one(p).await?);
        Ok(n == 0)
    }

    /// Runners of `host` not ended, with their pid and machine (for a runner to see which of its host's
    /// are gone).
    pub async fn live_runners_of(&self, host: &str) -> Result<Vec<HostRunner>> {
        let rows: Vec<(String, i64, String)> = on_pool!(self, |p| {
            sqlx::query_as(
                "SELECT id, pid, machine FROM executor_runners WHERE host = $1 AND ended_at IS NULL ORDER BY id",
            )
            .bind(host)
            .fetch_all(p)
            .await?
        });
        Ok(rows.into_iter().map(|(id, pid, machine)| HostRunner { id, pid, machine }).collect())
    }

    /// Every live runner, and the last ended one of each host, by host then newest first.
    pub async fn runner_statuses(&self) -> Result<Vec<RunnerStatus>> {
        // The rows shown are chosen first, and only they count their leases and workers: PostgreSQL
        // estimated `live OR latest` at half of all runners, each counting, and with thousands of ended
        // runners JIT-compiled the query on every call (0.4 s at 30,000).
        let sql = format!(
            "SELECT id, host, pid, version, started_at, heartbeat_at, alive_until, ended_at, end_reason, max_workers, \
               ticks, errors, last_error, last_error_at, \
               CASE WHEN ended_at IS NULL AND alive_until > {now} THEN CAST(1 AS BIGINT) ELSE CAST(0 AS BIGINT) END AS alive, \
               (SELECT count(*) FROM executor_runs r WHERE r.lease_owner = x.id \
                  AND r.state IN ('queued','in_progress','pr','complete')) AS leases, \
               (SELECT count(*) FROM executor_worker_sessions s WHERE s.runner_id = x.id AND s.ended_at IS NULL) AS workers \
             FROM executor_runners x WHERE id IN (SELECT id FROM executor_runners WHERE ended_at IS NULL \
               UNION ALL SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY host \
                 ORDER BY started_at DESC, id DESC) AS n FROM executor_runners WHERE ended_at IS NOT NULL) \
               AS latest WHERE n = 1) \
             ORDER BY host, started_at DESC, id",
            now = self.pool.now_sql()
        );
        on_pool!(self, |p| { sqlx::query(&sql).fetch_all(p).await?.iter().map(status_from_row).collect() })
    }
}
