//! Posting an agent's reply, recorded in the replies outbox ([`crate::store::AgentReply`]), on the pull
//! request: in the thread of the comment it answers, recorded as an agent's, exactly once. The outbox
//! row is written before the post and marked with the forge's id after; an attempt that died between
//! the two left the reply on the forge unrecorded, so the pull request is read first and a reply that
//! is already there is recorded instead of posted again — once it could be there: the time each attempt
//! began is written before its post, and a post GitHub may still be carrying out (its poster killed
//! mid-request) is waited for, not repeated (soak finding: a reply posted twice, its first copy landing
//! after the next runner's).

use super::{Comment, CommentPost, Forge, ForgeError, PrSnapshot};
use crate::domain::Run;
use crate::store::{AgentReply, Store};

/// The author of agents' replies on the local forge (GitHub: whoever the token belongs to).
pub const AGENT_AUTHOR: &str = "agent";

/// The hidden markers executor ends its own comments with: a notice's (`runner::notify`) and a review's
/// ([`super::review_marker`]).
const EXECUTOR_MARKERS: [&str; 2] = ["<!-- executor notice ", "<!-- executor review "];

/// Whether `body` carries one of executor's own markers: such a comment is executor's, whatever id was
/// recorded for it (one GitHub applied after its answer was lost has none).
pub fn carries_executor_marker(body: &str) -> bool {
    EXECUTOR_MARKERS.iter().any(|m| body.contains(m))
}

/// Posts the reply unless the pull request (`pr`, observed since the reply was recorded) shows it
/// already, and marks it posted. Returns the reply's forge id.
pub async fn deliver_reply(
    forge: &Forge,
    store: &Store,
    run: &Run,
    pr: &PrSnapshot,
    reply: &AgentReply,
) -> Result<Delivery, ForgeError> {
    let Some(body) = reply.body.as_deref() else {
        return Err(ForgeError::Config(format!("reply {} has no text to post", reply.id)));
    };
    if let Some(id) = &reply.posted_comment_id {
        return Ok(Delivery::Posted(id.clone()));
    }
    if may_still_land(reply.post_started_at, pr.observed_at, forge.landing_time()) {
        // A view kept from before (the pull request unchanged since) would never show it: once it
        // could have landed, the next view asks again.
        if !may_still_land(reply.post_started_at, chrono::Utc::now(), forge.landing_time()) {
            forge.forget_observation(pr.number);
        }
        return Ok(Delivery::MayStillLand);
    }
    // Replies already posted for this run: a comment that is one of them is not this reply.
    let taken: Vec<String> =
        store.agent_replies(run.id).await?.into_iter().filter_map(|r| r.posted_comment_id).collect();
    let parent = pr.comments.iter().find(|c| c.id == reply.comment_id);
    let earlier = parent.and_then(|parent| {
        pr.comments.iter().find(|c| c.body == body && !taken.contains(&c.id) && answers(c, parent))
    });
    let id = match earlier {
        Some(c) => {
            // Posted by an attempt that died before recording it: record it as an agent's now, or on
            // GitHub (where executor posts as the human) it would read as the human's own comment.
            store.record_agent_comment(run.id, &c.id, Some(&reply.comment_id)).await?;
            // The view that showed it was taken before it was recorded: not to be reused.
            forge.forget_observation(pr.number);
            c.id.clone()
        }
        None => {
            store.mark_reply_posting(reply.id).await?;
            let post = CommentPost {
                author: AGENT_AUTHOR,
                body,
                reply_to: Some(&reply.comment_id),
                by_agent: true,
                ..Default::default()
            };
            forge.comment(run, &post).await?
        }
    };
    store.mark_reply_posted(reply.id, &id).await?;
    Ok(Delivery::Posted(id))
}

/// Whether a post begun at `began` may still land after a view taken at `observed_at`: only a view taken
/// once it could have landed shows whether it did. Replies and notices alike.
pub fn may_still_land(
    began: Option<chrono::DateTime<chrono::Utc>>,
    observed_at: chrono::DateTime<chrono::Utc>,
    landing_time: std::time::Duration,
) -> bool {
    let landing = chrono::Duration::from_std(landing_time).unwrap_or(chrono::Duration::MAX);
    began.is_some_and(|began| observed_at < began + landing)
}

/// What became of a reply to post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// On the pull request, with this id (posted now, or found there).
    Posted(String),
    /// An earlier attempt's post may still land; looked for again on a later view.
    MayStillLand,
}

/// Whether `c` is where a reply to `parent` lands: answering it directly, later in its review thread,
/// or (a conversation comment on GitHub, which has no threads) a later conversation comment.
fn answers(c: &Comment, parent: &Comment) -> bool {
    if c.id == parent.id || c.created_at < parent.created_at {
        return false;
    }
    c.in_reply_to.as_deref() == Some(parent.id.as_str())
        || (parent.thread_id.is_some() && c.thread_id == parent.thread_id)
        || (parent.thread_id.is_none() && c.thread_id.is_none() && c.in_reply_to.is_none())
}

#[cfg(test)]
mod tests {
    use super::may_still_land;
    use chrono::{Duration, Utc};

    /// Soak finding: a runner killed while GitHub carried out its reply's post left it unrecorded; the
    /// next runner, looking at once, did not find it and posted it again, and then the first landed.
    #[test]
    fn a_reply_whose_post_may_still_land_is_looked_for_only_on_a_later_view() {
        let began = Utc::now();
        let landing = std::time::Duration::from_secs(10);
        assert!(may_still_land(Some(began), began + Duration::seconds(3), landing));
        assert!(may_still_land(Some(began), began - Duration::seconds(1), landing), "a view from before");
        assert!(!may_still_land(Some(began), began + Duration::seconds(10), landing));
        assert!(!may_still_land(None, began, landing), "never begun: post");
        // The local forge writes at once.
        assert!(!may_still_land(Some(began), began, std::time::Duration::ZERO));
    }
}
