//! Telling the human: completion, abandonment, stuck runs, budget stops. A notice is recorded once per
//! key in an outbox, then posted on the run's pull request with the configured @mention (later notices
//! about the same run reply in the first one's thread, `thread_id`) and sent to the webhook; it is marked
//! delivered only when that went through, and retried on later ticks until then.

use super::decision::{Notice, NoticeKind};
use super::state::{Met, Runner, RunnerError};
use crate::domain::Run;
use crate::forge::{CommentPost, Forge};

/// The author name of executor's own comments on the local forge.
pub const EXECUTOR_AUTHOR: &str = "executor";

/// A notice that Needs you shows for as long as it waits (a plan to approve, a question to answer).
fn shown_until_answered(kind: &str) -> bool {
    kind == kind_name(NoticeKind::Plan) || kind == kind_name(NoticeKind::Question)
}

fn kind_name(kind: NoticeKind) -> &'static str {
    match kind {
        NoticeKind::Completed => "completed",
        NoticeKind::Abandoned => crate::domain::ABANDONED_NOTICE_KIND,
        NoticeKind::NeedsHuman => "needs_human",
        NoticeKind::Plan => "plan",
        NoticeKind::Question => "question",
    }
}

/// Why one attempt did not reach the human. GitHub's rate limit is a wait, not a failure: it counts as no
/// attempt, and the runner says it waited rather than erred (soak finding: notices that met the limit
/// made cron's runner exit 1).
#[derive(Debug, Clone)]
struct Undelivered {
    why: String,
    rate_limited: bool,
}

impl Undelivered {
    fn failed(why: String) -> Self {
        Undelivered { why, rate_limited: false }
    }

    fn store(e: crate::store::StoreError) -> Self {
        Undelivered::failed(e.to_string())
    }

    /// The forge's answer, `what` naming the request.
    fn forge(what: &str, e: &crate::forge::ForgeError) -> Self {
        Undelivered { why: format!("{what}: {e}"), rate_limited: e.is_rate_limit() }
    }
}

/// What became of a notice's comment on the run's pull request.
enum OnForge {
    /// Posted now, or found there (an earlier attempt's): what `runs show` says of it.
    Posted(String),
    /// The run has no pull request: nowhere to post.
    NoPullRequest,
    /// An earlier attempt's post may still land: looked for again once it could have.
    MayStillLand,
}

/// A notice that failed this many times is left undelivered, visible in `runs show` and `status`,
/// instead of being tried on every tick forever.
pub const MAX_NOTICE_ATTEMPTS: i64 = 5;

