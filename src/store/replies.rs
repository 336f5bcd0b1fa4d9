//! Agents' replies to review comments, as an outbox: the comments a `fix_comments` worker was offered
//! are recorded before its agent runs; its answer to each is recorded once (whichever channel brought
//! it: the final JSON line, the file `EXECUTOR_REPLIES` names, or `executor comment --as-agent`); the
//! runner posts it and records the forge's id. A reply recorded but not posted is retried on later
//! ticks, like a notice, until it is posted or has failed too often.

use chrono::{DateTime, Utc};

use super::row::Cols;
use super::{Result, Store, now, on_pool};

macro_rules! reply_columns {
    () => {
        "id, run_id, session_id, comment_id, offered_at, body, answered_at, posted_comment_id, posted_at, attempts, last_error, post_started_at"
    };
}

/// One offered comment and what became of it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AgentReply {
    pub id: i64,
    pub run_id: i64,
    pub session_id: i64,
    /// The comment answered (its forge id).
    pub comment_id: String,
    pub offered_at: DateTime<Utc>,
    /// The reply, once the agent gave one (validated and redacted).
    pub body: Option<String>,
    pub answered_at: Option<DateTime<Utc>>,
    /// The reply's own forge id, once it is on the pull request.
    pub posted_comment_id: Option<String>,
    pub posted_at: Option<DateTime<Utc>>,
    pub attempts: i64,
    pub last_error: Option<String>,
    /// When the last attempt to post it began (written before the post): GitHub may still carry out a
    /// post whose poster died.
    pub post_started_at: Option<DateTime<Utc>>,
}

/// What recording an answer did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Recorded: it is to be posted.
    Recorded,
    /// This very answer was recorded already (the same reply through two channels, or a worker's end
    /// recorded again after its supervisor died): nothing changes.
    Unchanged,
    /// This worker had answered that comment already (through another channel, or twice): the first
    /// answer stands.
    AlreadyAnswered,
    /// The worker's prompt did not offer that comment.
    NotOffered,
}

/// What one worker was given to answer and what it answered: whether a `fix_comments` worker did its
/// job is read from these counts, never from what it said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OfferTally {
    pub session_id: i64,
    /// Comments its prompt offered it.
    pub offered: i64,
    /// Of those, the ones no earlier worker of the run had answered: a new round of comments (or one an
    /// earlier worker left unanswered), not one answered before and given again.
    pub new: i64,
    /// Of those offered, the ones whose reply is on the pull request. A reply recorded but never
    /// posted answered nobody.
    pub answered: i64,
}

fn reply_from_row(r: &impl Cols) -> Result<AgentReply> {
    Ok(AgentReply {
        id: r.req_int("id")?,
        run_id: r.req_int("run_id")?,
        session_id: r.req_int("session_id")?,
        comment_id: r.req_text("comment_id")?,
        offered_at: r.req_time("offered_at")?,
        body: r.text("body")?,
        answered_at: r.time("answered_at")?,
        posted_comment_id: r.text("posted_comment_id")?,
        posted_at: r.time("posted_at")?,
        attempts: r.int("attempts")?.unwrap_or(0),
        last_error: r.text("last_error")?,
        post_started_at: r.time("post_started_at")?,
    })
}

impl Store {
    /// Records the comments a worker's prompt offered it, before its agent runs: only these may be
    /// answered. Offering one twice is harmless.
    pub async fn offer_comments(&self, run_id: i64, session_id: i64, comment_ids: &[String]) -> Result<()> {
        for comment_id in comment_ids {
            on_pool!(self, |p| {
                sqlx::query(
                    "INSERT INTO executor_agent_replies (run_id, session_id, comment_id, offered_at) \
                     VALUES ($1, $2, $3, $4) ON CONFLICT (session_id, comment_id) DO NOTHING",
                )
                .bind(run_id)
                .bind(session_id)
                .bind(comment_id)
                .bind(now())
                .execute(p)
                .await?;
            });
        }
        Ok(())
    }

    /// Records a worker's answer to an offered comment, unless it has one already.
    pub async fn answer_comment(&self, session_id: i64, comment_id: &str, body: &str) -> Result<Answer> {
        let changed = on_pool!(self, |p| {
            sqlx::query(
                "UPDATE executor_agent_replies SET body = $1, answered_at = $2 \
                 WHERE session_id = $3 AND comment_id = $4 AND body IS NULL",
            )
            .bind(body)
            .bind(now())
            .bind(session_id)
            .bind(comment_id)
            .execute(p)
            .await?
            .rows_affected()
        });
        if changed > 0 {
            return Ok(Answer::Recorded);
        }
        let recorded: Option<Option<String>> = on_pool!(self, |p| {
            sqlx::query_scalar(
                "SELECT body FROM executor_agent_replies WHERE session_id = $1 AND comment_id = $2",
            )
            .bind(session_id)
            .bind(comment_id)
            .fetch_optional(p)
            .await?
        });
        Ok(match recorded {
            None => Answer::NotOffered,
            Some(Some(earlier)) if earlier == body => Answer::Unchanged,
            Some(_) => Answer::AlreadyAnswered,
        })
    }

    /// The comments a worker's prompt offered it, by forge id.
    pub async fn offered_comments(&self, session_id: i64) -> Result<Vec<String>> {
        Ok(on_pool!(self, |p| {
            sqlx::query_scalar(
                "SELECT comment_id FROM executor_agent_replies WHERE session_id = $1 ORDER BY id",
            )
            .bind(session_id)
            .fetch_all(p)
            .await?
        }))
    }

