//! What a GitLab delivery names: its project and the merge requests it may concern — by IID where the
//! payload carries one, else by head commit or branch (a job's event has only `ref` and `sha`). Nothing
//! else is read from a payload: the runner's own observation decides what happened. The targets are the
//! GitHub receiver's ([`Targets`]), a merge request's IID standing for a pull request's number.

use serde_json::Value;

use super::github::{Concern, Targets, text};

/// The events `executor webhooks print` asks GitLab to send, by the name of their checkbox on GitLab's
/// webhook page, and the `X-Gitlab-Event` each arrives as.
pub const EVENTS: &[(&str, &str)] = &[
    ("Merge request events", "Merge Request Hook"),
    ("Pipeline events", "Pipeline Hook"),
    ("Job events", "Job Hook"),
    ("Comments", "Note Hook"),
];

/// The merge request actions that change what a run's observation reads (state, draft, head, labels,
/// discussions resolved). Approvals do not.
const MERGE_REQUEST_ACTIONS: &[&str] = &["open", "close", "reopen", "update", "merge"];

/// What delivery `event` (its `X-Gitlab-Event`) with `payload` concerns. `None`: the payload lacks what
/// its event always has (a project, an IID): a malformed delivery.
pub fn concern(event: &str, payload: &Value) -> Option<Concern> {
    if !EVENTS.iter().any(|(_, e)| *e == event) {
        return Some(Concern::Nothing);
    }
    let mut t = Targets { repository: project_path(payload)?, ..Targets::default() };
    let attributes = payload.get("object_attributes");
    match event {
        "Merge Request Hook" => {
            let attributes = attributes?;
            let action = attributes.get("action").and_then(Value::as_str).unwrap_or("");
            if !MERGE_REQUEST_ACTIONS.contains(&action) {
                return Some(Concern::Nothing);
            }
            t.numbers.push(attributes.get("iid")?.as_i64()?);
        }
        "Pipeline Hook" => {
            let attributes = attributes?;
            // A merge request pipeline names its merge request; a branch pipeline only its ref and commit.
            t.numbers.extend(payload.pointer("/merge_request/iid").and_then(Value::as_i64));
            t.shas.extend(text(attributes, "sha"));
            t.branches.extend(text(attributes, "ref"));
        }
        "Job Hook" => {
            t.shas.extend(text(payload, "sha"));
            t.branches.extend(text(payload, "ref"));
        }
        "Note Hook" => {
            // A comment on an issue, a commit or a snippet says nothing of a merge request.
            if attributes?.get("noteable_type").and_then(Value::as_str) != Some("MergeRequest") {
                return Some(Concern::Nothing);
            }
            t.numbers.push(payload.pointer("/merge_request/iid")?.as_i64()?);
        }
        _ => return Some(Concern::Nothing),
    }
    Some(t.concern())
}

/// The project's full path: `project.path_with_namespace`, which every event this receiver reads carries
/// (older job events only in the path of `repository.homepage`).
fn project_path(payload: &Value) -> Option<String> {
    if let Some(path) = payload.pointer("/project/path_with_namespace").and_then(Value::as_str) {
        return Some(path.to_string()).filter(|p| !p.is_empty());
    }
    let homepage = payload.pointer("/repository/homepage").and_then(Value::as_str)?;
    let url = reqwest::Url::parse(homepage).ok()?;
    Some(url.path().trim_matches('/').to_string()).filter(|p| !p.is_empty())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn targets(event: &str, payload: Value) -> Targets {
        match concern(event, &payload) {
            Some(Concern::PullRequests(t)) => t,
            other => panic!("{event}: {other:?}"),
        }
    }

    #[test]
    fn a_merge_request_event_names_its_iid_and_an_approval_nothing() {
        let mr = |action: &str| {
            json!({ "object_kind": "merge_request", "project": { "path_with_namespace": "group/app" },
                    "object_attributes": { "iid": 7, "action": action, "source_branch": "executor/x" } })
        };
        let t = targets("Merge Request Hook", mr("update"));
        assert_eq!((t.repository.as_str(), t.numbers.as_slice()), ("group/app", &[7][..]));
        assert_eq!(concern("Merge Request Hook", &mr("approved")), Some(Concern::Nothing));
    }

    #[test]
    fn a_pipeline_names_its_merge_request_commit_and_branch_and_a_job_its_commit_and_branch() {
        let t = targets(
            "Pipeline Hook",
            json!({ "project": { "path_with_namespace": "g/sub/app" }, "merge_request": { "iid": 3 },
                    "object_attributes": { "ref": "executor/x", "sha": "abc", "status": "failed" } }),
        );
        assert_eq!((t.numbers, t.shas, t.branches), (vec![3], vec!["abc".into()], vec!["executor/x".into()]));
        let branch_only = targets(
            "Pipeline Hook",
            json!({ "project": { "path_with_namespace": "g/app" }, "merge_request": null,
                    "object_attributes": { "ref": "executor/y", "sha": "def" } }),
        );
        assert!(branch_only.numbers.is_empty());
        let job = targets(
            "Job Hook",
            json!({ "object_kind": "build", "ref": "executor/z", "sha": "123",
                    "repository": { "homepage": "https://gitlab.example.com/g/app" } }),
        );
        assert_eq!(
            (job.repository.as_str(), job.shas, job.branches),
            ("g/app", vec!["123".into()], vec!["executor/z".into()])
        );
    }

    #[test]
    fn a_comment_counts_only_on_a_merge_request() {
        let note = |on: &str| {
            json!({ "project": { "path_with_namespace": "g/app" }, "merge_request": { "iid": 9 },
                    "object_attributes": { "noteable_type": on, "note": "please fix" } })
        };
        assert_eq!(targets("Note Hook", note("MergeRequest")).numbers, vec![9]);
        assert_eq!(concern("Note Hook", &note("Issue")), Some(Concern::Nothing));
    }

    #[test]
    fn other_events_are_nothing_and_a_payload_without_its_project_is_malformed() {
        assert_eq!(concern("Push Hook", &json!({})), Some(Concern::Nothing));
        assert_eq!(concern("Merge Request Hook", &json!({ "object_attributes": { "iid": 1 } })), None);
        let no_iid = json!({ "project": { "path_with_namespace": "g/app" }, "object_attributes": { "action": "open" } });
        assert_eq!(concern("Merge Request Hook", &no_iid), None);
    }
}
