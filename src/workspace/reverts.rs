//! Whether a merged pull request's change was reverted on its base branch, read from the base branch's
//! history with git (issue 34 item 5: a change that is reverted did not pay, however green it was).
//!
//! A revert is a commit on the base, after the merge and within the window, whose message says so in
//! one of the forms people and GitHub write:
//! - `git revert`: `This reverts commit <sha>.`, where the sha is one of the pull request's commits —
//!   its merge commit on the base, a squashed commit whose title ends `(#N)`, or a commit reachable from
//!   the pull request's head and not from the base just before the merge;
//! - GitHub's revert button: `Revert "<title>"` with `Reverts owner/repo#N` in the body, or a reverted
//!   title ending `(#N)`.
//!
//! Commit messages are other people's text: they are only matched here, never run or used as a path.
//! The work is bounded: git walks from the run's start, and at most [`MAX_COMMITS`] commits are read.

use std::collections::HashSet;
use std::path::Path;

use chrono::{DateTime, Utc};

use super::WorkspaceError;
use super::git::{git, git_probe};

/// The most commits read for one pull request's own commits, and for the reverts after it.
pub const MAX_COMMITS: usize = 1000;

/// A merged pull request, as the runner knows it.
#[derive(Debug, Clone)]
pub struct MergedPr<'a> {
    /// The pull request's head commit as last seen (`None`: the branch's head is asked).
    pub head: Option<&'a str>,
    /// The run's branch, for its head when none was recorded.
    pub branch: Option<&'a str>,
    /// GitHub: the pull request's number and `owner/name`, which GitHub's messages name. `None` on the
    /// local forge, whose numbers nobody writes in a commit message.
    pub github: Option<(&'a str, i64)>,
    /// When the run started: none of its commits, nor its merge, nor a revert of it is older.
    pub started_at: DateTime<Utc>,
    /// When the merge was first seen.
    pub merged_at: DateTime<Utc>,
    /// How long after the merge a revert still counts.
    pub window: chrono::Duration,
}

/// The commit that reverted a pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revert {
    pub sha: String,
    pub committed_at: DateTime<Utc>,
}

/// Brings `remote`'s `base` branch into `refs/remotes/<remote>/<base>` of the repository at `repo` (its
/// own checkout: nothing checked out moves) and returns the name to read it by, `<remote>/<base>`. Both
/// names come from the config; `--` keeps the remote from being read as an option.
pub fn fetch_base(repo: &Path, remote: &str, base: &str) -> Result<String, WorkspaceError> {
    super::check_branch_name(base)?;
    super::check_branch_name(remote)?;
    let refspec = format!("+refs/heads/{base}:refs/remotes/{remote}/{base}");
    git(repo, ["fetch", "--quiet", "--no-tags", "--", remote, refspec.as_str()])?;
    Ok(format!("{remote}/{base}"))
}

