//! What executor wrote on a forge and must remember: the ids of the comments it (or an agent through
//! it) posted, when it last pushed a run's branch, and which reviews it has posted.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::{Result, Store, now, on_pool};

/// Comment ids executor posted, each with the comment it answers when the forge does not say.
pub type AgentComments = HashMap<String, Option<String>>;

impl Store {
    /// Records that `comment_id` on the run's pull request is executor's (an agent's reply, a notice,
    /// a review finding), so that it never makes a worker act. Recording it twice is harmless.
    pub async fn record_agent_comment(
        &self,
        run_id: i64,
        comment_id: &str,
        in_reply_to: Option<&str>,
    ) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "INSERT INTO executor_agent_comments (comment_id, run_id, in_reply_to, created_at) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (comment_id) DO NOTHING",
            )
            .bind(comment_id)
            .bind(run_id)
            .bind(in_reply_to)
            .bind(now())
            .execute(p)
            .await?;
        });
        Ok(())
    }

    /// The comments executor posted on the pull requests of these runs.
    pub async fn agent_comments(&self, run_ids: &[i64]) -> Result<AgentComments> {
        let mut all = AgentComments::new();
        // One statement per run keeps the SQL a literal on both backends; the index makes each cheap.
        for run_id in run_ids {
            let rows: Vec<(String, Option<String>)> = on_pool!(self, |p| {
                sqlx::query_as(
                    "SELECT comment_id, in_reply_to FROM executor_agent_comments WHERE run_id = $1",
                )
                .bind(run_id)
                .fetch_all(p)
                .await?
            });
            all.extend(rows);
        }
        Ok(all)
    }

    /// The runner pushed the run's branch at `at` (taken before the push: a worker ending during the
    /// push is pushed again next tick).
    pub async fn set_pushed_at(&self, run_id: i64, holder: Option<&str>, at: DateTime<Utc>) -> Result<()> {
        super::run_fields::update_run!(self, run_id, holder, "pushed_at = $1", at)
    }

    /// A `pr_review` session's findings were posted on the pull request.
    /// Records that an attempt to post the session's review begins now (before the post; see
    /// [`Store::mark_notice_posting`]).
    pub async fn mark_review_posting(&self, session_id: i64) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query("UPDATE executor_worker_sessions SET review_post_started_at = $1 WHERE id = $2")
                .bind(now())
                .bind(session_id)
                .execute(p)
                .await?;
        });
        Ok(())
    }

    /// When the last attempt to post the session's review began (`None`: never).
    pub async fn review_post_started(
        &self,
        session_id: i64,
    ) -> Result<Option<chrono::DateTime<chrono::Utc>>> {
        let started: Option<Option<chrono::DateTime<chrono::Utc>>> = on_pool!(self, |p| {
            sqlx::query_scalar("SELECT review_post_started_at FROM executor_worker_sessions WHERE id = $1")
                .bind(session_id)
                .fetch_optional(p)
                .await?
        });
        Ok(started.flatten())
    }

    pub async fn set_review_posted(&self, session_id: i64) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query("UPDATE executor_worker_sessions SET review_posted_at = $1 WHERE id = $2")
                .bind(now())
                .bind(session_id)
                .execute(p)
                .await?;
        });
        Ok(())
    }
}
