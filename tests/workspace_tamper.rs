//! An agent that knows executor's source rewrites what it may write of its worktree's git link so that
//! executor's own git runs a program of its choosing, uncontained (issue 31, item 1), or forges a path
//! in the database so that executor deletes outside its directories (item 3). Each attacker here acts as
//! an agent in its worktree could: a shell script of the test's own that writes the worktree and the
//! worktree's git directory (never the repository's `config` or `hooks`). The program it plants writes a
//! marker outside the worktree; the marker must never appear, and a tampered worktree is kept, with the
//! change as the reason. Real git, real processes.

use std::path::{Path, PathBuf};
use std::process::Command;

use executor::domain::TaskGid;
use executor::workspace::{
    Removal, WorkspaceError, Worktree, add_detached, ensure_worktree, git_dirs, git_write_dirs, path_under,
    remove_if_safe, remove_scratch,
};

const BRANCH: &str = "executor/7-fix";

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.test", "-c", "commit.gpgsign=false"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The user's repository with a commit, executor's worktree root, and a directory outside both where
/// the attacker's program leaves its marker (the agent itself could not write there).
struct Lab {
    tmp: tempfile::TempDir,
    repo: PathBuf,
    root: PathBuf,
    marker: PathBuf,
}

fn lab() -> Lab {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "hello\n").unwrap();
    git(&repo, &["add", "README.md"]);
    git(&repo, &["commit", "-q", "-m", "initial"]);
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    Lab { marker: outside.join("ran"), root: tmp.path().join("worktrees"), repo, tmp }
}

impl Lab {
    /// A run's worktree, committed and clean: safe to remove before any attack.
    fn worktree(&self) -> Worktree {
        ensure_worktree(&self.repo, &self.root, &TaskGid::parse("7").unwrap(), 1, BRANCH, "main").unwrap()
    }

    /// Runs the attacker's script in `wt` as the agent would, with `$WT`, its git directory `$ADMIN`
    /// (which `.git` names), the common one `$COMMON`, and `$MARKER`. `$WT/evil.sh` is planted first: a
    /// program that leaves the marker when anything runs it.
    fn attack(&self, wt: &Path, script: &str) {
        let dot_git = std::fs::read_to_string(wt.join(".git")).unwrap();
        let admin = PathBuf::from(dot_git.trim().strip_prefix("gitdir: ").unwrap());
        let common = std::fs::canonicalize(self.repo.join(".git")).unwrap();
        let plant = r#"set -e
printf '#!/bin/sh\necho "evil.sh ran: $*" >>"%s"\n' "$MARKER" >"$WT/evil.sh"
chmod +x "$WT/evil.sh"
"#;
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("{plant}{script}"))
            .current_dir(wt)
            .env("WT", wt)
            .env("ADMIN", &admin)
            .env("COMMON", &common)
            .env("MARKER", &self.marker)
            .output()
            .unwrap();
        assert!(out.status.success(), "the attack itself failed: {}", String::from_utf8_lossy(&out.stderr));
        assert!(!self.marker.exists(), "the attack's own commands ran the program");
    }

    /// Removing the attacked worktree runs nothing of the agent's, deletes nothing, and says why.
    fn assert_kept_untouched(&self, wt: &Worktree, why: &str) {
        let removal = remove_if_safe(&self.repo, wt).unwrap();
        assert!(!self.marker.exists(), "executor's git ran the agent's program: {}", self.ran());
        let Removal::Kept { reason } = removal else {
            panic!("a tampered worktree was removed: {removal:?}")
        };
        assert!(reason.contains(why), "{reason}");
        assert!(wt.path.join("evil.sh").is_file(), "the worktree is kept for a human to look at");
    }

    fn ran(&self) -> String {
        std::fs::read_to_string(&self.marker).unwrap_or_default()
    }
}