/// The commit on `base` (a branch name as configured, or `remote/branch`) that reverted `pr`'s change,
/// the oldest one if several did; `None` when none did within the window.
pub fn find_revert(repo: &Path, base: &str, pr: &MergedPr<'_>) -> Result<Option<Revert>, WorkspaceError> {
    super::check_branch_name(base)?;
    let head = match pr.head.filter(|h| is_sha(h)) {
        Some(h) => commit(repo, h)?,
        None => match pr.branch {
            Some(b) => super::branch_head(repo, b)?,
            None => None,
        },
    };
    let since = format!("--since={}", pr.started_at.timestamp());
    let until = format!("--until={}", (pr.merged_at + pr.window).timestamp());
    let max = format!("--max-count={MAX_COMMITS}");
    let merge = match &head {
        Some(h) => merge_of(repo, base, h)?,
        None => None,
    };
    // The pull request's own commits. Before a merge commit the base is its first parent; a fast-forward,
    // squash or rebase leaves no such commit, and the run's commits are those made since it started.
    let mut own: Vec<String> = Vec::new();
    if let Some(h) = &head {
        let out = match &merge {
            Some(m) => {
                own.push(m.merge.clone());
                let before = format!("^{}", m.base_before);
                git(repo, ["rev-list", max.as_str(), h.as_str(), before.as_str(), "--"])?
            }
            None => git(repo, ["rev-list", max.as_str(), since.as_str(), h.as_str(), "--"])?,
        };
        own.extend(out.lines().map(str::to_string));
    }
    // After the merge: not reachable from its merge commit (or the head), which also leaves out a
    // revert the agent made inside its own branch.
    let mut args = vec!["log".to_string(), "--format=%H%x1f%ct%x1f%B%x1e".into(), max, since, until];
    args.extend(["--reverse".into(), "--grep=^Revert".into(), base.to_string()]);
    if let Some(after) = merge.as_ref().map(|m| &m.merge).or(head.as_ref()) {
        args.push(format!("^{after}"));
    }
    args.push("--".into());
    let squash_mark = pr.github.map(|(_, n)| format!("(#{n})"));
    let mut candidates = Vec::new();
    for record in git(repo, &args)?.split('\x1e') {
        let mut fields = record.trim_start_matches('\n').splitn(3, '\x1f');
        let (Some(sha), Some(time), Some(message)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        let Some(committed_at) = time.parse().ok().and_then(|t| DateTime::from_timestamp(t, 0)) else {
            continue;
        };
        candidates.push((Revert { sha: sha.to_string(), committed_at }, message.to_string()));
    }
    // A squashed pull request is one commit on the base whose title ends `(#N)`.
    if let Some(mark) = &squash_mark {
        own.extend(squashed(repo, base, &pr.started_at, mark)?);
    }
    let own: HashSet<String> = own.into_iter().collect();
    Ok(candidates.into_iter().find(|(_, message)| reverts(message, &own, pr.github)).map(|(r, _)| r))
}

/// Whether the commit message `message` reverts one of `own` or, on GitHub, pull request `github`.
fn reverts(message: &str, own: &HashSet<String>, github: Option<(&str, i64)>) -> bool {
    let subject = message.lines().next().unwrap_or_default().trim();
    // A revert of a revert lands the change again; nor is a squashed pull request its own revert.
    if !subject.starts_with("Revert ") || subject.starts_with("Revert \"Revert ") {
        return false;
    }
    if let Some((_, n)) = github
        && subject.ends_with(&format!("(#{n})"))
        && !subject.ends_with(&format!("(#{n})\""))
    {
        return false;
    }
    for line in message.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("This reverts commit ") {
            let sha = rest.trim_end_matches('.').split(|c: char| !c.is_ascii_hexdigit()).next().unwrap_or("");
            if sha.len() >= 7 && own.iter().any(|o| o.starts_with(&sha.to_ascii_lowercase())) {
                return true;
            }
        }
        if let Some((slug, n)) = github
            && let Some(rest) = line.strip_prefix("Reverts ")
            && rest.trim().eq_ignore_ascii_case(&format!("{slug}#{n}"))
        {
            return true;
        }
    }
    github.is_some_and(|(_, n)| subject.contains(&format!("(#{n})\"")))
}

/// The merge commit that brought `head` onto `base`'s first-parent line, with the base just before it;
/// `None` when `head` is not on the base (squashed, rebased) or came by a fast-forward.
fn merge_of(repo: &Path, base: &str, head: &str) -> Result<Option<Merge>, WorkspaceError> {
    let range = format!("{head}..{base}");
    // The first-parent line from the base down to the first commit that has `head` behind it.
    let out = git(
        repo,
        ["rev-list", "--first-parent", "--ancestry-path", "--reverse", "--parents", range.as_str(), "--"],
    )?;
    let Some(first) = out.lines().next() else { return Ok(None) };
    let mut ids = first.split_whitespace();
    let (Some(merge), Some(parent)) = (ids.next(), ids.next()) else { return Ok(None) };
    Ok((parent != head).then(|| Merge { merge: merge.to_string(), base_before: parent.to_string() }))
}

struct Merge {
    merge: String,
    base_before: String,
}

/// The commits on `base` since the run started whose title ends `mark` (`(#N)`) and is no revert.
fn squashed(
    repo: &Path,
    base: &str,
    since: &DateTime<Utc>,
    mark: &str,
) -> Result<Vec<String>, WorkspaceError> {
    let since = format!("--since={}", since.timestamp());
    let max = format!("--max-count={MAX_COMMITS}");
    let out = git(repo, ["log", "--format=%H%x1f%s", max.as_str(), since.as_str(), base, "--"])?;
    Ok(out
        .lines()
        .filter_map(|l| l.split_once('\x1f'))
        .filter(|(_, s)| s.trim_end().ends_with(mark) && !s.starts_with("Revert "))
        .map(|(sha, _)| sha.to_string())
        .collect())
}

/// The full id of commit `sha` in `repo`, or `None` when the repository does not have it.
fn commit(repo: &Path, sha: &str) -> Result<Option<String>, WorkspaceError> {
    let spec = format!("{sha}^{{commit}}");
    Ok(git_probe(repo, ["rev-parse", "--verify", "--quiet", spec.as_str()])?.map(|s| s.trim().to_string()))
}

fn is_sha(s: &str) -> bool {
    (7..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests;
