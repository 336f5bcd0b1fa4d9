//! Codex CLI: `codex exec --json`, JSONL thread events (`thread.*`, `turn.*`, `item.*`, `error`).

use std::collections::HashSet;

use chrono::{DateTime, DurationRound, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{
    Accounting, AgentEvent, AgentResult, CommandLine, Launch, OutputParser, Tokens, estimate_usd,
    json_object, str_field, u64_field,
};
use crate::config::{Price, Pricing};

/// What Codex prints (stderr, or an `error` event) when `exec resume` names a thread it has no record
/// of: "thread/resume failed: no rollout found for thread id …".
pub const RESUME_NOT_FOUND: &str = "no rollout found for thread id";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CodexConfig {
    pub program: String,
    /// `--sandbox`: `read-only`, `workspace-write` or `danger-full-access`.
    pub sandbox: String,
    pub model: Option<String>,
    pub extra_args: Vec<String>,
}

impl Default for CodexConfig {
    fn default() -> Self {
        CodexConfig {
            program: "codex".into(),
            sandbox: "workspace-write".into(),
            model: None,
            extra_args: Vec::new(),
        }
    }
}

impl CodexConfig {
    /// `codex exec [flags] -` or `codex exec [flags] resume <id> -`: the flags belong to `exec` and
    /// apply to a resumed thread too; `-` makes Codex read the prompt from stdin.
    pub(super) fn command_line(&self, launch: &Launch) -> CommandLine {
        let mut args: Vec<String> = vec!["exec".into(), "--json".into()];
        // Inside executor's sandbox Codex's own cannot start (its bubblewrap needs the user namespaces
        // and mounts Landlock refuses), and every command would fail: executor's layer holds instead.
        let sandbox = if launch.contained { "danger-full-access" } else { self.sandbox.as_str() };
        args.extend(["--sandbox".into(), sandbox.to_string()]);
        args.extend(["-C".into(), launch.cwd.display().to_string()]);
        if let Some(model) = &self.model {
            args.extend(["--model".into(), model.clone()]);
        }
        if let Some(path) = &launch.result_schema_file {
            args.extend(["--output-schema".into(), path.display().to_string()]);
        }
        // Only `workspace-write` has writable roots to extend (`read-only` must stay read-only, and
        // `danger-full-access` needs none): the worktree's git directories, so commits work.
        if sandbox == "workspace-write" {
            for dir in &launch.writable_dirs {
                args.extend(["--add-dir".into(), dir.display().to_string()]);
            }
        }
        args.extend(self.extra_args.iter().cloned());
        if let Some(id) = &launch.resume_session {
            args.extend(["resume".into(), id.clone()]);
        }
        args.push("-".into());
        CommandLine { program: self.program.clone(), args }
    }
}

#[derive(Debug, Default)]
pub struct CodexParser {
    thread_id: Option<String>,
    turns: u32,
    /// The thread's running total, the largest reported so far (`turn.completed.usage` and the session
    /// file's `total_token_usage` are cumulative over the whole thread, including the turns of earlier
    /// workers on a resumed thread, which Codex restores from the session file).
    thread_total: Tokens,
    /// The thread's total before this worker: from the session file once it is read, else recorded
    /// usage of earlier workers (which lacks their cache reads).
    baseline: Tokens,
    /// `baseline` comes from the session file, so it is exact.
    baseline_exact: bool,
    started_at: Option<DateTime<Utc>>,
    /// Codex reports no cost: it is estimated at the price of `model`: the one its session file names,
    /// else the configured one (`""`: the table's default).
    pricing: Pricing,
    model: String,
    resume_failed: bool,
    failure: Option<String>,
    last_message: Option<String>,
    started_items: HashSet<String>,
    seen_anything: bool,
    /// A turn started and has not ended yet: the agent stopped mid-turn if its output ends here.
    turn_open: bool,
}

impl CodexParser {
    /// `model`: the configured Codex model; without one the price table's `default` applies.
    pub fn new(accounting: &Accounting, model: Option<&str>) -> Self {
        CodexParser {
            baseline: accounting.baseline,
            thread_total: accounting.baseline,
            started_at: accounting.started_at,
            pricing: accounting.pricing.clone(),
            model: model.unwrap_or("").to_string(),
            ..Default::default()
        }
    }

    fn price(&self) -> Price {
        self.pricing.price_for(&self.model)
    }

    fn this_worker(&self) -> Tokens {
        self.thread_total.since(&self.baseline)
    }

    /// A new running total of the thread: this worker's usage so far, priced.
    fn thread_total(&mut self, total: &Tokens) -> Vec<AgentEvent> {
        self.thread_total = self.thread_total.max(total);
        let tokens = self.this_worker();
        let cost = estimate_usd(&self.price(), &tokens, true);
        vec![AgentEvent::UsageSoFar { tokens, cost_usd: Some(cost), estimated: true }]
    }

    /// A `token_count` event of the session file: `{"timestamp", "type": "event_msg", "payload":
    /// {"type": "token_count", "info": {"total_token_usage", "last_token_usage", …}}}`.
    fn token_count(&mut self, line: &Value) -> Vec<AgentEvent> {
        let Some(info) = line.pointer("/payload/info").filter(|i| i.is_object()) else {
            return Vec::new(); // rate limits only
        };
        let (Some(total), Some(last)) = (
            info.get("total_token_usage").map(openai_tokens),
            info.get("last_token_usage").map(openai_tokens),
        ) else {
            return Vec::new();
        };
        let at = line
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc));
        // Codex's timestamps are whole milliseconds: compare at that grain.
        let started = self.started_at.and_then(|t| t.duration_trunc(chrono::TimeDelta::milliseconds(1)).ok());
        if let (Some(at), Some(started)) = (at, started)
            && at < started
        {
            // An earlier worker's request on this thread: the thread's total before this worker.
            self.baseline = total;
            self.baseline_exact = true;
            return self.thread_total(&total);
        }
        if !self.baseline_exact {
            // This worker's first request: the total before it is exactly the total less the request.
            self.baseline = total.since(&last);
            self.baseline_exact = true;
        }
        self.thread_total(&total)
    }

    fn error(&mut self, msg: String) -> Vec<AgentEvent> {
        if msg.contains(RESUME_NOT_FOUND) && !self.resume_failed {
            self.resume_failed = true;
            return vec![AgentEvent::ResumeFailed(msg)];
        }
        vec![AgentEvent::Error(msg)]
    }
}