impl Runner {
    /// Tells the human: records the notice in the outbox (once per key), then tries to deliver it. A
    /// delivery that fails is retried by later ticks ([`Runner::send_outbox`]); a crash between the two
    /// loses nothing, since the record comes first.
    pub(super) async fn notify(&self, run: &Run, notice: &Notice) -> Result<(), RunnerError> {
        let mention = self.config.notify.mention.trim();
        let text =
            if mention.is_empty() { notice.text.clone() } else { format!("{mention} {}", notice.text) };
        // Redacted before it is recorded: the outbox, the forge comment and the webhook all send this.
        let text = self.redactor.redact(&text);
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
            return Ok(()); // already told (or in the outbox)
        };
        tracing::info!(run = run.id, task = %run.task_gid, "notice: {text}");
        if let Err(e) = self.deliver(id, run, &text, kind_name(notice.kind)).await {
            tracing::warn!(run = run.id, "notice {id} not delivered yet: {e}");
            let what = format!("run {}: {e}", run.id);
            if let Ok(mut met) = self.met.lock() {
                met.push(if e.is_rate_limit() { Met::Waited(what) } else { Met::Failed(what) });
            }
        }
        Ok(())
    }

    /// Delivers the notices recorded but not yet delivered (a failed attempt, or a runner that died
    /// between recording and sending). Each failure is one of the tick's errors.
    pub(super) async fn send_outbox(&self, report: &mut super::state::TickReport) -> Result<(), RunnerError> {
        for n in self.store.unsent_notices(MAX_NOTICE_ATTEMPTS).await? {
            let run = match n.run_id {
                Some(id) => Some(self.store.run(id).await?),
                None => None,
            };
            let Some(run) = run else {
                // A notice about no run has no forge to go to; the webhook is its only channel.
                let outcome = self.send_webhook(&n.message).await.map_err(Undelivered::failed);
                if let Err(e) = self.settle(n.id, String::new(), outcome).await {
                    report.failed(e.to_string());
                }
                continue;
            };
            // One runner at a time delivers a run's notices: the one holding its lease. An ended run's
            // too (soak finding: two hosts posted the notice of a run abandoned by a third, frozen one,
            // both reading the pull request before either posted).
            let lease = self.config.runner.lease_ttl.std();
            if !self.store.claim_run(run.id, &self.owner, lease).await? {
                continue;
            }
            match self.deliver(n.id, &run, &n.message, &n.kind).await {
                Ok(()) => {}
                Err(e) if e.is_rate_limit() => report.throttled(format!("run {}: {e}", run.id)),
                Err(e) => report.failed(format!("run {}: {e}", run.id)),
            }
        }
        Ok(())
    }

    /// One delivery attempt: the comment on the run's pull request (unless it is already there: at most
    /// once per notice as far as the forge can tell), then the webhook. Marks the notice delivered when
    /// both went through, or records the attempt and its error.
    async fn deliver(&self, id: i64, run: &Run, text: &str, kind: &str) -> Result<(), RunnerError> {
        // What the human reads of the delivery names the change in its forge's words.
        let noun = self.config.words_for(run.repo.as_deref()).noun;
        let posted = match self.forge_of(run) {
            Ok(f) => self.post_on_forge(id, run, &f, text).await,
            Err(e) => Err(Undelivered::failed(format!("no forge for the run: {e}"))),
        };
        if matches!(posted, Ok(OnForge::MayStillLand)) {
            // An earlier attempt's post (its runner killed mid-request) may still land: posting now
            // would post it twice. No attempt is counted; a later tick looks again once it could have.
            let why = format!(
                "an earlier attempt's post may still land on the {noun}; looked for again once it could have"
            );
            self.store.mark_notice_waiting(id, &format!("not delivered yet: {why}"), &why).await?;
            return Ok(());
        }
        let posted = posted.map(|p| match p {
            OnForge::Posted(what) => what,
            OnForge::NoPullRequest | OnForge::MayStillLand => String::new(),
        });
        if matches!(&posted, Ok(p) if p.is_empty()) && self.config.notify.webhook_url.trim().is_empty() {
            if shown_until_answered(kind) {
                // A plan or a question stays on Needs you until answered, and its tracker hears it: posted
                // on a pull request opened later it would ask for what was given long before.
                let delivery = format!("on Needs you until answered (the run has no {noun})");
                self.store.mark_notice_delivered(id, &delivery).await?;
                return Ok(());
            }
            // No pull request and no webhook: nobody has been told. The notice stays undelivered, so
            // `executor status` lists it, and later ticks post it once the run has a pull request —
            // however many ticks that takes: waiting for a place to send it is no failed attempt.
            let why =
                format!("nowhere to send it yet: the run has no {noun} and notify.webhook_url is not set");
            self.store.mark_notice_waiting(id, &format!("not delivered yet: {why}"), &why).await?;
            return Ok(());
        }
        let outcome = match &posted {
            Ok(_) => self.send_webhook(text).await.map_err(Undelivered::failed),
            // The webhook waits for the comment, so that a retry never sends it twice.
            Err(e) => Err(e.clone()),
        };
        let progress = posted.unwrap_or_default();
        self.settle(id, progress, outcome).await
    }

    /// Records the attempt's result. Returns the delivery error, if any, as the tick's.
    async fn settle(
        &self,
        id: i64,
        progress: String,
        outcome: Result<String, Undelivered>,
    ) -> Result<(), RunnerError> {
        match outcome {
            Ok(webhook) => {
                let delivery = [progress, webhook].into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>();
                let delivery = if delivery.is_empty() { "recorded".to_string() } else { delivery.join("; ") };
                self.store.mark_notice_delivered(id, &delivery).await?;
                Ok(())
            }
            Err(Undelivered { why, rate_limited }) => {
                // `delivery` is what `runs show` prints for a notice: say it has not reached the human.
                let so_far = if progress.is_empty() { String::new() } else { format!("{progress}; ") };
                let delivery = format!("{so_far}not delivered yet: {why}");
                if rate_limited {
                    self.store.mark_notice_waiting(id, &delivery, &why).await?;
                } else {
                    self.store.mark_notice_failed(id, &delivery, &why).await?;
                }
                Err(RunnerError::NoticeNotDelivered { id, why, rate_limited })
            }
        }
    }

    /// Posts the notice on the run's pull request, replying in the thread of the run's first notice.
    /// Without a pull request there is nowhere to post: that is not a failure. Each notice is its own
    /// comment, marked with its id: two notices with the same text (two budget stops) are two comments.
    async fn post_on_forge(
        &self,
        id: i64,
        run: &Run,
        forge: &Forge,
        text: &str,
    ) -> Result<OnForge, Undelivered> {
        let noun = self.config.words_for(run.repo.as_deref()).noun;
        // Asked again, not taken from what was kept: an earlier attempt may have posted in the same
        // second as the observation kept, or another process may have kept one older than that post
        // (soak finding: a completion notice posted twice).
        let pr = match forge.snapshot_asked_again(run).await {
            Ok(Some(pr)) => Some(pr),
            Ok(None) => return Ok(OnForge::NoPullRequest),
            // The notice may be about this very pull request, which GitHub will not show: it is posted
            // without looking for a copy an earlier attempt left.
            Err(crate::forge::ForgeError::Unobserved { .. }) if run.pr_number.is_some() => None,
            Err(e) => return Err(Undelivered::forge(&format!("reading the {noun}"), &e)),
        };
        let current = self.store.run(run.id).await.map_err(Undelivered::store)?;
        let reply_to = current.thread_id.as_deref();
        let marker = notice_marker(id);
        let earlier = pr.as_ref().and_then(|pr| pr.comments.iter().find(|c| c.body.ends_with(&marker)));
        let comment_id = match earlier {
            Some(c) => {
                // Posted by an attempt that died (or lost its answer) before recording it: recorded now,
                // or on GitHub (where executor may post as the human) it would read as the human's own.
                self.store.record_agent_comment(run.id, &c.id, reply_to).await.map_err(Undelivered::store)?;
                c.id.clone()
            }
            None => {
                let started = self.store.notice_post_started(id).await.map_err(Undelivered::store)?;
                let seen_at = pr.as_ref().map_or_else(chrono::Utc::now, |pr| pr.observed_at);
                if crate::forge::may_still_land(started, seen_at, forge.landing_time()) {
                    return Ok(OnForge::MayStillLand);
                }
                self.store.mark_notice_posting(id).await.map_err(Undelivered::store)?;
                let body = format!("{text}\n\n{marker}");
                let comment = CommentPost {
                    author: EXECUTOR_AUTHOR,
                    body: &body,
                    reply_to,
                    by_agent: true,
                    ..Default::default()
                };
                forge
                    .comment(run, &comment)
                    .await
                    .map_err(|e| Undelivered::forge(&format!("{noun} comment"), &e))?
            }
        };
        if reply_to.is_none() {
            // The run's first notice starts its thread, whichever attempt got it through.
            self.store
                .set_run_thread(run.id, Some(&self.owner), &comment_id)
                .await
                .map_err(Undelivered::store)?;
        }
        Ok(OnForge::Posted(format!("{} {noun} comment {comment_id}", forge.name())))
    }

    /// Sends the notice to the configured webhook, if any.
    async fn send_webhook(&self, text: &str) -> Result<String, String> {
        match self.config.notify.webhook_url.trim() {
            "" => Ok(String::new()),
            url => post_webhook(url.to_string(), text.to_string())
                .await
                .map(|ok| format!("webhook: {ok}"))
                .map_err(|e| format!("webhook: {e}")),
        }
    }
}