    /// Per worker of the run that was offered comments, oldest first: how many it was offered, how
    /// many of those no earlier worker of the run had answered, and how many it answered on the pull
    /// request.
    pub async fn offer_tallies(&self, run_id: i64) -> Result<Vec<OfferTally>> {
        let rows: Vec<(i64, String, Option<String>)> = on_pool!(self, |p| {
            sqlx::query_as(
                // By session, whose index this reads (the one by run is for unposted replies only).
                "SELECT session_id, comment_id, posted_comment_id FROM executor_agent_replies \
                 WHERE session_id IN (SELECT id FROM executor_worker_sessions WHERE run_id = $1) \
                 ORDER BY session_id, id",
            )
            .bind(run_id)
            .fetch_all(p)
            .await?
        });
        let mut tallies: Vec<OfferTally> = Vec::new();
        // Comments answered by the workers before the one being counted.
        let mut answered_before = std::collections::HashSet::new();
        let mut answered_here = Vec::new();
        for (session_id, comment_id, posted) in rows {
            if tallies.last().is_none_or(|t| t.session_id != session_id) {
                answered_before.extend(answered_here.drain(..));
                tallies.push(OfferTally { session_id, offered: 0, new: 0, answered: 0 });
            }
            let Some(t) = tallies.last_mut() else { continue };
            t.offered += 1;
            t.new += i64::from(!answered_before.contains(&comment_id));
            if posted.is_some() {
                t.answered += 1;
                answered_here.push(comment_id);
            }
        }
        Ok(tallies)
    }

    /// The offer of `comment_id` to the run's live worker, if its prompt offered it: where that worker's
    /// `executor comment --as-agent --reply-to` lands.
    pub async fn live_offer(&self, run_id: i64, comment_id: &str) -> Result<Option<AgentReply>> {
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "SELECT ",
                reply_columns!(),
                " FROM executor_agent_replies WHERE run_id = $1 AND comment_id = $2 AND session_id IN \
                 (SELECT id FROM executor_worker_sessions WHERE run_id = $1 AND ended_at IS NULL) \
                 ORDER BY id DESC LIMIT 1"
            ))
            .bind(run_id)
            .bind(comment_id)
            .fetch_optional(p)
            .await?
            .as_ref()
            .map(reply_from_row)
            .transpose()
        })
    }

    /// The run's replies answered but not posted, tried fewer than `max_attempts` times, oldest first.
    pub async fn replies_to_post(&self, run_id: i64, max_attempts: i64) -> Result<Vec<AgentReply>> {
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "SELECT ",
                reply_columns!(),
                " FROM executor_agent_replies WHERE run_id = $1 AND body IS NOT NULL AND posted_at IS NULL \
                 AND attempts < $2 ORDER BY id"
            ))
            .bind(run_id)
            .bind(max_attempts)
            .fetch_all(p)
            .await?
            .iter()
            .map(reply_from_row)
            .collect()
        })
    }

    /// Every comment offered to the run's workers and what became of it, oldest first.
    pub async fn agent_replies(&self, run_id: i64) -> Result<Vec<AgentReply>> {
        on_pool!(self, |p| {
            sqlx::query(concat!(
                "SELECT ",
                reply_columns!(),
                " FROM executor_agent_replies WHERE run_id = $1 ORDER BY id"
            ))
            .bind(run_id)
            .fetch_all(p)
            .await?
            .iter()
            .map(reply_from_row)
            .collect()
        })
    }

    /// The reply is on the pull request as `posted_comment_id`. Only the first posting counts.
    pub async fn mark_reply_posted(&self, id: i64, posted_comment_id: &str) -> Result<bool> {
        let changed = on_pool!(self, |p| {
            sqlx::query(
                "UPDATE executor_agent_replies SET posted_comment_id = $1, posted_at = $2, \
                 attempts = attempts + 1, last_error = NULL WHERE id = $3 AND posted_at IS NULL",
            )
            .bind(posted_comment_id)
            .bind(now())
            .bind(id)
            .execute(p)
            .await?
            .rows_affected()
        });
        Ok(changed > 0)
    }

    /// An attempt to post the reply begins now: said before the post, so that whoever comes after a
    /// crash knows a copy may still land.
    pub async fn mark_reply_posting(&self, id: i64) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query("UPDATE executor_agent_replies SET post_started_at = $1 WHERE id = $2")
                .bind(now())
                .bind(id)
                .execute(p)
                .await?;
        });
        Ok(())
    }

    /// An attempt to post the reply failed; it stays in the outbox.
    pub async fn mark_reply_failed(&self, id: i64, error: &str) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "UPDATE executor_agent_replies SET attempts = attempts + 1, last_error = $1 \
                 WHERE id = $2 AND posted_at IS NULL",
            )
            .bind(error)
            .bind(id)
            .execute(p)
            .await?;
        });
        Ok(())
    }

    /// An attempt to post the reply met GitHub's rate limit: it stays in the outbox with why, and the
    /// wait counts as no attempt.
    pub async fn mark_reply_waiting(&self, id: i64, why: &str) -> Result<()> {
        on_pool!(self, |p| {
            sqlx::query(
                "UPDATE executor_agent_replies SET last_error = $1 WHERE id = $2 AND posted_at IS NULL",
            )
            .bind(why)
            .bind(id)
            .execute(p)
            .await?;
        });
        Ok(())
    }
}
