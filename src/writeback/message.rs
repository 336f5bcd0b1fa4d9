//! What a tracker is told, and the marker that lets a retry recognise its own earlier comment.

use crate::domain::ChangeWords;
use ring::rand::{SecureRandom, SystemRandom};

/// A new marker: `wb-` and 16 random hex digits, unique whatever database or host recorded it.
pub fn new_marker() -> String {
    let mut bytes = [0u8; 8];
    // The system's randomness failing is exotic; the time then still tells messages apart.
    if SystemRandom::new().fill(&mut bytes).is_err() {
        bytes = chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default().to_be_bytes();
    }
    format!("wb-{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// The line a message ends with in a plain-text tracker (Asana): visible, short, and what a retry
/// looks for.
pub fn marker_text(marker: &str) -> String {
    format!("[executor {marker}]")
}

/// The hidden line a Markdown comment (GitHub's, GitLab's) ends with: not shown, still found by a retry.
pub fn hidden_marker(marker: &str) -> String {
    format!("<!-- executor {marker} -->")
}

/// Whether a tracker's comment is one of executor's own messages: it carries a marker
/// (`[executor wb-…]` or `<!-- executor wb-… -->`, see [`marker_text`], [`hidden_marker`] and
/// [`new_marker`]).
pub fn is_executors(text: &str) -> bool {
    text.contains("[executor wb-") || text.contains("<!-- executor wb-")
}

/// The message for a pull request (a merge request on GitLab: `words`) opened.
pub fn pr_opened(words: ChangeWords, url: &str, branch: &str) -> String {
    format!(
        "executor opened a {} for this task: {url} (branch {branch}). It is a draft until \
             its checks and review pass; you will hear here when it is ready or given up.",
        words.noun
    )
}

/// The message for a run completed: ready for a human's review, with the summary the human is sent.
pub fn complete(words: ChangeWords, url: Option<&str>, summary: &str) -> String {
    match url {
        Some(url) => format!("The {} is ready for your review: {url}\n\n{summary}", words.noun),
        None => format!("The work is ready for your review.\n\n{summary}"),
    }
}

/// The message for a run given up: why, and what a human can do.
pub fn abandoned(task_gid: &str, why: &str, branch: Option<&str>) -> String {
    let branch = branch.map(|b| format!(" or take over branch {b} by hand")).unwrap_or_default();
    format!(
        "executor gave up on this task: {why}\n\nWhat you can do: `executor queue retry {task_gid}` \
         starts a new attempt{branch}."
    )
}

/// The message for a task skipped by a filter or the triage.
pub fn skipped(reason: &str) -> String {
    format!("executor will not work on this task: {reason}")
}

/// The message for a pull request (merge request) merged.
pub fn merged(words: ChangeWords, url: &str) -> String {
    format!("The {} was merged: {url}", words.noun)
}

/// The message for a plan that waits for approval: the plan, then how to approve it.
pub fn plan(plan: &str, how: &str) -> String {
    format!(
        "executor's agent wrote a plan for this task. No code is written until a person approves it.\n\n{plan}\n\n{how}"
    )
}

/// The message for a task a human approved in executor.
pub fn approved() -> String {
    "This task was approved in executor; an agent will start on it.".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executors_own_messages_are_known_by_their_marker() {
        assert!(is_executors(&format!("done\n\n{}", marker_text(&new_marker()))));
        assert!(is_executors(&format!("done\n\n{}", hidden_marker(&new_marker()))));
        assert!(!is_executors("Use the v2 API, please."));
    }

    #[test]
    fn a_trackers_messages_name_the_change_in_its_forges_words() {
        let (gh, gl) = (ChangeWords::PULL_REQUEST, ChangeWords::MERGE_REQUEST);
        let url = "https://gitlab.example/g/p/-/merge_requests/12";
        assert!(
            pr_opened(gl, url, "executor/x").starts_with("executor opened a merge request for this task: ")
        );
        assert!(
            pr_opened(gh, url, "executor/x").starts_with("executor opened a pull request for this task: ")
        );
        assert!(complete(gl, Some(url), "done").starts_with("The merge request is ready for your review: "));
        assert!(complete(gh, Some(url), "done").starts_with("The pull request is ready for your review: "));
        assert_eq!(merged(gl, url), format!("The merge request was merged: {url}"));
        assert_eq!(merged(gh, url), format!("The pull request was merged: {url}"));
    }

    #[test]
    fn markers_are_unique_and_plain() {
        let (a, b) = (new_marker(), new_marker());
        assert_ne!(a, b);
        assert_eq!(a.len(), 3 + 16);
        assert!(a.starts_with("wb-") && a[3..].bytes().all(|c| c.is_ascii_hexdigit()));
    }
}
