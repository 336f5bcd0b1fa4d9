//! Agents write only where they work: a `command` agent that tries to write the main repository (its
//! files, `.git/hooks`, `.git/config`), `~/.ssh/authorized_keys` in a scratch HOME and a file in /tmp is
//! refused by the kernel (Landlock) each time, sees EACCES in its own output (and so the work log),
//! while its commit in the worktree succeeds. Linux only; skipped with a note where the kernel has no
//! Landlock.

#![cfg(target_os = "linux")]

#[path = "worker_support/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use executor::config::SandboxMode;
use executor::domain::WorkerKind;
use executor::worker::sandbox::{self, Support};
use executor::worker::{EndReason, Sandbox as Contained, WorkerSpec};
use executor::workspace;

fn landlock_here() -> bool {
    match sandbox::support() {
        Support::Landlock { .. } => true,
        Support::Missing(why) => {
            eprintln!("skipped: {why}");
            false
        }
    }
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Every file under `dir` with its bytes.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                todo.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap_or_default());
            }
        }
    }
    out
}

/// A main repository with a README, the worker's linked worktree on a branch, a scratch HOME with an
/// `authorized_keys`, and a path in /tmp outside everything.
struct Setup {
    sb: common::Sandbox,
    main: PathBuf,
    home: PathBuf,
    outside: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let sb = common::Sandbox::new();
        let main = sb.path("main");
        std::fs::create_dir_all(&main).unwrap();
        git(&main, &["init", "-q", "-b", "main"]);
        std::fs::write(main.join("README.md"), "# The user's project\n").unwrap();
        git(&main, &["add", "README.md"]);
        git(&main, &["-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qm", "initial"]);
        git(&main, &["worktree", "add", "-q", "-b", "executor/feature", sb.worktree.to_str().unwrap()]);
        let home = sb.path("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/authorized_keys"), "ssh-ed25519 AAAA the-user\n").unwrap();
        let outside = std::env::temp_dir().join(format!("outside-{}-{}", std::process::id(), nanos()));
        Setup { sb, main, home, outside }
    }

    fn spec(&self, contained: bool) -> WorkerSpec {
        let env = [
            ("HOME", self.home.display().to_string()),
            ("FAKE_OUTSIDE", self.outside.display().to_string()),
            ("FAKE_SCRATCH_HOME", "1".to_string()),
        ];
        let mut spec = self.sb.spec(command("escape.sh"), WorkerKind::Queued, &env);
        let git_dirs = workspace::git_write_dirs(&self.main, &self.sb.worktree).unwrap();
        spec.sandbox = contained.then(|| {
            Contained::for_mode(
                SandboxMode::Landlock,
                std::iter::once(self.sb.worktree.clone()).chain(git_dirs),
            )
            .unwrap()
        });
        spec
    }
}

fn nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}

#[tokio::test]
async fn a_contained_worker_commits_in_its_worktree_and_is_refused_everywhere_else() {
    if !landlock_here() {
        return;
    }
    let s = Setup::new();
    let main_before = snapshot(&s.main);
    let config_before = std::fs::read(s.main.join(".git/config")).unwrap();
    let (outcome, _) = run(s.spec(true)).await;
    let outcome = outcome.unwrap();
    assert_eq!(outcome.reason, EndReason::Finished, "{outcome:?}");
    let log = read(&outcome.log_path);

    for name in ["main-readme", "main-file", "main-hook", "main-config", "authorized-keys", "outside"] {
        assert!(log.contains(&format!("REFUSED {name}")), "{name} was not refused:\n{log}");
    }
    for name in ["tmpdir", "dev-null"] {
        assert!(log.contains(&format!("WROTE {name}")), "{name} must stay writable:\n{log}");
    }
    assert!(log.contains("Permission denied"), "the agent sees EACCES, and the log shows it:\n{log}");
    assert!(log.contains("COMMITTED"), "the commit in the worktree works:\n{log}");
    assert_eq!(git(&s.sb.worktree, &["log", "-1", "--format=%s"]), "Work");
    assert_eq!(git(&s.main, &["log", "-1", "--format=%s", "executor/feature"]), "Work");

    // Of the main repository only what the commit needs changed: objects, the branch's ref and logs,
    // the worktree's own git directory.
    assert_eq!(std::fs::read(s.main.join(".git/config")).unwrap(), config_before);
    assert!(!s.main.join(".git/hooks/post-commit").exists());
    for (path, bytes) in &main_before {
        let rel = path.strip_prefix(&s.main).unwrap();
        let git_write =
            [".git/objects", ".git/refs", ".git/logs", ".git/worktrees"].iter().any(|p| rel.starts_with(p));
        if !git_write {
            assert_eq!(&std::fs::read(path).unwrap(), bytes, "{} changed", rel.display());
        }
    }
    let new_files: Vec<_> = snapshot(&s.main)
        .into_keys()
        .filter(|p| !main_before.contains_key(p))
        .filter(|p| {
            let rel = p.strip_prefix(&s.main).unwrap();
            ![".git/objects", ".git/refs", ".git/logs", ".git/worktrees"].iter().any(|g| rel.starts_with(g))
        })
        .collect();
    assert!(new_files.is_empty(), "files created in the main repository: {new_files:?}");
    assert_eq!(read(&s.home.join(".ssh/authorized_keys")), "ssh-ed25519 AAAA the-user\n");
    assert!(!s.outside.exists());
}

/// The same agent without the sandbox writes everywhere: the refusals above are the kernel's work, not
/// the script's.
#[tokio::test]
async fn the_same_agent_uncontained_writes_outside() {
    let s = Setup::new();
    let (outcome, _) = run(s.spec(false)).await;
    let log = read(&outcome.unwrap().log_path);
    for name in ["main-readme", "main-config", "authorized-keys", "outside"] {
        assert!(log.contains(&format!("WROTE {name}")), "{name}:\n{log}");
    }
    assert!(read(&s.main.join("README.md")).contains("pwned"));
    let _ = std::fs::remove_file(&s.outside);
}

#[test]
fn the_sandbox_setting_is_never_silently_nothing() {
    assert!(!sandbox::enabled(SandboxMode::Off).unwrap());
    assert!(Contained::for_mode(SandboxMode::Off, vec![]).is_none());
    match sandbox::support() {
        Support::Landlock { abi } => {
            assert!(abi >= 1);
            assert!(sandbox::enabled(SandboxMode::Landlock).unwrap());
            assert!(sandbox::enabled(SandboxMode::Auto).unwrap());
            assert!(Contained::for_mode(SandboxMode::Auto, vec![]).is_some());
            let (ok, text) = sandbox::describe(SandboxMode::Auto);
            assert!(ok && text.contains(&format!("Landlock ABI {abi}")), "{text}");
        }
        Support::Missing(_) => {
            let err = sandbox::enabled(SandboxMode::Landlock).unwrap_err().to_string();
            assert!(err.contains("worker.sandbox = \"off\""), "names the fix: {err}");
            assert!(!sandbox::enabled(SandboxMode::Auto).unwrap());
            let (ok, text) = sandbox::describe(SandboxMode::Auto);
            assert!(!ok && text.contains("uncontained"), "{text}");
        }
    }
}
