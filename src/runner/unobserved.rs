//! A run whose pull request GitHub keeps answering with an error, while the repository's other pull
//! requests are seen whole: nothing is decided for that run (never from a partial view), the others go
//! on, and once it has been so for `runner.check_timeout` the human is told which pull request and why.

use chrono::{DateTime, TimeDelta, Utc};

use super::decision::{Notice, NoticeKind};
use super::state::{Runner, RunnerError, TickReport};
use crate::domain::{ChangeWords, Run};
use crate::forge::Unobserved;
use crate::store::RunMemory;

impl Runner {
    pub(super) async fn unobserved(
        &self,
        report: &mut TickReport,
        run: &Run,
        memory: &RunMemory,
        u: &Unobserved,
    ) -> Result<(), RunnerError> {
        let (_, repo) = self.repo_of(run)?;
        let words = repo.words();
        let why = format!(
            "{} could not be observed, so nothing was done for this run this tick (the repository's other \
             runs go on): {}",
            words.noun_ref(u.number),
            u.why
        );
        tracing::warn!(run = run.id, "{why}");
        report.failed(format!("run {}: {why}", run.id));
        if memory.last_decision.as_deref() != Some(why.as_str()) {
            self.store.record_decision(run.id, Some(&self.owner), &why).await?;
        }
        let sent = self.store.notice_keys(run.id).await?;
        let timeout = self.config.runner.check_timeout.std();
        if let Some(notice) = overdue(u, (words, forge_title(&repo.forge)), timeout, &sent, Utc::now()) {
            self.notify(run, &notice).await?;
        }
        Ok(())
    }
}

/// The forge as its name is written in a sentence.
fn forge_title(forge: &str) -> &'static str {
    match forge {
        "github" => "GitHub",
        "gitlab" => "GitLab",
        _ => "the forge",
    }
}

/// The notice for a pull request unobservable for `timeout` or longer, once per stretch of failures,
/// named in the forge's words (`forge`: its words and its name).
fn overdue(
    u: &Unobserved,
    (words, forge): (ChangeWords, &str),
    timeout: std::time::Duration,
    sent: &[String],
    now: DateTime<Utc>,
) -> Option<Notice> {
    let timeout = TimeDelta::from_std(timeout).unwrap_or(TimeDelta::MAX);
    let waited = now - u.since;
    let key = format!("unobserved:{}:{}", u.number, u.since.timestamp());
    if waited < timeout || sent.contains(&key) {
        return None;
    }
    let waited = std::time::Duration::from_secs(u64::try_from(waited.num_seconds()).unwrap_or(0));
    let text = format!(
        "{} could not be observed for {}: {forge} keeps answering it with an error ({}). Nothing is done \
         for this run until {forge} answers it whole; the repository's other runs go on. Look at the {} \
         on {forge} (runner.check_timeout is {}).",
        words.short_ref(u.number),
        humantime::format_duration(waited),
        u.why,
        words.noun,
        humantime::format_duration(timeout.to_std().unwrap_or_default()),
    );
    Some(Notice { kind: NoticeKind::NeedsHuman, key, text })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_human_is_told_once_after_check_timeout() {
        let since: DateTime<Utc> = "2026-12-01T10:00:00Z".parse().unwrap();
        let u = Unobserved { number: 7, since, why: "HTTP 502".into() };
        let timeout = std::time::Duration::from_secs(600);
        let github = (ChangeWords::PULL_REQUEST, "GitHub");
        assert!(overdue(&u, github, timeout, &[], since + TimeDelta::seconds(599)).is_none());
        let notice = overdue(&u, github, timeout, &[], since + TimeDelta::seconds(600)).unwrap();
        assert!(notice.text.contains("PR #7") && notice.text.contains("HTTP 502"), "{}", notice.text);
        assert!(
            overdue(&u, github, timeout, std::slice::from_ref(&notice.key), since + TimeDelta::hours(2))
                .is_none()
        );
        // A new stretch of failures is told again.
        let again = Unobserved { since: since + TimeDelta::hours(1), ..u };
        assert!(overdue(&again, github, timeout, &[notice.key], since + TimeDelta::hours(2)).is_some());
    }

    #[test]
    fn on_gitlab_the_notice_names_the_merge_request_and_gitlab() {
        let since: DateTime<Utc> = "2026-12-01T10:00:00Z".parse().unwrap();
        let u = Unobserved { number: 7, since, why: "HTTP 502".into() };
        let gitlab = (ChangeWords::MERGE_REQUEST, forge_title("gitlab"));
        let timeout = std::time::Duration::from_secs(600);
        let notice = overdue(&u, gitlab, timeout, &[], since + TimeDelta::hours(1)).unwrap();
        assert!(
            notice.text.starts_with("MR !7 could not be observed for 1h: GitLab keeps"),
            "{}",
            notice.text
        );
        assert!(notice.text.contains("Look at the merge request on GitLab"), "{}", notice.text);
        assert!(!notice.text.contains("GitHub") && !notice.text.contains("PR"), "{}", notice.text);
    }
}
