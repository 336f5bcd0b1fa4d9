//! What a GitHub delivery names: its repository and the pull requests it may concern — by number where
//! the payload carries them, else by head commit or branch (a `status` has only `sha` and `branches[]`;
//! a check from a fork lists no pull request). Nothing else is read from a payload: the runner's own
//! observation decides what happened.

use serde_json::Value;

/// The pull requests a delivery may concern, in one repository.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Targets {
    /// `repository.full_name` (`owner/name`).
    pub repository: String,
    pub numbers: Vec<i64>,
    pub shas: Vec<String>,
    pub branches: Vec<String>,
}

/// What a delivery is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Concern {
    /// Pull requests of a repository that may have changed.
    PullRequests(Targets),
    /// Nothing executor watches: another event, an action that changes nothing it reads, an issue
    /// comment on an issue rather than a pull request, `ping`.
    Nothing,
}

/// The `pull_request` actions that change what a run's observation reads (state, draft, head, labels).
const PULL_REQUEST_ACTIONS: &[&str] =
    &["opened", "synchronize", "closed", "reopened", "ready_for_review", "converted_to_draft", "labeled"];

/// The events `executor webhooks print` asks to tick, in GitHub's names.
pub const EVENTS: &[&str] = &[
    "check_run",
    "check_suite",
    "workflow_run",
    "status",
    "pull_request",
    "pull_request_review",
    "pull_request_review_comment",
    "pull_request_review_thread",
    "issue_comment",
];

/// What delivery `event` with `payload` concerns. `None`: the payload lacks what its event always has
/// (a repository, a number): a malformed delivery.
pub fn concern(event: &str, payload: &Value) -> Option<Concern> {
    if !EVENTS.contains(&event) {
        return Some(Concern::Nothing);
    }
    let repository = payload.pointer("/repository/full_name")?.as_str()?.to_string();
    let mut t = Targets { repository, ..Targets::default() };
    let action = payload.get("action").and_then(Value::as_str).unwrap_or("");
    match event {
        "check_run" | "check_suite" | "workflow_run" => {
            let object = payload.get(event)?;
            for pr in object.get("pull_requests").and_then(Value::as_array).into_iter().flatten() {
                t.numbers.extend(pr.get("number").and_then(Value::as_i64));
            }
            t.shas.extend(text(object, "head_sha"));
            // A check run's branch is its suite's.
            t.branches.extend(text(object, "head_branch").or_else(|| {
                object.pointer("/check_suite/head_branch").and_then(Value::as_str).map(str::to_string)
            }));
        }
        "status" => {
            t.shas.extend(text(payload, "sha"));
            for branch in payload.get("branches").and_then(Value::as_array).into_iter().flatten() {
                t.branches.extend(text(branch, "name"));
            }
        }
        "pull_request" if !PULL_REQUEST_ACTIONS.contains(&action) => return Some(Concern::Nothing),
        "pull_request"
        | "pull_request_review"
        | "pull_request_review_comment"
        | "pull_request_review_thread" => {
            t.numbers.push(payload.pointer("/pull_request/number")?.as_i64()?);
        }
        "issue_comment" => {
            let issue = payload.get("issue")?;
            // An issue comment on a pull request carries `issue.pull_request`; on an issue it does not.
            if issue.get("pull_request").is_none_or(Value::is_null) {
                return Some(Concern::Nothing);
            }
            t.numbers.push(issue.get("number")?.as_i64()?);
        }
        _ => return Some(Concern::Nothing),
    }
    Some(t.concern())
}

impl Targets {
    /// What a delivery naming these targets is about: their pull requests, each number once.
    pub(super) fn concern(mut self) -> Concern {
        self.numbers.sort_unstable();
        self.numbers.dedup();
        Concern::PullRequests(self)
    }
}

/// `key`'s text in `v`, when it is a non-empty string.
pub(super) fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string)
}
