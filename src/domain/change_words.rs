//! How a run's change is named where a human reads about it. GitHub (and the local forge, which imitates
//! it) says "pull request", "PR #12"; GitLab says "merge request", "MR !12". Every message, page and
//! line of output that names a run's change takes these words from the run's repository, so a GitLab
//! user reads GitLab's words. Stored text (events, reasons) is never rewritten or parsed back: only new
//! text is built with them.

use serde::Serialize;

/// The words for a forge's change request: chosen once from the repository's forge, then used as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ChangeWords {
    /// "pull request" / "merge request", lower case, as in the middle of a sentence.
    pub noun: &'static str,
    /// "Pull request" / "Merge request", starting a sentence or a heading.
    pub title: &'static str,
    /// "PR" / "MR".
    pub short: &'static str,
    /// What a number is written after: `#` on GitHub (`#12`), `!` on GitLab (`!12`).
    pub sigil: &'static str,
}

impl ChangeWords {
    /// GitHub's words, and the local forge's: today's words, unchanged.
    pub const PULL_REQUEST: ChangeWords =
        ChangeWords { noun: "pull request", title: "Pull request", short: "PR", sigil: "#" };
    /// GitLab's words.
    pub const MERGE_REQUEST: ChangeWords =
        ChangeWords { noun: "merge request", title: "Merge request", short: "MR", sigil: "!" };

    /// The words of the forge named as in `repos.NAME.forge` (`local`, `github`, `gitlab`); a name
    /// not known keeps "pull request".
    pub fn of_forge(forge: &str) -> ChangeWords {
        match forge {
            "gitlab" => ChangeWords::MERGE_REQUEST,
            _ => ChangeWords::PULL_REQUEST,
        }
    }

    /// The reference to change `number`: `#12` / `!12`.
    pub fn reference(&self, number: i64) -> String {
        format!("{}{number}", self.sigil)
    }

    /// The short name with the reference: `PR #12` / `MR !12`.
    pub fn short_ref(&self, number: i64) -> String {
        format!("{} {}", self.short, self.reference(number))
    }

    /// The noun with the reference: `pull request #12` / `merge request !12`.
    pub fn noun_ref(&self, number: i64) -> String {
        format!("{} {}", self.noun, self.reference(number))
    }
}

impl Default for ChangeWords {
    fn default() -> Self {
        ChangeWords::PULL_REQUEST
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_and_local_keep_todays_words() {
        for forge in ["github", "local", ""] {
            let w = ChangeWords::of_forge(forge);
            assert_eq!((w.noun, w.short, w.reference(12)), ("pull request", "PR", "#12".to_string()));
            assert_eq!(w.short_ref(12), "PR #12");
            assert_eq!(w.noun_ref(3), "pull request #3");
            assert_eq!(w.title, "Pull request");
        }
    }

    #[test]
    fn gitlab_says_merge_request_and_bang() {
        let w = ChangeWords::of_forge("gitlab");
        assert_eq!((w.noun, w.short, w.reference(12)), ("merge request", "MR", "!12".to_string()));
        assert_eq!(w.short_ref(12), "MR !12");
        assert_eq!(w.noun_ref(7), "merge request !7");
        assert_eq!(w.title, "Merge request");
    }

    #[test]
    fn the_words_serialize_for_templates() {
        let v = serde_json::to_value(ChangeWords::MERGE_REQUEST).expect("plain fields serialize");
        assert_eq!(
            v,
            serde_json::json!({ "noun": "merge request", "title": "Merge request", "short": "MR", "sigil": "!" })
        );
    }
}
