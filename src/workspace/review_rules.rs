//! The repository's own review rules (`repos.NAME.review_rules`), read from the worktree under review
//! for the `pr_review` prompt.
//!
//! The branch under review was written by an agent, so its files are not trusted to stay inside the
//! worktree: a pattern may only name files below it, symbolic links are skipped, and what is read is
//! bounded. A pattern is a path relative to the repository whose last component may hold `*` (for
//! example `.cursor/rules/*.mdc`).

use std::path::{Component, Path};

/// One file of a repository's review rules.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReviewRule {
    /// Relative to the repository, with `/`.
    pub path: String,
    pub text: String,
}

/// At most this many files, and this much of each, reach the prompt.
const MAX_FILES: usize = 20;
const MAX_BYTES_PER_FILE: usize = 32 * 1024;

/// The rule files the patterns name in `worktree`, in pattern order then name order. Files that are
/// missing, unreadable, not UTF-8 or symbolic links are left out (a repository without rules is fine).
pub fn review_rules(worktree: &Path, patterns: &[String]) -> Vec<ReviewRule> {
    let mut rules: Vec<ReviewRule> = Vec::new();
    for pattern in patterns {
        for rel in matching_files(worktree, pattern) {
            if rules.len() >= MAX_FILES {
                return rules;
            }
            if rules.iter().any(|r| r.path == rel) {
                continue;
            }
            if let Some(text) = read_regular_file(&worktree.join(&rel)) {
                rules.push(ReviewRule { path: rel, text });
            }
        }
    }
    rules
}

/// Relative paths (with `/`) of the files matching `pattern` below `worktree`.
fn matching_files(worktree: &Path, pattern: &str) -> Vec<String> {
    let rel = Path::new(pattern);
    if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        tracing::warn!("review rule pattern {pattern:?} must be a relative path inside the repository");
        return Vec::new();
    }
    let (dir, name) = match pattern.rsplit_once('/') {
        Some((dir, name)) => (dir, name),
        None => ("", pattern),
    };
    if dir.contains('*') {
        tracing::warn!("review rule pattern {pattern:?}: `*` is allowed in the file name only");
        return Vec::new();
    }
    if !name.contains('*') {
        return vec![pattern.to_string()];
    }
    let Ok(entries) = std::fs::read_dir(worktree.join(dir)) else { return Vec::new() };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| glob_matches(name, n))
        .collect();
    names.sort();
    names.into_iter().map(|n| if dir.is_empty() { n } else { format!("{dir}/{n}") }).collect()
}

/// `*` matches any run of characters (none included); everything else matches itself.
fn glob_matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((prefix, rest)) => {
            let Some(tail) = name.strip_prefix(prefix) else { return false };
            (0..=tail.len()).filter(|i| tail.is_char_boundary(*i)).any(|i| glob_matches(rest, &tail[i..]))
        }
    }
}

/// A regular file's text, cut to the bound at a character boundary; `None` for anything else.
fn read_regular_file(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.file_type().is_file() {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    let mut text = String::from_utf8(bytes).ok()?;
    if text.len() > MAX_BYTES_PER_FILE {
        let mut cut = MAX_BYTES_PER_FILE;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n[… cut: the file is longer]");
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_file_names() {
        assert!(glob_matches("*.mdc", "style.mdc"));
        assert!(glob_matches("*", "anything"));
        assert!(glob_matches("a*b*c", "aXXbYc"));
        assert!(!glob_matches("*.mdc", "style.md"));
        assert!(!glob_matches("pull-request.mdc", "pull-request.mdcx"));
    }

    #[test]
    fn reads_named_and_globbed_files_inside_the_worktree_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".cursor/rules")).unwrap();
        std::fs::write(root.join(".cursor/rules/b.mdc"), "rule b").unwrap();
        std::fs::write(root.join(".cursor/rules/a.mdc"), "rule a").unwrap();
        std::fs::write(root.join(".cursor/rules/notes.txt"), "not a rule").unwrap();
        std::fs::write(root.join("pull-request.mdc"), "pr rules").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "do not read").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.join(".cursor/rules/link.mdc"))
            .unwrap();

        let patterns: Vec<String> =
            [".cursor/rules/*.mdc", "pull-request.mdc", "../secret", "/etc/passwd", "missing.md"]
                .map(String::from)
                .to_vec();
        let rules = review_rules(root, &patterns);
        let got: Vec<(&str, &str)> = rules.iter().map(|r| (r.path.as_str(), r.text.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (".cursor/rules/a.mdc", "rule a"),
                (".cursor/rules/b.mdc", "rule b"),
                ("pull-request.mdc", "pr rules")
            ]
        );
    }

    #[test]
    fn a_long_file_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("rules.md"), "é".repeat(MAX_BYTES_PER_FILE)).unwrap();
        let rules = review_rules(dir.path(), &["rules.md".into()]);
        assert!(rules[0].text.ends_with("[… cut: the file is longer]"));
        assert!(rules[0].text.len() < MAX_BYTES_PER_FILE + 40);
    }
}
