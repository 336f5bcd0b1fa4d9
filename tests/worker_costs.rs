//! What a worker spent is known while it runs, not only when its agent ends: a worker killed mid-turn
//! is recorded with its spend, and a cap stops a running worker within one model request. Real
//! processes: the fake agents print Claude Code's stream-json (with its partial messages) and Codex's
//! JSONL, and the fake Codex writes its session file as the real one does.

#[path = "worker_support/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use executor::domain::WorkerKind;
use executor::worker::{EndReason, Tokens, WorkerSpec};

const THREAD: &str = "0199a213-81c0-7800-8aa1-bbab2a035a53";

/// Default prices, dollars per million: $3 in, $15 out, $0.30 cache read, $3.75 cache write.
fn codex_usd(t: &Tokens) -> f64 {
    ((t.input - t.cache_read) as f64 * 3.0 + t.output as f64 * 15.0 + t.cache_read as f64 * 0.3) / 1e6
}

fn codex_spec(sb: &Sandbox, env: &[(&str, String)]) -> WorkerSpec {
    let mut env = env.to_vec();
    env.push(("CODEX_HOME", sb.path("codex-home").display().to_string()));
    sb.spec(codex("codex.sh"), WorkerKind::Queued, &env)
}

fn session_files(codex_home: &Path) -> Vec<PathBuf> {
    let out = std::process::Command::new("find")
        .arg(codex_home.join("sessions"))
        .args(["-name", "rollout-*.jsonl"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).lines().map(PathBuf::from).collect()
}

/// The thread's total in the last `token_count` event of its session file: what Codex itself counted.
fn last_total(file: &Path) -> Tokens {
    let text = read(file);
    let line = text.lines().rev().find(|l| l.contains("\"token_count\"")).expect("a token count");
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    let t = &v["payload"]["info"]["total_token_usage"];
    let n = |k: &str| t[k].as_u64().unwrap();
    Tokens {
        input: n("input_tokens"),
        output: n("output_tokens"),
        cache_read: n("cached_input_tokens"),
        cache_creation: 0,
    }
}

#[tokio::test]
async fn a_codex_worker_killed_mid_turn_is_recorded_with_what_it_spent() {
    let sb = Sandbox::new();
    let mut spec = codex_spec(&sb, &[("FAKE_ENDLESS_TURN", "0.2".into())]);
    spec.timeouts.idle = Duration::from_secs(10);
    spec.timeouts.hard = Duration::from_millis(1500);
    let (o, _) = run(spec).await;
    let o = o.unwrap();
    assert_eq!(o.reason, EndReason::HardTimeout, "{o:?}");
    let files = session_files(&sb.path("codex-home"));
    assert_eq!(files.len(), 1, "{files:?}");
    // No turn ended, so stdout reported nothing: every token comes from the session file, to the last.
    let codex_total = last_total(&files[0]);
    assert!(codex_total.input >= 1200, "two requests at least: {codex_total:?}");
    assert_eq!(o.tokens, codex_total);
    let cost = o.cost_usd.expect("a cost");
    assert!((cost - codex_usd(&codex_total)).abs() < 1e-9 && o.cost_estimated, "{cost}");
    assert!(read(&o.log_path).contains("following the agent's session file"));
}

#[tokio::test]
async fn the_cap_stops_a_codex_worker_mid_turn_within_one_request() {
    let sb = Sandbox::new();
    // A request a second: 500 fresh + 100 cached in, 100 out = $0.00303.
    let mut spec = codex_spec(&sb, &[("FAKE_ENDLESS_TURN", "1".into())]);
    spec.timeouts.idle = Duration::from_secs(10);
    spec.timeouts.hard = Duration::from_secs(60);
    let cap = 0.01;
    spec.cost_cap_usd = Some(cap);
    let (o, _) = run(spec).await;
    let o = o.unwrap();
    assert_eq!(o.reason, EndReason::BudgetExceeded, "stopped by its cap, mid-turn: {o:?}");
    assert_eq!(o.num_turns, Some(0), "no turn ended");
    let cost = o.cost_usd.unwrap();
    let one_request = codex_usd(&Tokens { input: 600, output: 100, cache_read: 100, cache_creation: 0 });
    assert!(cost > cap && cost <= cap + one_request + 1e-12, "within one request of the cap: {cost}");
}

#[tokio::test]
async fn a_resumed_codex_thread_counts_only_its_own_tokens() {
    let sb = Sandbox::new();
    let (first, _) = run(codex_spec(&sb, &[])).await;
    let first = first.unwrap();
    assert_eq!((first.tokens.input, first.tokens.output, first.tokens.cache_read), (1500, 400, 200));
    // The second worker continues the thread: Codex's totals go on from the first worker's. What the
    // database knows of the first (its input and output, not its cache reads) is the fallback baseline.
    let mut spec = codex_spec(&sb, &[]);
    spec.resume_session = Some(THREAD.into());
    spec.usage_baseline = Tokens { input: 1500, output: 400, ..Default::default() };
    let (second, _) = run(spec).await;
    let second = second.unwrap();
    assert_eq!(second.reason, EndReason::Finished, "{second:?}");
    assert_eq!(
        (second.tokens.input, second.tokens.output, second.tokens.cache_read),
        (1500, 400, 200),
        "its own cache reads, not the thread's 400"
    );
    assert!((second.cost_usd.unwrap() - codex_usd(&second.tokens)).abs() < 1e-12);
}

/// msg_1 as the fake Claude Code reports it: 1,000 in, 200 out (in `message_delta`; its `assistant`
/// events say 1), 2,000 cache read, 100 cache write.
const MSG_1_USD: f64 = (1000.0 * 3.0 + 200.0 * 15.0 + 2000.0 * 0.3 + 100.0 * 3.75) / 1e6;

#[tokio::test]
async fn a_claude_worker_killed_mid_turn_counts_the_output_of_its_messages() {
    let sb = Sandbox::new();
    let mut spec = sb.spec(claude("claude.sh"), WorkerKind::Queued, &[("FAKE_HANG", "1".into())]);
    spec.timeouts.idle = Duration::from_secs(10);
    spec.timeouts.hard = Duration::from_millis(1500);
    let (o, _) = run(spec).await;
    let o = o.unwrap();
    assert_eq!(o.reason, EndReason::HardTimeout, "{o:?}");
    assert_eq!(
        (o.tokens.input, o.tokens.output, o.tokens.cache_read, o.tokens.cache_creation),
        (1000, 200, 2000, 100),
        "msg_1 once, with its final output"
    );
    assert!(o.cost_usd.is_some_and(|c| (c - MSG_1_USD).abs() < 1e-12) && o.cost_estimated, "{o:?}");
}

#[tokio::test]
async fn the_cap_stops_a_claude_worker_mid_turn_once_a_message_passes_it() {
    let sb = Sandbox::new();
    let mut spec = sb.spec(claude("claude.sh"), WorkerKind::Queued, &[("FAKE_HANG", "1".into())]);
    spec.timeouts.idle = Duration::from_secs(10);
    spec.timeouts.hard = Duration::from_secs(60);
    // Without its output msg_1 would look like $0.0040, under the cap.
    spec.cost_cap_usd = Some(0.005);
    let (o, _) = run(spec).await;
    let o = o.unwrap();
    assert_eq!(o.reason, EndReason::BudgetExceeded, "{o:?}");
    assert!(o.cost_usd.is_some_and(|c| (c - MSG_1_USD).abs() < 1e-12), "{o:?}");
}
