//! What each host's runner last met (`executor_runner_status`): written when it starts, after every
//! tick and when it ends, so `executor status` can say that a runner keeps failing even when nobody
//! reads its stderr (cron).

use chrono::{DateTime, Utc};

use super::columns::runner_status_columns;
use super::row::Cols;
use super::{Result, Store, now, on_pool};

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunnerStatus {
    pub host: String,
    pub pid: i64,
    pub started_at: DateTime<Utc>,
    /// `None` while it runs (or when it was killed).
    pub ended_at: Option<DateTime<Utc>>,
    pub ticks: i64,
    /// Errors met since it started: steps that failed, workers that could not start, notices not sent.
    pub errors: i64,
    pub last_error: Option<String>,
    pub last_error_at: Option<DateTime<Utc>>,
}

fn status_from_row(r: &impl Cols) -> Result<RunnerStatus> {
    Ok(RunnerStatus {
        host: r.req_text("host")?,
        pid: r.req_int("pid")?,
        started_at: r.req_time("started_at")?,
        ended_at: r.time("ended_at")?,
        ticks: r.int("ticks")?.unwrap_or(0),
        errors: r.int("errors")?.unwrap_or(0),
        last_error: r.text("last_error")?,
        last_error_at: r.time("last_error_at")?,
    })
}

impl Store {
    /// A runner starts on `host`: its row starts afresh (one row per host: the last runner's).
    pub async fn runner_started(&self, host: &str, pid: i64) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "INSERT INTO executor_runner_status (host, pid, started_at, ended_at, ticks, errors, last_error, last_error_at) \
                 VALUES ($1, $2, $3, NULL, 0, 0, NULL, NULL) \
                 ON CONFLICT (host) DO UPDATE SET pid = $2, started_at = $3, ended_at = NULL, ticks = 0, errors = 0, \
                   last_error = NULL, last_error_at = NULL",
            )
            .bind(host)
            .bind(pid)
            .bind(now())
            .execute(p)
            .await?;
        });
        Ok(())
    }

    /// One tick done, with the errors it met and the last of them.
    pub async fn runner_ticked(
        &self,
        host: &str,
        pid: i64,
        errors: i64,
        last_error: Option<&str>,
    ) -> Result<()> {
        let at = now();
        on_pool!(self, |p| {
            sqlx::query(
                "UPDATE executor_runner_status SET ticks = ticks + 1, errors = errors + $1, \
                   last_error = COALESCE($2, last_error), \
                   last_error_at = CASE WHEN $2 IS NULL THEN last_error_at ELSE $3 END \
                 WHERE host = $4 AND pid = $5",
            )
            .bind(errors)
            .bind(last_error)
            .bind(at)
            .bind(host)
            .bind(pid)
            .execute(p)
            .await?;
        });
        Ok(())
    }

    pub async fn runner_ended(&self, host: &str, pid: i64) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query("UPDATE executor_runner_status SET ended_at = $1 WHERE host = $2 AND pid = $3")
                .bind(now())
                .bind(host)
                .bind(pid)
                .execute(p)
                .await?;
        });
        Ok(())
    }

    /// Every host's last runner, by host.
    pub async fn runner_statuses(&self) -> Result<Vec<RunnerStatus>> {
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "SELECT ",
                runner_status_columns!(),
                " FROM executor_runner_status ORDER BY host"
            ))
            .fetch_all(p)
            .await?
            .iter()
            .map(status_from_row)
            .collect()
        })
    }
}
