//! The task gid of a GitLab issue, `gl_{project_id}-{iid}`: made by the GitLab issues intake, read
//! back by its write-back. The issue's own `project_id` (a number, unique within the one instance
//! `[gitlab] url` names) and its `iid` (the number shown as `#iid`). The project's path cannot be the
//! gid: '/' is not allowed in a task gid, and with '.' for it `a.b/c` and `a/b.c` would be one.

/// The gid of issue `iid` of project `project_id`.
pub fn issue_gid(project_id: u64, iid: u64) -> String {
    format!("gl_{project_id}-{iid}")
}

/// The project id and iid of a gid made by [`issue_gid`], if it is one.
pub fn parse_issue_gid(gid: &str) -> Option<(u64, u64)> {
    let (project, iid) = gid.strip_prefix("gl_")?.split_once('-')?;
    let number = |text: &str| {
        (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())).then(|| text.parse().ok()).flatten()
    };
    Some((number(project)?, number(iid)?))
}
