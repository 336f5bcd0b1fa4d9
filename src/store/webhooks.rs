//! What webhook deliveries leave in the database: the deliveries seen (so a redelivery is recognised),
//! the pull requests they marked changed (honoured by the forge's next observation), and the wake
//! counters a sleeping runner or `executor serve` read. A delivery never decides anything: it marks and
//! wakes, and the process it wakes observes the world as always.

use chrono::{DateTime, Utc};

use super::{BeginWrite, Result, Store, now, on_pool};
use crate::domain::{DeliveryOutcome, WakeScope, WebhookSender};

/// Deliveries are remembered this long: GitHub redelivers (by hand or by its API) for a few days.
const KEEP_DELIVERIES_DAYS: i64 = 30;

/// An active run that has a pull request, as a delivery is matched against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrOwner {
    pub run_id: i64,
    pub pr_number: i64,
    pub head_sha: Option<String>,
    pub branch: Option<String>,
}

/// A verified delivery to record, with what it does.
#[derive(Debug, Clone)]
pub struct Delivery<'a> {
    pub sender: WebhookSender,
    pub id: &'a str,
    pub event: &'a str,
    pub outcome: DeliveryOutcome,
    /// (configured repository name, pull request number) to mark changed.
    pub marks: &'a [(String, i64)],
    pub wake: Option<WakeScope>,
}

/// A wake counter: `requested > seen` means a delivery asked for a look that no process has begun yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WakeState {
    pub requested: i64,
    pub seen: i64,
    pub requested_at: Option<DateTime<Utc>>,
}

impl WakeState {
    pub fn pending(&self) -> bool {
        self.requested > self.seen
    }
}

