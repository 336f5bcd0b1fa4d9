//! Branch names: `<prefix><gid>-<slug of the description>`. The description is untrusted, so it only ever
//! contributes `[a-z0-9-]`; the whole name is then checked against git's ref-name rules.

use super::WorkspaceError;
use crate::domain::TaskGid;

/// The longest slug of a description kept in a branch name.
pub const SLUG_MAX: usize = 40;

/// The branch for a task: `prefix` (from the config, e.g. `executor/`), the gid, and a slug of the
/// description when it has one. Fails only when the prefix or the gid make an invalid ref name. The
/// description is redacted first (the secrets this process knows, and well-known shapes): a branch
/// name is pushed and shown everywhere.
pub fn branch_name(prefix: &str, gid: &TaskGid, description: &str) -> Result<String, WorkspaceError> {
    let slug = slug(&crate::redact::process().redact(description));
    let name = if slug.is_empty() { format!("{prefix}{gid}") } else { format!("{prefix}{gid}-{slug}") };
    check_branch_name(&name)?;
    Ok(name)
}

/// Whether a task with this gid can ever get a branch. The runner names it `<prefix><gid>` followed by
/// a slug of the description when the description has one, so `<prefix><gid>` alone must be a valid
/// ref name: a gid that only passes thanks to a slug (`y.lock` + `-fix`) fails once the text changes.
pub fn check_gid_branch(prefix: &str, gid: &TaskGid) -> Result<(), WorkspaceError> {
    check_branch_name(&format!("{prefix}{gid}"))
}

/// Lowercase ASCII letters and digits; every other run of characters becomes one `-`; no leading or
/// trailing `-`; at most [`SLUG_MAX`] characters. Non-ASCII letters are dropped rather than guessed at.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
        if out.len() > SLUG_MAX {
            break;
        }
    }
    if out.len() > SLUG_MAX {
        // Cut at the last whole word that fits, unless that leaves too little to recognise the task.
        let cut = out[..=SLUG_MAX].rfind('-').filter(|&i| i >= SLUG_MAX / 2).unwrap_or(SLUG_MAX);
        out.truncate(cut);
    }
    out.trim_end_matches('-').to_string()
}

/// Git's rules for a branch name (`git check-ref-format --branch`), checked without running git.
pub fn check_branch_name(name: &str) -> Result<(), WorkspaceError> {
    match ref_rule_broken(name) {
        None => Ok(()),
        Some(reason) => Err(WorkspaceError::InvalidBranch { name: name.chars().take(200).collect(), reason }),
    }
}