/// Ends a notice's comment (hidden on GitHub): which notice it is, so that a retry after a crash finds
/// its own comment and never takes another notice's with the same text for it.
fn notice_marker(id: i64) -> String {
    format!("<!-- executor notice {id} -->")
}

/// Posts a Slack-compatible `{"text": …}` message. Returns what happened, for the record; the URL (which
/// carries the webhook's secret) is never part of it.
async fn post_webhook(url: String, text: String) -> Result<String, String> {
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(15))
        .build()
        .map_err(|e| format!("failed ({})", transport_error(e)))?;
    let sent = client.post(&url).json(&serde_json::json!({ "text": text })).send().await;
    match sent.map(|answer| answer.status().as_u16()) {
        Ok(status) if (200..300).contains(&status) => Ok(format!("sent (HTTP {status})")),
        Ok(status) => Err(format!("refused (HTTP {status})")),
        Err(e) => Err(format!("failed ({})", transport_error(e))),
    }
}

/// A transport error with its causes, without the URL.
fn transport_error(e: reqwest::Error) -> String {
    if e.is_timeout() {
        return "no answer within 15 s".into();
    }
    redact_transport_error(&crate::github::with_causes(&e.without_url()))
}

/// Transport errors may quote the URL; keep only the part before it.
fn redact_transport_error(message: &str) -> String {
    match message.find("http") {
        Some(i) => format!("{}…", message[..i].trim_end()),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests;
