//! A worker from start to end against fake agents that print the real CLIs' formats.

#[path = "worker_support/mod.rs"]
mod common;

use common::*;
use executor::domain::WorkerKind;
use executor::worker::result::{ParsedResult, ResultError, Verdict};
use executor::worker::{EndReason, WorkerUpdate};

#[tokio::test]
async fn claude_stream_is_supervised_logged_and_reported() {
    let sb = Sandbox::new();
    sb.git_init();
    let prompt_copy = sb.path("prompt-received.md");
    let args_file = sb.path("args.txt");
    let spec = sb.spec(
        claude("claude.sh"),
        WorkerKind::Queued,
        &[
            ("FAKE_PROMPT_FILE", prompt_copy.display().to_string()),
            ("FAKE_ARGS_FILE", args_file.display().to_string()),
            ("FAKE_COMMIT", "1".into()),
            ("FAKE_ECHO_ENV", "GH_TOKEN".into()),
            ("GH_TOKEN", SECRET.into()),
        ],
    );
    let (outcome, updates) = run(spec).await;
    let o = outcome.unwrap();

    assert_eq!(o.reason, EndReason::Finished);
    assert_eq!(o.exit_code, Some(0));
    assert_eq!(o.session_id.as_deref(), Some("sess-1234-abcd"));
    assert_eq!(o.cost_usd, Some(0.1234));
    assert!(!o.cost_estimated, "the CLI's own total replaced the estimate");
    assert_eq!(o.num_turns, Some(3));
    assert_eq!((o.tokens.input, o.tokens.output, o.tokens.cache_read), (1500, 321, 2000));
    assert_eq!(o.result_error, None);

    // The prompt arrived on stdin, and not on the command line.
    assert_eq!(read(&prompt_copy), "Please do the task.\nPROMPT-MARKER-7f3a\n");
    let args = read(&args_file);
    assert!(!args.contains("PROMPT-MARKER"));
    assert!(args.starts_with("-p\n--output-format\nstream-json\n--verbose\n"), "{args}");
    assert!(args.contains("--max-turns\n30\n"));

    // The fake committed in the worktree.
    let log = std::process::Command::new("git")
        .args(["log", "--oneline"])
        .current_dir(&sb.worktree)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&log.stdout).contains("Fake agent change"));

    // Updates: started first, session id, usage, ended last.
    assert!(
        matches!(updates.first(), Some(WorkerUpdate::Started { pid_start_time, .. }) if *pid_start_time > 0)
    );
    assert!(updates.contains(&WorkerUpdate::SessionId("sess-1234-abcd".into())));
    assert!(updates.iter().any(|u| matches!(u, WorkerUpdate::Output { offset, .. } if *offset > 0)));
    assert!(updates.iter().any(|u| matches!(u, WorkerUpdate::Usage { cost_usd: Some(c), input_tokens: 1500, output_tokens: 321, cost_estimated: false } if (*c - 0.1234).abs() < 1e-9)));
    assert!(matches!(updates.last(), Some(WorkerUpdate::Ended(e)) if e.reason == EndReason::Finished));

    // The work log: path, header, prompt, conversation, footer, redaction.
    let rel = o.log_path.strip_prefix(sb.path("logs")).unwrap().display().to_string();
    assert!(
        rel.starts_with("1207/queued_")
            && rel.ends_with(".md")
            && rel.len() == "1207/queued_2024-01-01-00-00-00.md".len(),
        "{rel}"
    );
    let text = read(&o.log_path);
    for expected in [
        "# Work log: task 1207 · queued",
        "- **Run:** 42",
        "- **Agent:** claude",
        "--output-format stream-json --verbose",
        "PROMPT-MARKER-7f3a",
        "**Session** `sess-1234-abcd` · model `claude-fake-1` · 3 tools",
        "I will look at the repository first.",
        "#### Tool call: `Bash` (toolu_01)",
        "\"command\": \"ls -la\"",
        "Tool output (toolu_01)",
        "token=[REDACTED]",
        "- **Ended:** finished (exit code 0)",
        "- **Cost:** $0.1234",
        "- **Tokens:** 1500 in, 321 out, 2000 cache read, 100 cache write",
        "- **Session:** `sess-1234-abcd`",
        executor::worker::worklog::END_MARKER,
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    assert!(!text.contains(SECRET), "secret leaked into the work log");
    assert!(!text.contains("GH_TOKEN="), "env values must not be logged");
    assert_no_leftovers(started_pid(&updates));
}

