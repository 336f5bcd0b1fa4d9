//! Posting an agent's reply, recorded in the replies outbox ([`crate::store::AgentReply`]), on the pull
//! request: in the thread of the comment it answers, recorded as an agent's, exactly once. The outbox
//! row is written before the post and marked with the forge's id after; an attempt that died between
//! the two left the reply on the forge unrecorded, so the pull request is read first and a reply that
//! is already there is recorded instead of posted again.

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
) -> Result<String, ForgeError> {
    let Some(body) = reply.body.as_deref() else {
        return Err(ForgeError::Config(format!("reply {} has no text to post", reply.id)));
    };
    if let Some(id) = &reply.posted_comment_id {
        return Ok(id.clone());
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
    Ok(id)
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
