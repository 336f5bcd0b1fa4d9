//! Agents' replies, from the outbox to the pull request: each tick, a run's replies recorded but not
//! posted (a worker that just ended, or an attempt that failed or died) are posted in their threads,
//! once each ([`crate::forge::deliver_reply`]). Until they are, the run decides nothing on a view of
//! the pull request that lacks them.

use super::state::{Runner, RunnerError};
use crate::domain::Run;
use crate::forge::{Delivery, Forge, PrSnapshot, deliver_reply};

/// A reply that failed to post this many times is left in the outbox, visible with its error, instead
/// of being tried on every tick forever (its comment, unanswered, brings a worker back).
pub const MAX_REPLY_ATTEMPTS: i64 = 5;

impl Runner {
    /// Posts the run's pending replies. Returns whether any was posted (the decision then waits for the
    /// next tick's view of the pull request, which shows them); a reply that cannot be posted is this
    /// tick's error, and is retried. GitHub's rate limit is a wait, not a failure: the reply that met it
    /// counts no attempt, the rest wait with it, and the runner says it waited rather than erred (soak
    /// finding: replies that met the limit made cron's runner exit 1).
    pub(super) async fn post_pending_replies(
        &self,
        run: &Run,
        forge: &Forge,
        pr: &PrSnapshot,
    ) -> Result<bool, RunnerError> {
        let pending = self.store.replies_to_post(run.id, MAX_REPLY_ATTEMPTS).await?;
        if pending.is_empty() {
            return Ok(false);
        }
        let (mut failed, mut waited) = (None, None);
        for reply in &pending {
            let e = match deliver_reply(forge, &self.store, run, pr, reply).await {
                Ok(Delivery::Posted(id)) => {
                    tracing::info!(
                        run = run.id,
                        "posted the agent's reply to comment {} as {id}",
                        reply.comment_id
                    );
                    continue;
                }
                Ok(Delivery::MayStillLand) => {
                    tracing::info!(
                        run = run.id,
                        "the reply to comment {} may still be landing from an earlier attempt: looked for on the next view",
                        reply.comment_id
                    );
                    continue;
                }
                Err(e) => e,
            };
            let why = format!("posting the reply to comment {}: {e}", reply.comment_id);
            if e.is_rate_limit() {
                // Every other request is refused too until the limit lifts.
                self.store.mark_reply_waiting(reply.id, &why).await?;
                waited = Some(why);
                break;
            }
            self.store.mark_reply_failed(reply.id, &why).await?;
            failed = Some(why);
        }
        match (failed, waited) {
            (Some(why), _) => Err(RunnerError::ReplyNotPosted { why, rate_limited: false }),
            (None, Some(why)) => Err(RunnerError::ReplyNotPosted { why, rate_limited: true }),
            (None, None) => Ok(true),
        }
    }
}