/// A git directory of the agent's own inside the worktree: a copy of the repository's (which it may
/// read), with its own configuration.
const FAKE_GIT_DIR: &str = r#"cp -R "$COMMON" "$WT/.evil"
"#;

#[test]
fn a_swapped_git_link_with_an_fsmonitor_is_not_run_and_the_worktree_is_kept() {
    let lab = lab();
    let wt = lab.worktree();
    lab.attack(
        &wt.path,
        &format!(
            r#"{FAKE_GIT_DIR}git config -f "$WT/.evil/config" core.fsmonitor "$WT/evil.sh"
printf 'gitdir: %s\n' "$WT/.evil" >"$WT/.git"
"#
        ),
    );
    lab.assert_kept_untouched(&wt, ".git points at");
    // Nor does a next worker start in it.
    let again = ensure_worktree(&lab.repo, &lab.root, &TaskGid::parse("7").unwrap(), 1, BRANCH, "main");
    assert!(matches!(again, Err(WorkspaceError::Tampered { .. })), "{again:?}");
    assert!(!lab.marker.exists(), "{}", lab.ran());
}

#[test]
fn a_rewritten_commondir_is_not_followed() {
    let lab = lab();
    let wt = lab.worktree();
    lab.attack(
        &wt.path,
        &format!(
            r#"{FAKE_GIT_DIR}git config -f "$WT/.evil/config" core.fsmonitor "$WT/evil.sh"
printf '%s\n' "$WT/.evil" >"$ADMIN/commondir"
"#
        ),
    );
    lab.assert_kept_untouched(&wt, "commondir points at");
}

