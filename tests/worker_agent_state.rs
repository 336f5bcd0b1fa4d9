//! Issue 31, item 4: Claude Code's state is a private directory of the run, made anew from the user's
//! credentials for each worker. What one worker leaves there (a hook, standing instructions) is gone for
//! the next, and the user's own `~/.claude` is out of reach. A test binary of its own: it points this
//! process's HOME (where executor reads the user's credentials from) at a scratch home.

#![cfg(target_os = "linux")]

#[path = "worker_support/mod.rs"]
mod common;

use common::*;
use executor::config::SandboxMode;
use executor::domain::WorkerKind;
use executor::worker::Sandbox as Contained;
use executor::worker::sandbox::{self, Support};

#[tokio::test]
async fn an_agent_s_settings_and_hooks_never_outlive_its_worker_nor_reach_the_user() {
    if let Support::Missing(why) = sandbox::support() {
        eprintln!("skipped: {why}");
        return;
    }
    let sb = Sandbox::new();
    let home = sb.path("home");
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::write(home.join(".claude/.credentials.json"), r#"{"claudeAiOauth": {}}"#).unwrap();
    // SAFETY: the only test of this binary, before any thread of its own reads the environment.
    unsafe { std::env::set_var("HOME", &home) };
    let state = sb.path("data/agents/1207/run-42/claude");
    let spec = || {
        let env = [("HOME", home.display().to_string()), ("CLAUDE_CONFIG_DIR", state.display().to_string())];
        let mut spec = sb.spec(claude("claude_state.sh"), WorkerKind::Queued, &env);
        spec.sandbox = Contained::for_mode(SandboxMode::Landlock, [sb.worktree.clone()]);
        spec
    };
    let first = read(&run(spec()).await.0.unwrap().log_path);
    let second = read(&run(spec()).await.0.unwrap().log_path);
    assert!(first.contains("CLEAN") && first.contains("SEEDED"), "{first}");
    assert!(first.contains(&format!("STATE {}", state.display())), "{first}");
    assert!(first.contains("REFUSED home-settings"), "{first}");
    assert!(second.contains("CLEAN") && second.contains("SEEDED"), "the hook outlived its worker:\n{second}");
    assert!(!home.join(".claude/settings.json").exists(), "the user's own settings were written");
}