fn ref_rule_broken(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("it is empty");
    }
    if name.starts_with('-') {
        return Some("a branch name cannot start with '-'");
    }
    if name == "@" || name == "HEAD" {
        return Some("'@' and 'HEAD' are reserved");
    }
    if name.chars().any(|c| c.is_ascii_control() || " ~^:?*[\\".contains(c)) {
        return Some("it contains a space, a control character or one of ~ ^ : ? * [ \\");
    }
    if name.contains("..") {
        return Some("it contains '..'");
    }
    if name.contains("@{") {
        return Some("it contains '@{'");
    }
    if name.ends_with('.') {
        return Some("it ends with '.'");
    }
    for component in name.split('/') {
        if component.is_empty() {
            return Some("it has an empty path component ('//' or a leading or trailing '/')");
        }
        if component.starts_with('.') {
            return Some("a path component starts with '.'");
        }
        if component.ends_with(".lock") {
            return Some("a path component ends with '.lock'");
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    fn gid(s: &str) -> TaskGid {
        TaskGid::parse(s).unwrap()
    }

    #[test]
    fn gids_that_can_never_be_a_branch_are_told_apart() {
        for bad in ["a..b", "y.lock", "x.", "v1.lock"] {
            assert!(check_gid_branch("executor/", &gid(bad)).is_err(), "{bad}");
        }
        assert!(check_gid_branch("", &gid("HEAD")).is_err());
        assert!(check_gid_branch("", &gid("-x")).is_err());
        for good in ["1207", "a.b", "JIRA-12", "y.locked", "a_b"] {
            assert!(check_gid_branch("executor/", &gid(good)).is_ok(), "{good}");
        }
    }

    #[test]
    fn a_secret_in_the_description_never_reaches_the_name() {
        crate::redact::remember(&crate::redact::Redactor::new(["hunter2-redact-env-value".to_string()]));
        let text = "Rotate hunter2-redact-env-value and token ghp_q1w2e3r4t5y6u7i8o9p0a1s2d3f4g5h6j7k8";
        let name = branch_name("executor/", &gid("R7"), text).unwrap();
        assert_eq!(name, "executor/R7-rotate-redacted-and-token-redacted");
    }

    #[test]
    fn names_carry_prefix_gid_and_slug() {
        let name = branch_name("executor/", &gid("1207"), "Fix the Login page (crash on 2FA)!");
        assert_eq!(name.unwrap(), "executor/1207-fix-the-login-page-crash-on-2fa");
        let bare = branch_name("executor/", &gid("1207"), "   ").unwrap();
        assert_eq!(bare, "executor/1207");
    }

    #[test]
    fn hostile_descriptions_give_safe_names() {
        let long = "a".repeat(500);
        let cases = [
            ("\"; rm -rf /", "executor/42-rm-rf"),
            ("../../x", "executor/42-x"),
            ("$(x) `y` ${HOME}", "executor/42-x-y-home"),
            ("Ünïcödé ✓ naïve", "executor/42-n-c-d-na-ve"),
            ("-leading --dashes-- and.lock", "executor/42-leading-dashes-and-lock"),
            ("refs/heads/main@{1}~2^:?*[\\", "executor/42-refs-heads-main-1-2"),
            ("line\nbreak\ttab\0nul", "executor/42-line-break-tab-nul"),
            ("", "executor/42"),
        ];
        for (description, want) in cases {
            let got = branch_name("executor/", &gid("42"), description).unwrap();
            assert_eq!(got, want, "{description:?}");
        }
        let got = branch_name("executor/", &gid("42"), &long).unwrap();
        assert_eq!(got, format!("executor/42-{}", "a".repeat(SLUG_MAX)));
        let cut = branch_name("", &gid("42"), &format!("{}-b", "a".repeat(SLUG_MAX - 1))).unwrap();
        assert!(!cut.ends_with('-'), "{cut}");
    }

    #[test]
    fn long_descriptions_are_cut_at_a_word() {
        assert_eq!(slug("Add a feature file describing the feature"), "add-a-feature-file-describing-the");
        assert_eq!(slug(&"x".repeat(60)).len(), SLUG_MAX, "one long word is cut where it must be");
    }

    #[test]
    fn slug_never_has_double_dashes_or_edges() {
        for text in ["a--b", "--a--", "a - - b", "!!!", "a.b..c", "x".repeat(41).as_str()] {
            let s = slug(text);
            assert!(!s.contains("--") && !s.starts_with('-') && !s.ends_with('-'), "{s}");
            assert!(s.len() <= SLUG_MAX);
            assert!(s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'));
        }
    }

    #[test]
    fn bad_prefix_or_gid_is_refused() {
        assert!(branch_name("executor//", &gid("1"), "x").is_err());
        assert!(branch_name("-x/", &gid("1"), "x").is_err());
        let err = branch_name("executor/", &gid("a..b"), "x").unwrap_err();
        assert!(err.to_string().contains("'..'"), "{err}");
        assert!(branch_name("executor/", &gid("x.lock"), "").is_err());
    }

    /// The pure rules agree with git itself on names good and bad.
    #[test]
    fn rules_match_git_check_ref_format() {
        let names = [
            "executor/1207-fix",
            "feature/a.b",
            "a",
            "-a",
            "a..b",
            "a/.b",
            "a.lock",
            "a/b.lock/c",
            "a//b",
            "a/",
            "/a",
            "a.",
            "a b",
            "a~1",
            "a^",
            "a:b",
            "a?",
            "a*",
            "a[",
            "a\\b",
            "a@{1}",
            "HEAD",
            "a\u{7f}",
            "naïve",
            "x@y",
        ];
        // Outside any repository, so git cannot expand `@{-1}`-style shorthands against a checkout.
        let outside = tempfile::tempdir().unwrap();
        for name in names {
            let git_ok = Command::new("git")
                .current_dir(outside.path())
                .args(["check-ref-format", "--branch", name])
                .output()
                .unwrap()
                .status
                .success();
            assert_eq!(check_branch_name(name).is_ok(), git_ok, "{name:?}");
        }
        // `--branch` echoes a lone "@" back as shorthand, but as a ref name git's rule 9 forbids it.
        assert!(check_branch_name("@").is_err());
    }
}
