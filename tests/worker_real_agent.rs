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
