//! The GitLab issues checks of `executor doctor`: for each GitLab issues source, whether `[gitlab]`'s
//! token reads its project (`GET /projects/{path}`, read only), with the fix when it does not.

use std::time::Duration;

use super::{Check, Outcome, pass, problem};
use crate::config::Config;
use crate::gitlab::GitLabClient;
use crate::writeback::{GitLabIssuesTracker, TrackerError};

/// How long the question may take.
const TIMEOUT: Duration = Duration::from_secs(20);

pub(super) async fn gitlab_issues_checks(config: &Config) -> Vec<Check> {
    let mut out = Vec::new();
    for s in config.sources.iter().filter(|s| s.kind == "gitlab_issues") {
        let label = format!("gitlab_issues {}", s.name);
        let client = match GitLabClient::from_env(&config.gitlab) {
            Ok(client) => std::sync::Arc::new(client),
            Err(e) => {
                out.push(problem(Outcome::Fail, &label, e.to_string(), "correct [gitlab] url"));
                continue;
            }
        };
        let asked = async { GitLabIssuesTracker::new(client, s)?.probe().await };
        let answer = tokio::time::timeout(TIMEOUT, asked)
            .await
            .unwrap_or_else(|_| Err(TrackerError::Passing("no answer within 20 s".into())));
        out.push(match answer {
            Ok(detail) => pass(&label, detail),
            Err(TrackerError::Refused { why, fix }) => problem(Outcome::Fail, &label, why, fix),
            Err(TrackerError::Passing(why)) if why.contains("no GitLab token") => problem(
                Outcome::Fail,
                &label,
                why,
                "export the token (scope `api` to write notes back, `read_api` to read only)",
            ),
            Err(TrackerError::Passing(why)) => problem(
                Outcome::Warn,
                &label,
                format!("could not ask GitLab: {why}"),
                "run `executor doctor` again; check [gitlab] url if it persists",
            ),
        });
    }
    out
}