impl OutputParser for CodexParser {
    fn parse_line(&mut self, line: &str) -> Vec<AgentEvent> {
        let Some(map) = json_object(line) else {
            if line.contains(RESUME_NOT_FOUND) {
                return self.error(line.trim().to_string());
            }
            return if line.trim().is_empty() { Vec::new() } else { vec![AgentEvent::Raw(line.to_string())] };
        };
        let event = Value::Object(map);
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "thread.started" => match str_field(&event, "thread_id") {
                Some(id) => {
                    self.seen_anything = true;
                    self.thread_id = Some(id.clone());
                    vec![AgentEvent::Session { id, model: None, tools: Vec::new() }]
                }
                None => vec![AgentEvent::Raw(line.to_string())],
            },
            "turn.started" => {
                self.seen_anything = true;
                self.turn_open = true;
                Vec::new()
            }
            "turn.completed" => {
                self.turn_open = false;
                self.turns += 1;
                let total = openai_tokens(event.get("usage").unwrap_or(&Value::Null));
                self.thread_total(&total)
            }
            "turn.failed" => {
                self.turn_open = false;
                let msg = event
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("turn failed")
                    .to_string();
                self.failure = Some(msg.clone());
                self.error(msg)
            }
            // Codex also reports transient trouble (reconnects) this way, so it does not end the run.
            "error" => {
                let msg = str_field(&event, "message").unwrap_or_else(|| event.to_string());
                self.error(msg)
            }
            "item.started" | "item.updated" | "item.completed" => match event.get("item") {
                Some(item) => self.item(kind, item),
                None => vec![AgentEvent::Raw(line.to_string())],
            },
            _ => vec![AgentEvent::Raw(line.to_string())],
        }
    }

    fn finish(&mut self, exit_code: Option<i32>) -> Vec<AgentEvent> {
        if !self.seen_anything {
            return Vec::new();
        }
        let cost = estimate_usd(&self.price(), &self.this_worker(), true);
        let failed = self.failure.is_some() || exit_code.is_some_and(|c| c != 0);
        let structured = self.last_message.as_deref().and_then(json_object).map(Value::Object);
        vec![AgentEvent::Result(AgentResult {
            subtype: if failed { "failed" } else { "completed" }.into(),
            is_error: failed,
            budget_exceeded: false,
            num_turns: Some(self.turns),
            // Estimated from the price table (Codex reports no cost); the supervisor keeps the flag.
            cost_usd: Some(cost),
            cost_estimated: true,
            tokens: Some(self.this_worker()),
            text: self.failure.clone().or_else(|| self.last_message.clone()),
            structured,
            session_id: self.thread_id.clone(),
            reached_end: self.turns > 0 && !self.turn_open,
        })]
    }

    fn parse_session_line(&mut self, line: &str) -> Vec<AgentEvent> {
        // Each turn's context names the model that ran it (`codex exec --json` never does): the tokens
        // after it are priced at that model's rate, not at the configured or default one.
        if line.contains("\"turn_context\"") {
            let model = json_object(line)
                .filter(|map| map.get("type").and_then(Value::as_str) == Some("turn_context"))
                .and_then(|map| map.get("payload")?.get("model")?.as_str().map(str::to_string));
            if let Some(model) = model.filter(|m| !m.is_empty()) {
                self.model = model;
            }
            return Vec::new();
        }
        // Most lines of a session file are the conversation itself, often long: only token counts matter.
        if !line.contains("\"token_count\"") {
            return Vec::new();
        }
        let Some(map) = json_object(line) else { return Vec::new() };
        let line = Value::Object(map);
        let is_count = line.get("type").and_then(Value::as_str) == Some("event_msg")
            && line.pointer("/payload/type").and_then(Value::as_str) == Some("token_count");
        if is_count { self.token_count(&line) } else { Vec::new() }
    }
}

