//! Opt-in: drives a real `claude` or `codex` binary when one is on PATH and
//! `EXECUTOR_REAL_AGENT_TESTS=1`. Costs real money; skipped (with a message) otherwise.

#[path = "worker_support/mod.rs"]
mod common;

use std::io::Write;
use std::time::Duration;

use common::*;
use executor::domain::WorkerKind;
use executor::worker::{AgentConfig, ClaudeConfig, CodexConfig, EndReason};

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

fn enabled(program: &str) -> bool {
    if std::env::var("EXECUTOR_REAL_AGENT_TESTS").as_deref() != Ok("1") {
        let _ =
            writeln!(std::io::stderr(), "SKIPPED: set EXECUTOR_REAL_AGENT_TESTS=1 to drive a real {program}");
        return false;
    }
    if !on_path(program) {
        let _ = writeln!(std::io::stderr(), "SKIPPED: no {program} on PATH");
        return false;
    }
    true
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
async fn real_claude() {
    if enabled("claude") {
        let agent = AgentConfig::Claude(ClaudeConfig { permission_mode: None, ..Default::default() });
        drive(agent, &["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "IS_SANDBOX"]).await;
    }
}

#[tokio::test]
async fn real_codex() {
    if enabled("codex") {
        drive(AgentConfig::Codex(CodexConfig::default()), &["OPENAI_API_KEY", "CODEX_HOME"]).await;
    }
}
