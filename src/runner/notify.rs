//! Telling the human: completion, abandonment, stuck runs, budget stops. A notice is recorded once per
//! key, posted on the run's pull request with the configured @mention, and later notices about the same
//! run reply in the first one's thread (`thread_id`).

use super::decision::{Notice, NoticeKind};
use super::engine::{Runner, RunnerError};
use crate::domain::Run;
use crate::forge::Forge;
use crate::store::NewComment;

/// The author name of executor's own comments on the local forge.
pub const EXECUTOR_AUTHOR: &str = "executor";

fn kind_name(kind: NoticeKind) -> &'static str {
    match kind {
        NoticeKind::Completed => "completed",
        NoticeKind::Abandoned => "abandoned",
        NoticeKind::NeedsHuman => "needs_human",
    }
}

impl Runner {
    pub(super) async fn notify(
        &self,
        run: &Run,
        forge: &Forge,
        notice: &Notice,
    ) -> Result<(), RunnerError> {
        let mention = self.config.notify.mention.trim();
        let text = if mention.is_empty() {
            notice.text.clone()
        } else {
            format!("{mention} {}", notice.text)
        };
        let Some(id) = self
            .store
            .add_notice(
                Some(run.id),
                Some(run.task_gid.as_str()),
                kind_name(notice.kind),
                Some(&notice.key),
                &text,
            )
            .await?
        else {
            return Ok(()); // already told
        };
        tracing::info!(run = run.id, task = %run.task_gid, "notice: {text}");
        let current = self.store.run(run.id).await?;
        let reply_to = current
            .thread_id
            .as_deref()
            .and_then(|t| t.parse::<i64>().ok());
        let comment = NewComment {
            author: EXECUTOR_AUTHOR,
            body: &text,
            in_reply_to: reply_to,
            by_agent: true,
            ..Default::default()
        };
        let delivery = match forge.comment(run, &comment).await {
            Ok(comment_id) => {
                if current.thread_id.is_none() {
                    self.store.set_run_thread(run.id, &comment_id).await?;
                }
                format!("{} pull request comment {comment_id}", forge.name())
            }
            Err(e) => format!("not posted on the forge: {e}"),
        };
        self.store.mark_notice_delivered(id, &delivery).await?;
        Ok(())
    }
}