/// OpenAI's usage object (`input_tokens` including `cached_input_tokens`, `output_tokens` including
/// reasoning).
fn openai_tokens(usage: &Value) -> Tokens {
    Tokens {
        input: u64_field(usage, "input_tokens"),
        output: u64_field(usage, "output_tokens"),
        cache_read: u64_field(usage, "cached_input_tokens"),
        cache_creation: 0,
    }
}

impl CodexParser {
    fn item(&mut self, phase: &str, item: &Value) -> Vec<AgentEvent> {
        let id = str_field(item, "id").unwrap_or_default();
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        let completed = phase == "item.completed";
        let call =
            |name: &str, input: Value| AgentEvent::ToolCall { id: id.clone(), name: name.to_string(), input };
        match kind {
            "agent_message" if completed => {
                let text = str_field(item, "text").unwrap_or_default();
                self.last_message = Some(text.clone());
                vec![AgentEvent::Text(text)]
            }
            "reasoning" if completed => {
                vec![AgentEvent::Reasoning(str_field(item, "text").unwrap_or_default())]
            }
            "command_execution" => {
                let mut out = Vec::new();
                if self.started_items.insert(id.clone()) {
                    out.push(call("shell", json!({"command": item.get("command")})));
                }
                if completed {
                    let code = item.get("exit_code").and_then(Value::as_i64);
                    out.push(AgentEvent::ToolResult {
                        id: id.clone(),
                        output: str_field(item, "aggregated_output").unwrap_or_default(),
                        is_error: code.is_some_and(|c| c != 0)
                            || str_field(item, "status").as_deref() == Some("failed"),
                    });
                }
                out
            }
            "file_change" | "mcp_tool_call" | "web_search" if completed => {
                let (name, input) = match kind {
                    "file_change" => ("file_change".to_string(), item.get("changes").cloned()),
                    "mcp_tool_call" => (
                        format!(
                            "{}.{}",
                            str_field(item, "server").unwrap_or_default(),
                            str_field(item, "tool").unwrap_or_default()
                        ),
                        item.get("arguments").cloned(),
                    ),
                    _ => ("web_search".to_string(), item.get("query").cloned()),
                };
                let status = str_field(item, "status");
                let error = item.pointer("/error/message").and_then(Value::as_str);
                vec![
                    call(&name, input.unwrap_or(Value::Null)),
                    AgentEvent::ToolResult {
                        id: id.clone(),
                        output: error.map(str::to_string).or_else(|| status.clone()).unwrap_or_default(),
                        is_error: error.is_some() || status.as_deref() == Some("failed"),
                    },
                ]
            }
            "todo_list" if completed => {
                let items = item.get("items").and_then(Value::as_array);
                let plan = items
                    .map(|items| {
                        items
                            .iter()
                            .map(|i| {
                                let done = i.get("completed").and_then(Value::as_bool).unwrap_or(false);
                                format!(
                                    "[{}] {}",
                                    if done { "x" } else { " " },
                                    str_field(i, "text").unwrap_or_default()
                                )
                            })
                            .collect::<Vec<_>>()
                            .join("\n")
                    })
                    .unwrap_or_default();
                vec![AgentEvent::Reasoning(format!("plan:\n{plan}"))]
            }
            "error" => vec![AgentEvent::Error(str_field(item, "message").unwrap_or_default())],
            // Progress of items shown once complete (messages, plans, file changes).
            "agent_message" | "reasoning" | "file_change" | "mcp_tool_call" | "web_search" | "todo_list" => {
                Vec::new()
            }
            _ => vec![AgentEvent::Raw(item.to_string())],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn a_turn_cut_off_is_not_the_end() {
        let result = |lines: &[&str]| {
            let mut p = CodexParser::default();
            for l in lines {
                p.parse_line(l);
            }
            match p.finish(None).first() {
                Some(AgentEvent::Result(r)) => r.reached_end,
                _ => panic!("no result"),
            }
        };
        let started = [r#"{"type":"thread.started","thread_id":"th-1"}"#, r#"{"type":"turn.started"}"#];
        assert!(!result(&started), "killed mid-turn");
        let done = r#"{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}"#;
        assert!(result(&[started[0], started[1], done]));
    }

    #[test]
    fn fresh_and_resume_command_lines_read_the_prompt_from_stdin() {
        let cfg = CodexConfig::default();
        let launch = Launch { cwd: PathBuf::from("/w/t"), ..Default::default() };
        let fresh = cfg.command_line(&launch).args.join(" ");
        assert_eq!(fresh, "exec --json --sandbox workspace-write -C /w/t -");
        let resumed = cfg.command_line(&Launch { resume_session: Some("th-1".into()), ..launch });
        assert!(resumed.args.join(" ").ends_with("-C /w/t resume th-1 -"));
    }

    #[test]
    fn workspace_write_gets_the_git_directories_as_extra_writable_roots() {
        let launch = Launch {
            cwd: PathBuf::from("/w/t"),
            writable_dirs: vec![PathBuf::from("/r/.git/worktrees/t"), PathBuf::from("/r/.git")],
            resume_session: Some("th-1".into()),
            ..Default::default()
        };
        let args = CodexConfig::default().command_line(&launch).args.join(" ");
        assert_eq!(
            args,
            "exec --json --sandbox workspace-write -C /w/t --add-dir /r/.git/worktrees/t --add-dir /r/.git resume th-1 -"
        );
        let ro = CodexConfig { sandbox: "read-only".into(), ..Default::default() };
        assert!(!ro.command_line(&launch).args.contains(&"--add-dir".to_string()));
    }

    #[test]
    fn contained_by_executor_codex_runs_without_its_own_sandbox() {
        let launch = Launch { cwd: PathBuf::from("/w/t"), contained: true, ..Default::default() };
        for configured in ["workspace-write", "read-only"] {
            let codex = CodexConfig { sandbox: configured.into(), ..Default::default() };
            let args = codex.command_line(&launch).args.join(" ");
            assert_eq!(args, "exec --json --sandbox danger-full-access -C /w/t -", "{configured}");
        }
    }

    #[test]
    fn a_resumed_thread_counts_only_its_own_turns_and_is_priced() {
        let accounting = Accounting {
            pricing: crate::config::Pricing(std::collections::BTreeMap::from([(
                "default".to_string(),
                Price { input: 1.0, output: 10.0, cache_read: 0.1, cache_write: 0.0 },
            )])),
            baseline: Tokens { input: 2_000, output: 100, cache_read: 500, cache_creation: 0 },
            started_at: None,
        };
        let mut p = CodexParser::new(&accounting, None);
        p.parse_line(r#"{"type":"thread.started","thread_id":"th-9"}"#);
        // Running totals of the thread: 2,000 in before this worker, then 2,011 and 4,039.
        let first = p.parse_line(
            r#"{"type":"turn.completed","usage":{"input_tokens":4011,"cached_input_tokens":1500,"output_tokens":150}}"#,
        );
        let second = p.parse_line(
            r#"{"type":"turn.completed","usage":{"input_tokens":6039,"cached_input_tokens":2500,"output_tokens":180}}"#,
        );
        let so_far = |ev: &[AgentEvent]| match &ev[0] {
            AgentEvent::UsageSoFar { tokens, cost_usd, estimated: true } => (*tokens, cost_usd.unwrap()),
            other => panic!("{other:?}"),
        };
        let (t1, c1) = so_far(&first);
        assert_eq!((t1.input, t1.output, t1.cache_read), (2_011, 50, 1_000));
        // 1,011 fresh input × $1 + 50 × $10 + 1,000 cached × $0.1, per million.
        assert!((c1 - 0.001611).abs() < 1e-12, "{c1}");
        let (t2, _) = so_far(&second);
        assert_eq!((t2.input, t2.output), (4_039, 80), "this worker's total so far");
        let AgentEvent::Result(r) = &p.finish(Some(0))[0] else { panic!() };
        assert_eq!(r.tokens.unwrap().input, 4_039, "this worker's, not the thread's 6,039");
        assert_eq!(r.tokens.unwrap().output, 80);
        assert!(r.cost_usd.unwrap() > 0.0);
    }

    /// Issue 34 item 5: Codex never says its model on stdout; its session file's turn context does, and
    /// the tokens are priced at that model's published rate.
    #[test]
    fn the_session_files_model_prices_the_tokens() {
        let init = crate::config::Config::parse(crate::config::TEMPLATE).unwrap();
        let accounting = Accounting { pricing: init.pricing, ..Default::default() };
        let mut p = CodexParser::new(&accounting, None);
        let context = r#"{"timestamp":"2026-12-04T10:00:00.000Z","type":"turn_context","payload":{"cwd":"/w","model":"gpt-6-astra","effort":"high"}}"#;
        assert!(p.parse_session_line(context).is_empty());
        let count = r#"{"timestamp":"2026-12-04T10:00:01.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1000000,"cached_input_tokens":0,"output_tokens":100000,"reasoning_output_tokens":0,"total_tokens":0},"last_token_usage":{"input_tokens":1000000,"cached_input_tokens":0,"output_tokens":100000,"reasoning_output_tokens":0,"total_tokens":0},"model_context_window":272000}}}"#;
        let cost = match p.parse_session_line(count).as_slice() {
            [AgentEvent::UsageSoFar { cost_usd, .. }] => cost_usd.unwrap(),
            other => panic!("{other:?}"),
        };
        // 1M × $10 + 100k × $50 per million (the default's $3/$15 would say $4.50).
        assert!((cost - 15.0).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn the_session_file_gives_usage_per_request_and_the_exact_baseline_of_a_resumed_thread() {
        let started: DateTime<Utc> = "2025-10-03T10:00:00.500Z".parse().unwrap();
        // What the database knows of the earlier worker: no cache reads.
        let accounting = Accounting {
            baseline: Tokens { input: 1_500, output: 400, ..Default::default() },
            started_at: Some(started),
            ..Default::default()
        };
        let mut p = CodexParser::new(&accounting, None);
        let count = |at: &str, total: (u64, u64, u64), last: (u64, u64, u64)| {
            format!(
                r#"{{"timestamp":"{at}","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{},"cached_input_tokens":{},"output_tokens":{},"reasoning_output_tokens":0,"total_tokens":0}},"last_token_usage":{{"input_tokens":{},"cached_input_tokens":{},"output_tokens":{},"reasoning_output_tokens":0,"total_tokens":0}},"model_context_window":272000}},"rate_limits":null}}}}"#,
                total.0, total.1, total.2, last.0, last.1, last.2
            )
        };
        let so_far = |ev: Vec<AgentEvent>| match ev.as_slice() {
            [AgentEvent::UsageSoFar { tokens, .. }] => *tokens,
            other => panic!("{other:?}"),
        };
        assert!(p.parse_session_line(r#"{"timestamp":"x","type":"session_meta","payload":{}}"#).is_empty());
        // The earlier worker's last request: before this one started.
        let before = count("2025-10-03T09:59:59.000Z", (1_500, 200, 400), (300, 0, 55));
        assert_eq!(so_far(p.parse_session_line(&before)), Tokens::default());
        let mine = count("2025-10-03T10:00:02.000Z", (2_100, 300, 600), (600, 100, 200));
        assert_eq!(
            so_far(p.parse_session_line(&mine)),
            Tokens { input: 600, output: 200, cache_read: 100, cache_creation: 0 }
        );
        // Stdout's turn total repeats what the file said: nothing more.
        let turn = p.parse_line(r#"{"type":"turn.completed","usage":{"input_tokens":2100,"cached_input_tokens":300,"output_tokens":600}}"#);
        assert_eq!(so_far(turn).cache_read, 100);
        // Without the earlier lines, the first request's total less its own usage is the baseline.
        let mut q = CodexParser::new(&accounting, None);
        assert_eq!(so_far(q.parse_session_line(&mine)).cache_read, 100);
        let rate_limits_only = r#"{"timestamp":"2025-10-03T10:00:03.000Z","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{}}}"#;
        assert!(q.parse_session_line(rate_limits_only).is_empty());
    }

    #[test]
    fn a_thread_that_cannot_be_resumed_is_recognised() {
        let mut p = CodexParser::default();
        let ev = p.parse_line(
            "Error: thread/resume: thread/resume failed: no rollout found for thread id 019e (code -32600)",
        );
        assert!(matches!(ev.as_slice(), [AgentEvent::ResumeFailed(_)]), "{ev:?}");
    }

    #[test]
    fn parses_a_thread_and_sums_usage() {
        let mut p = CodexParser::default();
        let lines = [
            r#"{"type":"thread.started","thread_id":"th-9"}"#,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"item.started","item":{"id":"i1","type":"command_execution","command":"ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
            r#"{"type":"item.completed","item":{"id":"i1","type":"command_execution","command":"ls","aggregated_output":"a\n","exit_code":0,"status":"completed"}}"#,
            r#"{"type":"item.completed","item":{"id":"i2","type":"agent_message","text":"{\"summary\":\"ok\"}"}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":10,"output_tokens":7}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":101,"cached_input_tokens":10,"output_tokens":8}}"#,
        ];
        let events: Vec<AgentEvent> = lines.iter().flat_map(|l| p.parse_line(l)).collect();
        assert!(matches!(&events[0], AgentEvent::Session { id, .. } if id == "th-9"));
        assert!(matches!(&events[1], AgentEvent::ToolCall { name, .. } if name == "shell"));
        assert!(
            matches!(&events[2], AgentEvent::ToolResult { output, is_error: false, .. } if output == "a\n")
        );
        let AgentEvent::Result(r) = &p.finish(Some(0))[0] else { panic!() };
        assert!(!r.is_error);
        assert_eq!(r.num_turns, Some(2));
        assert_eq!(r.tokens.unwrap().input, 101);
        assert_eq!(r.tokens.unwrap().output, 8);
        assert_eq!(r.structured.as_ref().unwrap()["summary"], "ok");
        assert_eq!(r.session_id.as_deref(), Some("th-9"));
    }

    #[test]
    fn failed_turn_is_an_error_result_and_nothing_is_no_result() {
        let mut p = CodexParser::default();
        assert!(p.finish(Some(1)).is_empty());
        p.parse_line(r#"{"type":"turn.started"}"#);
        p.parse_line(r#"{"type":"turn.failed","error":{"message":"quota"}}"#);
        let AgentEvent::Result(r) = &p.finish(Some(1))[0] else { panic!() };
        assert!(r.is_error);
        assert_eq!(r.text.as_deref(), Some("quota"));
    }
}
