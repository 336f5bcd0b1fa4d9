//! Opt-in: drives a real `claude` or `codex` binary on PATH. Costs real money and needs the network, so
//! the tests are ignored (shown as such) unless asked for:
//! `cargo test --test worker_real_agent -- --ignored`. Asked for without the program, they fail.

#[path = "worker_support/mod.rs"]
mod common;

use std::time::Duration;

use common::*;
use executor::domain::WorkerKind;
use executor::worker::{AgentConfig, ClaudeConfig, CodexConfig, EndReason};

/// The program must be there: a test that was asked for and cannot run fails rather than passes.
fn require(program: &str) {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()));
    assert!(on_path, "no {program} on PATH: install it to run this test");
}

async fn drive(agent: AgentConfig, pass: &[&str]) {
    let sb = Sandbox::new();
    sb.git_init();
    let mut spec = sb.spec(agent, WorkerKind::Queued, &[]);
    spec.prompt = "Reply with the single word: ready. Do not use any tools.".into();
    spec.max_turns = Some(2);
    spec.env.pass = pass.iter().map(|s| s.to_string()).collect();
    spec.timeouts.idle = Duration::from_secs(120);
    spec.timeouts.hard = Duration::from_secs(300);
    let (o, _) = run(spec).await;
    let o = o.unwrap();
    eprintln!("{}", read(&o.log_path));
    assert_eq!(o.reason, EndReason::Finished, "{o:?}");
    assert!(o.session_id.is_some());
    assert!(o.tokens.output > 0);
}

#[tokio::test]
#[ignore = "drives the real claude CLI (costs money): cargo test --test worker_real_agent -- --ignored"]
async fn real_claude() {
    require("claude");
    let agent = AgentConfig::Claude(ClaudeConfig { permission_mode: None, ..Default::default() });
    drive(agent, &["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "IS_SANDBOX"]).await;
}

#[tokio::test]
#[ignore = "drives the real codex CLI (costs money): cargo test --test worker_real_agent -- --ignored"]
async fn real_codex() {
    require("codex");
    drive(AgentConfig::Codex(CodexConfig::default()), &["OPENAI_API_KEY", "CODEX_HOME"]).await;
}

/// Item 6 with the real Claude Code: contained by Landlock, it still works and commits in its worktree,
/// and its attempts to write the main repository, `~/.ssh/authorized_keys` and /tmp are refused. Claude
/// keeps its state in the real HOME (`~/.claude`, writable to it), so the refused key file is one this
/// test plants in a directory of its own, outside the sandbox.
#[cfg(target_os = "linux")]
#[tokio::test]
#[ignore = "drives the real claude CLI (costs money): cargo test --test worker_real_agent -- --ignored"]
async fn real_claude_contained() {
    use executor::config::SandboxMode;
    use executor::worker::Sandbox as Contained;
    require("claude");
    let sb = Sandbox::new();
    let main = sb.path("main");
    std::fs::create_dir_all(&main).unwrap();
    let git = |dir: &std::path::Path, args: &[&str]| {
        assert!(std::process::Command::new("git").arg("-C").arg(dir).args(args).status().unwrap().success())
    };
    git(&main, &["init", "-q", "-b", "main"]);
    std::fs::write(main.join("README.md"), "# project\n").unwrap();
    git(&main, &["add", "README.md"]);
    git(&main, &["-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qm", "initial"]);
    git(&main, &["worktree", "add", "-q", "-b", "feature", sb.worktree.to_str().unwrap()]);
    let keys = sb.path("ssh/authorized_keys");
    std::fs::create_dir_all(keys.parent().unwrap()).unwrap();
    std::fs::write(&keys, "original\n").unwrap();
    let outside = std::env::temp_dir().join(format!("outside-claude-{}", std::process::id()));
    let agent = AgentConfig::Claude(ClaudeConfig::default());
    let mut spec = sb.spec(agent, WorkerKind::Queued, &[]);
    spec.prompt = format!(
        "Run exactly these shell commands with the Bash tool, one at a time, and report each result:\n\
         1. echo pwned >> {readme}\n2. echo key >> {keys}\n3. echo x > {outside}\n\
         4. echo work > work.txt && git add work.txt && git -c user.name=a -c user.email=a@a commit -m work",
        readme = main.join("README.md").display(),
        keys = keys.display(),
        outside = outside.display(),
    );
    spec.max_turns = Some(12);
    spec.env.pass = ["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "IS_SANDBOX"].map(String::from).to_vec();
    spec.timeouts.idle = Duration::from_secs(180);
    spec.timeouts.hard = Duration::from_secs(600);
    let writable = std::iter::once(sb.worktree.clone())
        .chain(executor::workspace::git_write_dirs(&main, &sb.worktree).unwrap());
    spec.sandbox = Contained::for_mode(SandboxMode::Landlock, writable);
    let (o, _) = run(spec).await;
    let o = o.unwrap();
    let log = read(&o.log_path);
    eprintln!("{log}");
    assert_eq!(o.reason, EndReason::Finished, "{o:?}");
    assert_eq!(read(&main.join("README.md")), "# project\n");
    assert_eq!(read(&keys), "original\n");
    assert!(!outside.exists());
    assert!(log.contains("Permission denied"), "the refusals reach the log");
    let head = std::process::Command::new("git")
        .args(["log", "-1", "--format=%s"])
        .current_dir(&sb.worktree)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&head.stdout).trim(), "work", "the commit in the worktree works");
}
