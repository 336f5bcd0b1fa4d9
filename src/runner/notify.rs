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
    pub(super) async fn notify(&self, run: &Run, forge: &Forge, notice: &Notice) -> Result<(), RunnerError> {
        let mention = self.config.notify.mention.trim();
        let text =
            if mention.is_empty() { notice.text.clone() } else { format!("{mention} {}", notice.text) };
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
        let reply_to = current.thread_id.as_deref().and_then(|t| t.parse::<i64>().ok());
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
        let delivery = match self.config.notify.webhook_url.trim() {
            "" => delivery,
            url => format!("{delivery}; webhook: {}", post_webhook(url.to_string(), text.clone()).await),
        };
        self.store.mark_notice_delivered(id, &delivery).await?;
        Ok(())
    }
}

/// Posts a Slack-compatible `{"text": …}` message. Returns what happened, for the record; the URL (which
/// carries the webhook's secret) is never part of it.
async fn post_webhook(url: String, text: String) -> String {
    let body = serde_json::json!({ "text": text }).to_string();
    let sent = tokio::task::spawn_blocking(move || {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(std::time::Duration::from_secs(15)))
            .http_status_as_error(false)
            .build()
            .into();
        agent.post(&url).header("content-type", "application/json").send(&body).map(|r| r.status().as_u16())
    })
    .await;
    match sent {
        Ok(Ok(status)) if (200..300).contains(&status) => format!("sent (HTTP {status})"),
        Ok(Ok(status)) => format!("refused (HTTP {status})"),
        Ok(Err(e)) => format!("failed ({})", redact_transport_error(&e.to_string())),
        Err(e) => format!("failed ({e})"),
    }
}

/// Transport errors may quote the URL; keep only the part before it.
fn redact_transport_error(message: &str) -> String {
    match message.find("http") {
        Some(i) => format!("{}…", message[..i].trim_end()),
        None => message.to_string(),
    }
}