#[test]
fn a_config_worktree_with_an_fsmonitor_is_refused_where_the_repository_reads_it() {
    let lab = lab();
    // The user's choice: per-worktree configuration is read.
    git(&lab.repo, &["config", "core.repositoryformatversion", "1"]);
    git(&lab.repo, &["config", "extensions.worktreeConfig", "true"]);
    let wt = lab.worktree();
    // What `git sparse-checkout` writes there is no reason to distrust the worktree.
    lab.attack(&wt.path, r#"git config -f "$ADMIN/config.worktree" core.sparseCheckout false"#);
    assert!(git_write_dirs(&lab.repo, &wt.path).is_ok());
    lab.attack(&wt.path, r#"git config -f "$ADMIN/config.worktree" core.fsmonitor "$WT/evil.sh""#);
    lab.assert_kept_untouched(&wt, "config.worktree sets \"core.fsmonitor\"");
}

#[test]
fn a_gitattributes_filter_defined_only_in_the_agents_config_is_not_run() {
    let lab = lab();
    let wt = lab.worktree();
    // A same-size change: git must read the file (through its clean filter) to tell it changed.
    lab.attack(
        &wt.path,
        &format!(
            r#"{FAKE_GIT_DIR}git config -f "$WT/.evil/config" filter.evil.clean "$WT/evil.sh"
printf '%s\n' "$WT/.evil" >"$ADMIN/commondir"
echo '* filter=evil' >"$WT/.gitattributes"
printf 'HELLO\n' >"$WT/README.md"
"#
        ),
    );
    lab.assert_kept_untouched(&wt, "tampered");
}

#[test]
fn a_submodule_whose_git_dir_has_an_fsmonitor_is_not_looked_into() {
    let lab = lab();
    let wt = lab.worktree();
    // Through the worktree's real link, as an agent commits; the fsmonitor is set last.
    lab.attack(
        &wt.path,
        r#"id="-c user.name=a -c user.email=a@a"
git init -q "$WT/sub"
git -C "$WT/sub" $id commit -q --allow-empty -m sub
git update-index --add --cacheinfo "160000,$(git -C "$WT/sub" rev-parse HEAD),sub"
git $id commit -q -m "add sub"
git -C "$WT/sub" config core.fsmonitor "$WT/evil.sh"
"#,
    );
    lab.assert_kept_untouched(&wt, "submodule \"sub\" is checked out");
}

#[test]
fn no_writable_git_directories_are_derived_from_a_tampered_worktree() {
    let lab = lab();
    let wt = lab.worktree();
    let common = std::fs::canonicalize(lab.repo.join(".git")).unwrap();
    let honest = git_write_dirs(&lab.repo, &wt.path).unwrap();
    assert_eq!(&honest[1..], &[common.join("objects"), common.join("refs"), common.join("logs")]);
    assert!(honest[0].starts_with(common.join("worktrees")), "{honest:?}");

    // The user's other project, which the agent may read but not write: its link points there, and the
    // next worker would be given that repository's objects and refs (its `config` and `hooks` too, for
    // a link that names it as the worktree's only git directory).
    let other = lab.tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    git(&other, &["init", "-q", "-b", "main"]);
    git(&other, &["commit", "-q", "--allow-empty", "-m", "theirs"]);
    let other_git = std::fs::canonicalize(other.join(".git")).unwrap();
    let named = |dirs: &Result<Vec<PathBuf>, WorkspaceError>| {
        dirs.as_ref().is_ok_and(|d| d.iter().any(|p| p.starts_with(&other_git)))
    };
    lab.attack(
        &wt.path,
        &format!(r#"printf '%s\n' {:?} >"$ADMIN/commondir""#, other_git.display().to_string()),
    );
    for dirs in [git_write_dirs(&lab.repo, &wt.path), git_dirs(&lab.repo, &wt.path)] {
        assert!(!named(&dirs), "derived from the agent's commondir: {dirs:?}");
        assert!(matches!(dirs, Err(WorkspaceError::Tampered { .. })), "{dirs:?}");
    }
    lab.attack(
        &wt.path,
        &format!(r#"printf 'gitdir: %s\n' {:?} >"$WT/.git""#, other_git.display().to_string()),
    );
    for dirs in [git_write_dirs(&lab.repo, &wt.path), git_dirs(&lab.repo, &wt.path)] {
        assert!(!named(&dirs), "derived from the agent's .git: {dirs:?}");
        assert!(matches!(dirs, Err(WorkspaceError::Tampered { .. })), "{dirs:?}");
    }
}

#[test]
fn a_ci_checkout_whose_git_link_was_swapped_is_deleted_without_running_git_through_it() {
    let lab = lab();
    let sha = git(&lab.repo, &["rev-parse", "HEAD"]);
    let scratch = lab.tmp.path().join("ci").join("pr1-abc").join("work");
    std::fs::create_dir_all(scratch.parent().unwrap()).unwrap();
    add_detached(&lab.repo, &scratch, &sha).unwrap();
    // The CI command (code the agent committed) rewrites both ends of the link.
    lab.attack(
        &scratch,
        &format!(
            r#"{FAKE_GIT_DIR}git config -f "$WT/.evil/config" core.fsmonitor "$WT/evil.sh"
git config -f "$WT/.evil/config" filter.evil.clean "$WT/evil.sh"
echo '* filter=evil' >"$WT/.gitattributes"
printf '%s\n' "$WT/.evil" >"$ADMIN/commondir"
printf 'gitdir: %s\n' "$WT/.evil" >"$WT/.git"
"#
        ),
    );
    remove_scratch(&lab.repo, &scratch).unwrap();
    assert!(!lab.marker.exists(), "{}", lab.ran());
    assert!(!scratch.exists(), "the checkout is gone");
    assert!(!git(&lab.repo, &["worktree", "list", "--porcelain"]).contains("pr1-abc"));
    // The next CI run checks out there again.
    add_detached(&lab.repo, &scratch, &sha).unwrap();
    assert!(scratch.join("README.md").is_file());
    assert!(!lab.marker.exists(), "{}", lab.ran());
}

#[test]
fn paths_from_the_database_are_used_only_under_their_root() {
    let lab = lab();
    let wt = lab.worktree();
    let root = std::fs::canonicalize(&lab.root).unwrap();
    assert_eq!(path_under(&lab.root, &wt.path).unwrap(), root.join("7-1"));
    assert_eq!(path_under(&lab.root, &lab.root.join("not-yet")).unwrap(), root.join("not-yet"));
    let outside = lab.tmp.path().join("outside");
    std::os::unix::fs::symlink(&outside, lab.root.join("link")).unwrap();
    std::os::unix::fs::symlink(outside.join("not-yet"), lab.root.join("dangling")).unwrap();
    for bad in [
        lab.root.join("link"),
        lab.root.join("link").join("x"),
        lab.root.join("dangling"),
        lab.root.join("dangling").join("x"),
        lab.root.join("7-1").join("..").join(".."),
        lab.root.join("gone").join("..").join("..").join("outside"),
        lab.root.clone(),
        outside,
        PathBuf::from("7-1"),
    ] {
        let refused = path_under(&lab.root, &bad);
        assert!(matches!(refused, Err(WorkspaceError::OutsideRoot { .. })), "{}: {refused:?}", bad.display());
    }
}

/// Item 3: a check row forged in the database, whose directory is the user's (`$HOME/victim`): the
/// local forge's next poll neither deletes nor writes there.
#[tokio::test]
async fn a_forged_ci_directory_outside_the_ci_root_is_not_removed() {
    use executor::domain::{Actor, QueueStatus};
    use executor::forge::LocalForge;
    use executor::store::{NewTask, Store};
    let lab = lab();
    let store =
        Store::open(&format!("sqlite://{}", lab.tmp.path().join("executor.db").display())).await.unwrap();
    store.migrate().await.unwrap();
    let gid = TaskGid::parse("7").unwrap();
    store
        .upsert_task(&gid, &NewTask { description: Some("work".into()), ..Default::default() }, Actor::Cli)
        .await
        .unwrap();
    store.set_task_status(&gid, QueueStatus::AwaitingGo, Actor::Cli, None).await.unwrap();
    store.set_task_status(&gid, QueueStatus::Approved, Actor::Cli, None).await.unwrap();
    let run = store.create_run_for_task(&gid, Actor::Runner).await.unwrap().unwrap();
    let pr = store.open_local_pr(run.id, Some("app"), "main", "main").await.unwrap();
    let ci_root = lab.tmp.path().join("data").join("ci");
    std::fs::create_dir_all(&ci_root).unwrap();
    let forge = LocalForge {
        store: store.clone(),
        repo_name: "app".into(),
        repo: toml::from_str(&format!(
            "path = {:?}\nci_command = [\"true\"]\n",
            lab.repo.display().to_string()
        ))
        .unwrap(),
        ci_root: ci_root.clone(),
        host: "here".into(),
        ci_sandbox: None,
    };
    // The victim looks like a finished check directory, and like a check abandoned while starting.
    let victim = lab.tmp.path().join("home").join("victim");
    std::fs::create_dir_all(victim.join("work")).unwrap();
    std::fs::write(victim.join("work").join("precious"), "the user's\n").unwrap();
    std::fs::write(victim.join("exit"), "0\n").unwrap();
    let sha = git(&lab.repo, &["rev-parse", "HEAD"]);
    let forged = victim.display().to_string();
    store.start_local_check(pr.id, &sha, "ci", &forged, "here").await.unwrap();
    // The same directory reached through `..` from inside the CI root.
    let dotted = ci_root.join("..").join("..").join("home").join("victim").display().to_string();
    store.start_local_check(pr.id, &sha, "ci", &dotted, "here").await.unwrap();

    forge.poll_ci().await.unwrap();
    assert!(victim.join("work").join("precious").is_file(), "executor deleted outside its CI directory");
    std::fs::remove_file(victim.join("exit")).unwrap();
    forge.poll_ci().await.unwrap();
    assert!(victim.join("work").join("precious").is_file());
    assert!(!victim.join("lock").exists(), "nor wrote there");
}