impl Store {
    /// The active runs of repository `repo` that have a pull request (with `unnamed`, also those that
    /// name no repository: the config's only one).
    pub async fn pr_owners(&self, repo: &str, unnamed: bool) -> Result<Vec<PrOwner>> {
        let rows: Vec<(i64, i64, Option<String>, Option<String>)> = on_pool!(self, |p| {
            sqlx::query_as(
                "SELECT id, pr_number, head_sha, branch_name FROM executor_runs \
                 WHERE state IN ('queued','in_progress','pr','complete') AND pr_number IS NOT NULL \
                   AND (repo = $1 OR ($2 AND repo IS NULL)) ORDER BY id",
            )
            .bind(repo)
            .bind(unnamed)
            .fetch_all(p)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(|(run_id, pr_number, head_sha, branch)| PrOwner { run_id, pr_number, head_sha, branch })
            .collect())
    }

    /// Records a verified delivery with its marks and wake, all in one transaction, so a crash leaves
    /// either all of it (a redelivery is then a replay) or none (a redelivery does it). Returns `false`,
    /// writing nothing, when this sender's delivery id was recorded before: a replay.
    pub async fn record_delivery(&self, d: &Delivery<'_>) -> Result<bool> {
        let at = now();
        let cutoff = at - chrono::Duration::days(KEEP_DELIVERIES_DAYS);
        Ok(on_pool!(self, |p| {
            let mut tx = p.begin_write().await?;
            let new = sqlx::query(
                "INSERT INTO executor_webhook_deliveries (sender, delivery_id, event, received_at, outcome) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (sender, delivery_id) DO NOTHING",
            )
            .bind(d.sender.as_str())
            .bind(d.id)
            .bind(d.event)
            .bind(at)
            .bind(d.outcome.as_str())
            .execute(&mut *tx)
            .await?
            .rows_affected()
                == 1;
            if !new {
                tx.rollback().await?;
                false
            } else {
                for (repo, number) in d.marks {
                    sqlx::query(
                        "INSERT INTO executor_pr_marks (repo, pr_number, marked_at) VALUES ($1, $2, $3)",
                    )
                    .bind(repo)
                    .bind(number)
                    .bind(at)
                    .execute(&mut *tx)
                    .await?;
                }
                if let Some(scope) = d.wake {
                    sqlx::query(
                        "UPDATE executor_wakes SET requested = requested + 1, requested_at = $2 WHERE scope = $1",
                    )
                    .bind(scope.as_str())
                    .bind(at)
                    .execute(&mut *tx)
                    .await?;
                }
                sqlx::query("DELETE FROM executor_webhook_deliveries WHERE received_at < $1")
                    .bind(cutoff)
                    .execute(&mut *tx)
                    .await?;
                // A mark is honoured within a tick of a runner that holds its run; one left this long
                // belongs to a run that ended before any observation.
                sqlx::query("DELETE FROM executor_pr_marks WHERE marked_at < $1")
                    .bind(at - chrono::Duration::days(1))
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                true
            }
        }))
    }

    /// When the newest verified delivery from `sender` came (`executor doctor`).
    pub async fn last_delivery(&self, sender: WebhookSender) -> Result<Option<(DateTime<Utc>, String)>> {
        let row: Option<(DateTime<Utc>, String)> = on_pool!(self, |p| {
            sqlx::query_as(
                "SELECT received_at, event FROM executor_webhook_deliveries WHERE sender = $1 \
                 ORDER BY received_at DESC LIMIT 1",
            )
            .bind(sender.as_str())
            .fetch_optional(p)
            .await?
        });
        Ok(row)
    }

    /// The marks on `repo`'s pull requests, as (mark id, pull request number), oldest first.
    pub async fn pr_marks(&self, repo: &str) -> Result<Vec<(i64, i64)>> {
        Ok(on_pool!(self, |p| {
            sqlx::query_as("SELECT id, pr_number FROM executor_pr_marks WHERE repo = $1 ORDER BY id")
                .bind(repo)
                .fetch_all(p)
                .await?
        }))
    }

    /// Removes the marks of `numbers` in `repo` up to mark `up_to`: they were honoured by an
    /// observation that read them. A mark made since (a newer id) stays for the next observation.
    pub async fn clear_pr_marks(&self, repo: &str, numbers: &[i64], up_to: i64) -> Result<()> {
        on_pool!(self, |p| {
            for number in numbers {
                sqlx::query("DELETE FROM executor_pr_marks WHERE repo = $1 AND pr_number = $2 AND id <= $3")
                    .bind(repo)
                    .bind(number)
                    .bind(up_to)
                    .execute(p)
                    .await?;
            }
        });
        Ok(())
    }

    /// The wake counter of `scope`, read cheaply (one row by its key).
    pub async fn wake_state(&self, scope: WakeScope) -> Result<WakeState> {
        let (requested, seen, requested_at): (i64, i64, Option<DateTime<Utc>>) = on_pool!(self, |p| {
            sqlx::query_as("SELECT requested, seen, requested_at FROM executor_wakes WHERE scope = $1")
                .bind(scope.as_str())
                .fetch_one(p)
                .await?
        });
        Ok(WakeState { requested, seen, requested_at })
    }

    /// A process of `scope` begins a pass: every wake requested so far is seen. Returns the count it
    /// has now seen; a later request (a higher count) wakes it again. Writes only when something new
    /// was requested, so an idle tick costs one read.
    pub async fn take_wake(&self, scope: WakeScope) -> Result<i64> {
        let state = self.wake_state(scope).await?;
        if state.pending() {
            on_pool!(self, |p| {
                sqlx::query("UPDATE executor_wakes SET seen = $2 WHERE scope = $1 AND seen < $2")
                    .bind(scope.as_str())
                    .bind(state.requested)
                    .execute(p)
                    .await?;
            });
        }
        Ok(state.requested)
    }

    /// How many runners, on any host, are registered, not ended, and heartbeating by the database's
    /// clock.
    pub async fn live_runner_count(&self) -> Result<i64> {
        let sql = format!(
            "SELECT count(*) FROM executor_runners WHERE ended_at IS NULL AND alive_until > {}",
            self.pool.now_sql()
        );
        Ok(on_pool!(self, |p| sqlx::query_scalar(&sql).fetch_one(p).await?))
    }
}
