//! What an agent may read: everything but some hidden paths. Landlock only grants (it has no "deny
//! beneath"), so "all of `/` except `~/.ssh` and executor's data directory" becomes a list of grants:
//! at every directory on the way from `/` to a hidden path, each entry that is neither on such a way
//! nor hidden itself.
//!
//! A grant on a symbolic link is a grant on what it points to (a rule holds an inode), so a link
//! whose target is a hidden path, lies beneath one, or leads to a directory on the way to one is not
//! granted: it would open what it points into. What appears later in a directory on the way (a file
//! created in `~` after the agent started) is not readable; what appears beneath a granted entry is.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// The paths to grant read access beneath so that everything but `hidden` is readable. `[/]` when
/// nothing is hidden.
pub(crate) fn read_grants(hidden: &[PathBuf]) -> Vec<PathBuf> {
    let hidden = outermost(hidden.iter().map(|p| resolved(p)).collect());
    if hidden.is_empty() {
        return vec![PathBuf::from("/")];
    }
    let on_the_way: BTreeSet<PathBuf> =
        hidden.iter().flat_map(|h| h.ancestors().skip(1).map(Path::to_path_buf)).collect();
    let touches_hidden = |p: &Path| on_the_way.contains(p) || hidden.iter().any(|h| p.starts_with(h));
    let mut grants = Vec::new();
    for dir in &on_the_way {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if touches_hidden(&path) {
                continue;
            }
            let is_link = entry.file_type().is_ok_and(|t| t.is_symlink());
            if is_link {
                match std::fs::canonicalize(&path) {
                    Ok(target) if !touches_hidden(&target) => {}
                    _ => continue, // dangling, or into what is hidden
                }
            }
            grants.push(path);
        }
    }
    grants
}

/// `path` absolute with its symbolic links resolved as far as it exists: a hidden path is an inode the
/// walk must not grant, whatever name leads to it. The part that does not exist yet is kept as named.
pub(crate) fn resolved(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut missing = Vec::new();
    let mut existing = absolute.as_path();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            return missing.iter().rev().fold(real, |p: PathBuf, part| p.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_os_string());
                existing = parent;
            }
            _ => return lexical(&absolute),
        }
    }
}

/// `..` and `.` taken away by the letter, for a path none of which exists.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The hidden paths that no other hidden path contains (one beneath another is hidden already), and
/// never `/` itself, which would leave nothing to read.
fn outermost(mut paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths.retain(|p| p.parent().is_some());
    paths.sort();
    paths.dedup();
    let all = paths.clone();
    paths.retain(|p| !all.iter().any(|q| q != p && p.starts_with(q)));
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    fn covered(grants: &[PathBuf], p: &Path) -> bool {
        let p = resolved(p);
        grants.iter().any(|g| p.starts_with(resolved(g)))
    }

    #[test]
    fn everything_but_the_hidden_is_covered() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for d in ["home/.ssh", "home/src/app", "home/.config/gh", "home/.config/other", "data/logs"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("home/.bashrc"), "x").unwrap();
        std::fs::write(root.join("home/.ssh/id_ed25519"), "key").unwrap();
        let hidden = [root.join("home/.ssh"), root.join("home/.config/gh"), root.join("data")];
        let grants = read_grants(&hidden);
        for yes in ["home/.bashrc", "home/src/app", "home/.config/other"] {
            assert!(covered(&grants, &root.join(yes)), "{yes} must stay readable: {grants:?}");
        }
        for no in ["home/.ssh/id_ed25519", "home/.config/gh", "data/logs", "home", "home/.config"] {
            assert!(!covered(&grants, &root.join(no)), "{no} must not be granted: {grants:?}");
        }
        assert!(covered(&grants, Path::new("/usr")), "the system stays readable");
    }

    #[test]
    fn a_link_into_a_hidden_path_or_its_way_is_not_granted() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("home/.ssh")).unwrap();
        std::fs::create_dir_all(root.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(root.join("home/.ssh"), root.join("home/keys")).unwrap();
        std::os::unix::fs::symlink(root.join("home"), root.join("home/loop")).unwrap();
        std::os::unix::fs::symlink(root.join("elsewhere"), root.join("home/fine")).unwrap();
        let grants = read_grants(&[root.join("home/.ssh")]);
        assert!(!grants.contains(&root.join("home/keys")), "{grants:?}");
        assert!(!grants.contains(&root.join("home/loop")), "{grants:?}");
        assert!(grants.contains(&root.join("home/fine")), "{grants:?}");
    }

    #[test]
    fn hidden_paths_are_resolved_and_nested_ones_merge() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("data/worktrees")).unwrap();
        std::os::unix::fs::symlink(root.join("data"), root.join("link")).unwrap();
        let hidden = outermost(
            [root.join("link/worktrees"), root.join("data"), root.join("data/not-yet/x")]
                .iter()
                .map(|p| resolved(p))
                .collect(),
        );
        assert_eq!(hidden, vec![resolved(&root.join("data"))]);
        assert!(read_grants(&[]).contains(&PathBuf::from("/")));
        assert_eq!(resolved(Path::new("/no-such-dir/../etc/x")), PathBuf::from("/etc/x"));
    }
}