#[tokio::test]
async fn pr_review_result_is_parsed_and_a_bad_one_is_a_typed_error() {
    let sb = Sandbox::new();
    let args_file = sb.path("args.txt");
    let spec = sb.spec(
        claude("claude.sh"),
        WorkerKind::PrReview,
        &[
            ("FAKE_STRUCTURED", r#"{"verdict":"fail","summary":"no tests"}"#.into()),
            ("FAKE_ARGS_FILE", args_file.display().to_string()),
        ],
    );
    let (o, _) = run(spec).await;
    let o = o.unwrap();
    assert_eq!(o.reason, EndReason::Finished);
    let Some(ParsedResult::Review(r)) = &o.parsed else { panic!("{o:?}") };
    assert_eq!(r.verdict, Verdict::Fail);
    assert!(read(&args_file).contains("--json-schema\n{"));

    let spec = sb.spec(
        claude("claude.sh"),
        WorkerKind::PrReview,
        &[("FAKE_STRUCTURED", r#"{"verdict":"maybe"}"#.into())],
    );
    let (o, _) = run(spec).await;
    let o = o.unwrap();
    assert!(matches!(o.result_error, Some(ResultError::Malformed { .. })), "{o:?}");
    assert!(read(&o.log_path).contains("- **Result:** not usable"));
}

#[tokio::test]
async fn claude_error_and_budget_results() {
    let sb = Sandbox::new();
    let spec = sb.spec(claude("claude.sh"), WorkerKind::FixCi, &[("FAKE_SUBTYPE", "error_max_turns".into())]);
    let (o, _) = run(spec).await;
    assert_eq!(o.unwrap().reason, EndReason::Failed);

    let spec =
        sb.spec(claude("claude.sh"), WorkerKind::FixCi, &[("FAKE_SUBTYPE", "error_max_budget_usd".into())]);
    let (o, _) = run(spec).await;
    assert_eq!(o.unwrap().reason, EndReason::BudgetExceeded);

    // The caller's own cap, from the reported cost.
    let mut spec = sb.spec(claude("claude.sh"), WorkerKind::FixCi, &[]);
    spec.cost_cap_usd = Some(0.05);
    let (o, _) = run(spec).await;
    assert_eq!(o.unwrap().reason, EndReason::BudgetExceeded);
}

#[tokio::test]
async fn codex_jsonl_stream() {
    let sb = Sandbox::new();
    let prompt_copy = sb.path("prompt.md");
    let args_file = sb.path("args.txt");
    let mut spec = sb.spec(
        codex("codex.sh"),
        WorkerKind::InProgress,
        &[
            ("FAKE_PROMPT_FILE", prompt_copy.display().to_string()),
            ("FAKE_ARGS_FILE", args_file.display().to_string()),
        ],
    );
    spec.resume_session = Some("0199a213-81c0-7800-8aa1-bbab2a035a53".into());
    let (o, updates) = run(spec).await;
    let o = o.unwrap();
    assert_eq!(o.reason, EndReason::Finished);
    assert_eq!(o.session_id.as_deref(), Some("0199a213-81c0-7800-8aa1-bbab2a035a53"));
    assert_eq!(o.num_turns, Some(2));
    assert_eq!((o.tokens.input, o.tokens.output, o.tokens.cache_read), (1500, 400, 200));
    // Codex reports no cost: estimated at the default price ($3 / $15 / $0.30 per million).
    let expected = (1300.0 * 3.0 + 400.0 * 15.0 + 200.0 * 0.3) / 1e6;
    assert!(o.cost_usd.is_some_and(|c| (c - expected).abs() < 1e-9), "{:?}", o.cost_usd);
    assert!(o.cost_estimated);
    assert!(read(&prompt_copy).contains("PROMPT-MARKER-7f3a"));
    let args = read(&args_file);
    assert!(args.starts_with("exec\n--json\n--sandbox\nworkspace-write\n-C\n"), "{args}");
    assert!(args.ends_with("resume\n0199a213-81c0-7800-8aa1-bbab2a035a53\n-\n"), "{args}");
    assert!(updates.iter().any(|u| matches!(u, WorkerUpdate::Usage { input_tokens: 1200, .. })));
    let text = read(&o.log_path);
    for expected in [
        "#### Tool call: `shell`",
        "README.md",
        "#### Tool call: `file_change`",
        "Updated src/app.js and ran the tests.",
        "_thinking:_",
        "- **Resumes session:**",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
}

#[tokio::test]
async fn malformed_output_and_a_ten_megabyte_line_do_not_break_parsing() {
    let sb = Sandbox::new();
    let spec = sb.spec(claude("malformed.sh"), WorkerKind::Queued, &[]);
    let (o, _) = run(spec).await;
    let o = o.unwrap();
    assert_eq!(o.reason, EndReason::Finished, "{o:?}");
    assert_eq!(o.session_id.as_deref(), Some("mal-1"));
    assert_eq!(o.cost_usd, Some(0.01));
    let text = read(&o.log_path);
    assert!(text.contains("plain text, not JSON"));
    assert!(text.contains("from_the_future"));
    assert!(text.contains("[line of 10485760 bytes cut]"));
    assert!(text.contains("still parsing after the big line"));
    // The log keeps a bounded piece of the huge line, not 10 MB.
    assert!(text.len() < 200_000, "work log is {} bytes", text.len());
}

#[tokio::test]
async fn crash_mid_stream_is_crashed_and_exit_3_is_crashed_without_a_result() {
    let sb = Sandbox::new();
    let spec = sb.spec(claude("crash.sh"), WorkerKind::Queued, &[]);
    let (o, updates) = run(spec).await;
    let o = o.unwrap();
    assert_eq!(o.reason, EndReason::Crashed);
    assert_eq!(o.exit_code, None);
    assert_eq!(o.session_id.as_deref(), Some("crash-1"));
    let text = read(&o.log_path);
    assert!(text.contains("Working on it"));
    // The half line is kept as raw text.
    assert!(text.contains(r#"{"type":"assistant","session_id":"crash-1","message":{"content":[{"type":"te"#));
    assert!(text.contains("crashed"));
    assert_no_leftovers(started_pid(&updates));

    let spec = sb.spec(claude("crash.sh"), WorkerKind::Queued, &[("FAKE_CRASH", "exit".into())]);
    let (o, _) = run(spec).await;
    let o = o.unwrap();
    assert_eq!(o.reason, EndReason::Crashed);
    assert_eq!(o.exit_code, Some(3));
}

#[tokio::test]
async fn command_agent_takes_the_last_json_line_as_its_result() {
    let sb = Sandbox::new();
    let pid_file = sb.path("grandchild.pid");
    let spec = sb.spec(
        command("grandchild.sh"),
        WorkerKind::FixComments,
        &[("FAKE_PID_FILE", pid_file.display().to_string())],
    );
    let (o, _) = run(spec).await;
    let o = o.unwrap();
    assert_eq!(o.reason, EndReason::Finished);
    assert_eq!(o.result, Some(serde_json::json!({"summary": "left a process behind"})));
    let Some(ParsedResult::Work(w)) = &o.parsed else { panic!() };
    assert_eq!(w.summary.as_deref(), Some("left a process behind"));
    assert!(read(&o.log_path).contains("started a background helper"));
}

#[tokio::test]
async fn a_missing_program_is_an_error_before_anything_runs() {
    let sb = Sandbox::new();
    let mut spec = sb.spec(claude("claude.sh"), WorkerKind::Queued, &[]);
    spec.agent = executor::worker::AgentConfig::Claude(executor::worker::ClaudeConfig {
        program: sb.path("no-such-agent").display().to_string(),
        ..Default::default()
    });
    let (o, updates) = run(spec).await;
    assert!(matches!(o, Err(executor::worker::WorkerError::Spawn { .. })), "{o:?}");
    assert!(updates.is_empty());
}
