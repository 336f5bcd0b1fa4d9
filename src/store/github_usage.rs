//! GitHub's hourly budget as the forge saw it: per hour window, the fewest points left. Written by the
//! GitHub forge after it asks GitHub (a row per window, updated only when fewer points are left), read by
//! the dashboard's insights.

use chrono::{DateTime, SubsecRound, Utc};

use super::row::Cols;
use super::{Result, Store, now, on_pool};

/// The resource the forge records: GraphQL points, where it spends nearly all of its budget.
pub const GITHUB_GRAPHQL: &str = "graphql";

/// One of GitHub's hour windows of a resource (`graphql`): how much of it was used at most.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GitHubHour {
    pub resource: String,
    /// When GitHub gives the window's points back (the window is the hour before).
    pub reset_at: DateTime<Utc>,
    /// The fewest points seen left in the window.
    pub lowest_remaining: i64,
    /// The window's budget as GitHub stated it (`x-ratelimit-limit`), when it did.
    pub hour_limit: Option<i64>,
}

impl Store {
    /// Records that `remaining` points of `resource` were left in the window ending at `reset_at`; the
    /// row keeps the fewest seen (and the latest limit stated).
    pub async fn record_github_usage(
        &self,
        resource: &str,
        reset_at: DateTime<Utc>,
        remaining: i64,
        hour_limit: Option<i64>,
    ) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "INSERT INTO executor_github_usage (resource, reset_at, lowest_remaining, hour_limit, observed_at) \
                 VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (resource, reset_at) DO UPDATE SET \
                   lowest_remaining = CASE WHEN excluded.lowest_remaining < executor_github_usage.lowest_remaining \
                     THEN excluded.lowest_remaining ELSE executor_github_usage.lowest_remaining END, \
                   hour_limit = COALESCE(excluded.hour_limit, executor_github_usage.hour_limit), \
                   observed_at = excluded.observed_at",
            )
            .bind(resource)
            .bind(reset_at.trunc_subsecs(6))
            .bind(remaining)
            .bind(hour_limit)
            .bind(now())
            .execute(p)
            .await
            .map(|_| ())?
        });
        Ok(())
    }

    /// The hour windows of `resource` that ended after `since`, oldest first.
    pub async fn github_usage(&self, resource: &str, since: DateTime<Utc>) -> Result<Vec<GitHubHour>> {
        on_pool!(self, |p| {
            let rows = sqlx::query(
                "SELECT resource, reset_at, lowest_remaining, hour_limit FROM executor_github_usage \
                 WHERE resource = $1 AND reset_at > $2 ORDER BY reset_at",
            )
            .bind(resource)
            .bind(since)
            .fetch_all(p)
            .await?;
            rows.iter()
                .map(|r| {
                    Ok(GitHubHour {
                        resource: r.req_text("resource")?,
                        reset_at: r.req_time("reset_at")?,
                        lowest_remaining: r.req_int("lowest_remaining")?,
                        hour_limit: r.int("hour_limit")?,
                    })
                })
                .collect()
        })
    }
}
