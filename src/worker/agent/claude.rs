//! Claude Code in print mode: `claude -p --output-format stream-json --verbose --include-partial-messages`,
//! one JSON event a line.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    AgentError, AgentEvent, AgentResult, CommandLine, Launch, OutputParser, Tokens, estimate_usd,
    json_object, str_field, u64_field,
};
use crate::config::Pricing;

/// What Claude Code prints on stderr (into the output file) when `--resume` names a session it does
/// not have: another HOME, another host, a cleaned `~/.claude`.
pub const RESUME_NOT_FOUND: &str = "No conversation found with session ID";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClaudeConfig {
    pub program: String,
    /// `--permission-mode`. Unattended workers need to run commands (tests, git) without a human to
    /// approve them, hence `bypassPermissions` by default; as root Claude Code refuses it unless
    /// `IS_SANDBOX=1` is in the environment (list it in the worker's extra environment).
    pub permission_mode: Option<String>,
    pub model: Option<String>,
    /// Appended verbatim, after executor's own flags.
    pub extra_args: Vec<String>,
}

impl Default for ClaudeConfig {
    fn default() -> Self {
        ClaudeConfig {
            program: "claude".into(),
            permission_mode: Some("bypassPermissions".into()),
            model: None,
            extra_args: Vec::new(),
        }
    }
}

impl ClaudeConfig {
    pub(super) fn command_line(&self, launch: &Launch) -> Result<CommandLine, AgentError> {
        // Partial messages carry `message_delta`, the only event with a message's final output tokens:
        // without it a killed worker's spend would leave out everything the model wrote.
        let mut args: Vec<String> =
            ["-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages"]
                .map(String::from)
                .to_vec();
        if let Some(mode) = &self.permission_mode {
            args.extend(["--permission-mode".into(), mode.clone()]);
        }
        if let Some(n) = launch.max_turns {
            args.extend(["--max-turns".into(), n.to_string()]);
        }
        if let Some(model) = &self.model {
            args.extend(["--model".into(), model.clone()]);
        }
        if let Some(id) = &launch.resume_session {
            // The `=` form: a separate argument that starts with '-' would be read as a flag.
            args.push(format!("--resume={id}"));
        }
        if let Some(schema) = &launch.result_schema {
            args.extend(["--json-schema".into(), schema.to_string()]);
        }
        if let Some(usd) = launch.max_budget_usd {
            let amount = budget_arg(usd).ok_or(AgentError::NoBudgetLeft(usd))?;
            args.extend(["--max-budget-usd".into(), amount]);
        }
        args.extend(self.extra_args.iter().cloned());
        Ok(CommandLine { program: self.program.clone(), args })
    }
}

/// `usd` rounded DOWN to a millionth of a dollar, as a decimal without trailing zeros, so the agent is
/// never allowed more than is left. `None` when that is zero (or `usd` is not a positive number).
pub fn budget_arg(usd: f64) -> Option<String> {
    const MICROS: f64 = 1_000_000.0;
    if !usd.is_finite() || usd <= 0.0 {
        return None;
    }
    let mut micros = (usd * MICROS).floor();
    // 0.57 * 1e6 is 569999.99…: the product can land just under a whole number the amount really is.
    if (micros + 1.0) / MICROS <= usd {
        micros += 1.0;
    }
    if micros < 1.0 || micros >= u64::MAX as f64 {
        return None;
    }
    let micros = micros as u64;
    let (whole, frac) = (micros / 1_000_000, micros % 1_000_000);
    if frac == 0 {
        return Some(whole.to_string());
    }
    let frac = format!("{frac:06}");
    Some(format!("{whole}.{}", frac.trim_end_matches('0')))
}

/// Parses stream-json events. Remembers the session id so a change (or a stream without an `init`
/// event) is still reported once, and which messages' usage has been counted.
#[derive(Debug, Default)]
pub struct ClaudeParser {
    session_id: Option<String>,
    /// What has been counted of each message, by `message.id`. Claude Code repeats a message's usage on
    /// every content block of it (one `assistant` event per block) and in its stream events
    /// (`message_start` with the input, `message_delta` with the final output): each count is the
    /// largest reported, and only what it adds is counted.
    counted: HashMap<String, Tokens>,
    /// The message being streamed, by `parent_tool_use_id` (a subagent streams its own): where a
    /// `message_delta`, which names no message, belongs.
    streaming: HashMap<Option<String>, (String, Option<String>)>,
    pricing: Pricing,
    /// The configured model, for pricing an event that does not name its own.
    model: Option<String>,
}

impl ClaudeParser {
    pub fn new(pricing: Pricing, model: Option<String>) -> Self {
        ClaudeParser { pricing, model, ..Default::default() }
    }
}

impl OutputParser for ClaudeParser {
    fn parse_line(&mut self, line: &str) -> Vec<AgentEvent> {
        let Some(map) = json_object(line) else {
            if line.contains(RESUME_NOT_FOUND) {
                return vec![AgentEvent::ResumeFailed(line.trim().to_string())];
            }
            return raw(line);
        };
        let event = Value::Object(map);
        let mut out = Vec::new();
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        let subtype = event.get("subtype").and_then(Value::as_str).unwrap_or("");
        match (kind, subtype) {
            ("system", "init") => {
                if let Some(id) = str_field(&event, "session_id") {
                    self.session_id = Some(id.clone());
                    let tools = event
                        .get("tools")
                        .and_then(Value::as_array)
                        .map(|t| t.iter().filter_map(|x| x.as_str().map(String::from)).collect())
                        .unwrap_or_default();
                    out.push(AgentEvent::Session { id, model: str_field(&event, "model"), tools });
                }
                return out;
            }
            _ => self.note_session(&event, &mut out),
        }
        match kind {
            "assistant" => {
                content_blocks(&event, &mut out, assistant_block);
                out.extend(self.usage(&event));
            }
            "stream_event" => out.extend(self.stream_event(&event)),
            "user" => content_blocks(&event, &mut out, user_block),
            "result" => out.push(AgentEvent::Result(result(&event, self.session_id.clone()))),
            _ => out.extend(raw(line)),
        }
        out
    }

    fn finish(&mut self, _exit_code: Option<i32>) -> Vec<AgentEvent> {
        // Claude Code always ends with a `result` event; without one the run crashed, which the
        // supervisor decides from the missing result.
        Vec::new()
    }
}

impl ClaudeParser {
    /// The usage an assistant message adds to what was counted of it, priced as an estimate: the CLI's
    /// own total only comes with the final `result`, which a killed worker never prints.
    fn usage(&mut self, event: &Value) -> Option<AgentEvent> {
        let message = event.get("message")?;
        let usage = message.get("usage").filter(|u| u.is_object())?;
        let model = str_field(message, "model");
        self.count(str_field(message, "id"), model, usage)
    }

    /// `message_start` (a message's id, model and input) and `message_delta` (its final usage); the
    /// other stream events (text as it is written) are shown whole by the `assistant` events.
    fn stream_event(&mut self, event: &Value) -> Option<AgentEvent> {
        let parent = str_field(event, "parent_tool_use_id");
        let inner = event.get("event")?;
        match inner.get("type").and_then(Value::as_str)? {
            "message_start" => {
                let message = inner.get("message")?;
                let (id, model) = (str_field(message, "id")?, str_field(message, "model"));
                self.streaming.insert(parent, (id.clone(), model.clone()));
                self.count(Some(id), model, message.get("usage").filter(|u| u.is_object())?)
            }
            "message_delta" => {
                let (id, model) = self.streaming.get(&parent).cloned()?;
                self.count(Some(id), model, inner.get("usage").filter(|u| u.is_object())?)
            }
            _ => None,
        }
    }

    fn count(&mut self, id: Option<String>, model: Option<String>, usage: &Value) -> Option<AgentEvent> {
        let reported = Tokens {
            input: u64_field(usage, "input_tokens"),
            output: u64_field(usage, "output_tokens"),
            cache_read: u64_field(usage, "cache_read_input_tokens"),
            cache_creation: u64_field(usage, "cache_creation_input_tokens"),
        };
        let tokens = match id {
            Some(id) => {
                let counted = self.counted.entry(id).or_default();
                let now = counted.max(&reported);
                let added = now.since(counted);
                *counted = now;
                added
            }
            None => reported,
        };
        if tokens == Tokens::default() {
            return None;
        }
        let model = model.or_else(|| self.model.clone()).unwrap_or_default();
        let cost = estimate_usd(&self.pricing.price_for(&model), &tokens, false);
        Some(AgentEvent::Usage { tokens, cost_usd: Some(cost), estimated: true })
    }

    fn note_session(&mut self, event: &Value, out: &mut Vec<AgentEvent>) {
        if let Some(id) = str_field(event, "session_id")
            && self.session_id.as_deref() != Some(id.as_str())
        {
            self.session_id = Some(id.clone());
            out.push(AgentEvent::Session { id, model: None, tools: Vec::new() });
        }
    }
}

fn raw(line: &str) -> Vec<AgentEvent> {
    if line.trim().is_empty() { Vec::new() } else { vec![AgentEvent::Raw(line.to_string())] }
}

fn content_blocks(event: &Value, out: &mut Vec<AgentEvent>, f: fn(&Value) -> Option<AgentEvent>) {
    let content = event.pointer("/message/content");
    match content {
        Some(Value::Array(blocks)) => {
            for block in blocks {
                out.push(f(block).unwrap_or_else(|| AgentEvent::Raw(block.to_string())));
            }
        }
        // A user message with plain string content is the prompt echoed back; nothing to show.
        Some(Value::String(_)) => {}
        _ => out.push(AgentEvent::Raw(event.to_string())),
    }
}

fn assistant_block(block: &Value) -> Option<AgentEvent> {
    match block.get("type")?.as_str()? {
        "text" => Some(AgentEvent::Text(str_field(block, "text")?)),
        "thinking" => Some(AgentEvent::Reasoning(str_field(block, "thinking")?)),
        "tool_use" => Some(AgentEvent::ToolCall {
            id: str_field(block, "id").unwrap_or_default(),
            name: str_field(block, "name").unwrap_or_default(),
            input: block.get("input").cloned().unwrap_or(Value::Null),
        }),
        _ => None,
    }
}

fn user_block(block: &Value) -> Option<AgentEvent> {
    match block.get("type")?.as_str()? {
        "tool_result" => Some(AgentEvent::ToolResult {
            id: str_field(block, "tool_use_id").unwrap_or_default(),
            output: tool_output(block.get("content")),
            is_error: block.get("is_error").and_then(Value::as_bool).unwrap_or(false),
        }),
        "text" => Some(AgentEvent::Raw(str_field(block, "text")?)),
        _ => None,
    }
}

/// A tool result's content is either a string or a list of blocks (text, images, ...).
fn tool_output(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| match p.get("text").and_then(Value::as_str) {
                Some(t) => t.to_string(),
                None => format!("[{} block]", p.get("type").and_then(Value::as_str).unwrap_or("?")),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

fn result(event: &Value, known_session: Option<String>) -> AgentResult {
    let subtype = str_field(event, "subtype").unwrap_or_default();
    // `modelUsage` is what the cost is computed from (`usage` under-counted in a trial): prefer it.
    let tokens = model_usage(event).or_else(|| {
        event.get("usage").filter(|u| u.is_object()).map(|u| Tokens {
            input: u64_field(u, "input_tokens"),
            output: u64_field(u, "output_tokens"),
            cache_read: u64_field(u, "cache_read_input_tokens"),
            cache_creation: u64_field(u, "cache_creation_input_tokens"),
        })
    });
    AgentResult {
        is_error: event.get("is_error").and_then(Value::as_bool).unwrap_or(subtype != "success"),
        budget_exceeded: subtype == "error_max_budget_usd",
        num_turns: event.get("num_turns").and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()),
        cost_usd: event.get("total_cost_usd").and_then(Value::as_f64),
        cost_estimated: false,
        tokens,
        text: str_field(event, "result"),
        structured: event.get("structured_output").filter(|v| !v.is_null()).cloned(),
        session_id: str_field(event, "session_id").or(known_session),
        subtype,
        // Claude Code prints its `result` event only at the end of its run.
        reached_end: true,
    }
}

/// `result.modelUsage`: `{model: {inputTokens, outputTokens, cacheReadInputTokens,
/// cacheCreationInputTokens, costUSD, …}}`, summed over the models used.
fn model_usage(event: &Value) -> Option<Tokens> {
    let models = event.get("modelUsage")?.as_object()?;
    if models.is_empty() {
        return None;
    }
    let mut total = Tokens::default();
    for m in models.values() {
        total.accumulate(&Tokens {
            input: u64_field(m, "inputTokens"),
            output: u64_field(m, "outputTokens"),
            cache_read: u64_field(m, "cacheReadInputTokens"),
            cache_creation: u64_field(m, "cacheCreationInputTokens"),
        });
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_a_fresh_and_a_resumed_command_line() {
        let cfg = ClaudeConfig { model: Some("sonnet".into()), ..Default::default() };
        let fresh = cfg
            .command_line(&Launch {
                max_turns: Some(40),
                result_schema: Some(serde_json::json!({"type":"object"})),
                max_budget_usd: Some(1.5),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(fresh.program, "claude");
        let a = fresh.args.join(" ");
        assert!(
            a.starts_with("-p --output-format stream-json --verbose --include-partial-messages --permission-mode bypassPermissions")
        );
        assert!(a.contains("--max-turns 40"));
        assert!(a.contains("--model sonnet"));
        assert!(a.contains("--json-schema {\"type\":\"object\"}"));
        assert!(a.contains("--max-budget-usd 1.5"));
        assert!(!a.contains("--resume"));
        let resumed = cfg
            .command_line(&Launch { resume_session: Some("abc-123".into()), ..Default::default() })
            .unwrap();
        assert!(resumed.args.contains(&"--resume=abc-123".to_string()));
    }

    #[test]
    fn parses_a_whole_stream() {
        let mut p = ClaudeParser::default();
        let init = r#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-x","tools":["Bash","Edit"]}"#;
        assert_eq!(
            p.parse_line(init),
            vec![AgentEvent::Session {
                id: "s1".into(),
                model: Some("claude-x".into()),
                tools: vec!["Bash".into(), "Edit".into()]
            }]
        );
        let asst = r#"{"type":"assistant","session_id":"s1","message":{"content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}"#;
        let ev = p.parse_line(asst);
        assert_eq!(ev[0], AgentEvent::Text("hi".into()));
        assert!(matches!(&ev[1], AgentEvent::ToolCall { name, .. } if name == "Bash"));
        let user = r#"{"type":"user","session_id":"s1","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a.txt"}],"is_error":false}]}}"#;
        assert_eq!(
            p.parse_line(user),
            vec![AgentEvent::ToolResult { id: "t1".into(), output: "a.txt".into(), is_error: false }]
        );
        let res = r#"{"type":"result","subtype":"success","is_error":false,"num_turns":3,"total_cost_usd":0.25,"usage":{"input_tokens":10,"output_tokens":20,"cache_read_input_tokens":5},"result":"done","session_id":"s1","structured_output":{"verdict":"pass"}}"#;
        let AgentEvent::Result(r) = &p.parse_line(res)[0] else { panic!() };
        assert!(!r.is_error);
        assert_eq!(r.num_turns, Some(3));
        assert_eq!(r.cost_usd, Some(0.25));
        assert_eq!(r.tokens.unwrap().cache_read, 5);
        assert_eq!(r.structured.as_ref().unwrap()["verdict"], "pass");
    }

    #[test]
    fn budget_and_unknown_events() {
        let mut p = ClaudeParser::default();
        let res = r#"{"type":"result","subtype":"error_max_budget_usd","is_error":true,"session_id":"s2"}"#;
        let ev = p.parse_line(res);
        assert!(matches!(&ev[0], AgentEvent::Session { id, .. } if id == "s2"));
        let AgentEvent::Result(r) = &ev[1] else { panic!() };
        assert!(r.budget_exceeded && r.is_error);
        for odd in [r#"{"type":"future_thing"}"#, "not json", "{broken", "[1,2]", r#"{"type":"assistant"}"#] {
            let ev = p.parse_line(odd);
            assert!(matches!(ev.as_slice(), [AgentEvent::Raw(_)]), "{odd}: {ev:?}");
        }
        assert!(p.parse_line("").is_empty());
    }

    #[test]
    fn the_budget_is_exact_and_never_rounded_up() {
        assert_eq!(budget_arg(0.004).as_deref(), Some("0.004"));
        assert_eq!(budget_arg(0.006).as_deref(), Some("0.006"));
        assert_eq!(budget_arg(1.0 / 3.0).as_deref(), Some("0.333333"));
        assert_eq!(budget_arg(2.0 / 3.0).as_deref(), Some("0.666666"), "down, not to nearest");
        assert_eq!(budget_arg(0.57).as_deref(), Some("0.57"));
        assert_eq!(budget_arg(5.0).as_deref(), Some("5"));
        assert_eq!(budget_arg(12.3456789).as_deref(), Some("12.345678"));
        for nothing in [0.0, 0.0000004, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(budget_arg(nothing), None, "{nothing}");
        }
        for usd in [0.004, 0.006, 0.01, 0.57, 1.0 / 3.0, 0.1 + 0.2, 7.77] {
            let shown: f64 = budget_arg(usd).unwrap().parse().unwrap();
            assert!(shown <= usd && usd - shown < 1e-6, "{usd} shown as {shown}");
        }
        let cfg = ClaudeConfig::default();
        let tiny = Launch { max_budget_usd: Some(0.0000001), ..Default::default() };
        assert!(matches!(cfg.command_line(&tiny), Err(AgentError::NoBudgetLeft(_))));
        let small = cfg.command_line(&Launch { max_budget_usd: Some(0.004), ..Default::default() }).unwrap();
        assert!(small.args.windows(2).any(|w| w[0] == "--max-budget-usd" && w[1] == "0.004"), "{small:?}");
    }

    #[test]
    fn assistant_usage_counts_each_message_once_as_an_estimate() {
        let pricing = Pricing(std::collections::BTreeMap::from([(
            "claude-x".to_string(),
            crate::config::Price { input: 1.0, output: 10.0, cache_read: 0.1, cache_write: 2.0 },
        )]));
        let mut p = ClaudeParser::new(pricing, None);
        let block = |text: &str| {
            format!(
                r#"{{"type":"assistant","session_id":"s","message":{{"id":"msg_1","model":"claude-x-1","content":[{{"type":"text","text":"{text}"}}],"usage":{{"input_tokens":1000,"output_tokens":100,"cache_read_input_tokens":10000,"cache_creation_input_tokens":500}}}}}}"#
            )
        };
        let usage = |events: Vec<AgentEvent>| {
            events.into_iter().find_map(|e| match e {
                AgentEvent::Usage { tokens, cost_usd, estimated } => Some((tokens, cost_usd, estimated)),
                _ => None,
            })
        };
        let (tokens, cost, estimated) = usage(p.parse_line(&block("one"))).expect("usage of msg_1");
        assert_eq!(tokens.input, 1000);
        assert_eq!(tokens.cache_creation, 500);
        assert!(estimated);
        // 1000 × $1 + 100 × $10 + 10000 × $0.1 + 500 × $2, per million.
        assert!((cost.unwrap() - 0.004).abs() < 1e-12, "{cost:?}");
        assert_eq!(usage(p.parse_line(&block("two"))), None, "the same message's second block");
    }

    /// Issue 34 item 5: a worker stopped before its `result` (no cost of its own) is estimated at the
    /// price of the model its messages name, under the table `init` writes (only `default`).
    #[test]
    fn a_stopped_worker_is_priced_at_its_own_models_rate() {
        let init = crate::config::Config::parse(crate::config::TEMPLATE).unwrap();
        let mut p = ClaudeParser::new(init.pricing, None);
        let line = r#"{"type":"assistant","session_id":"s","message":{"id":"msg_1","model":"claude-opus-5","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":1000000,"output_tokens":100000}}}"#;
        let cost = p.parse_line(line).into_iter().find_map(|e| match e {
            AgentEvent::Usage { cost_usd, .. } => cost_usd,
            _ => None,
        });
        // 1M × $5 + 100k × $25 per million: Opus 5's rate, not the default's $3/$15 ($4.50).
        assert!((cost.unwrap() - 7.5).abs() < 1e-9, "{cost:?}");
    }

    #[test]
    fn a_message_counts_its_final_output_from_message_delta() {
        let mut p = ClaudeParser::default();
        let start = r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","model":"claude-x","usage":{"input_tokens":10,"cache_read_input_tokens":100,"output_tokens":1}}},"session_id":"s","parent_tool_use_id":null}"#;
        let block = r#"{"type":"assistant","session_id":"s","message":{"id":"msg_1","model":"claude-x","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":10,"cache_read_input_tokens":100,"output_tokens":1}}}"#;
        let delta = r#"{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":250}},"session_id":"s","parent_tool_use_id":null}"#;
        let text = r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"h"}},"session_id":"s","parent_tool_use_id":null}"#;
        let mut total = Tokens::default();
        for line in [start, text, block, block, delta, delta] {
            for e in p.parse_line(line) {
                match e {
                    AgentEvent::Usage { tokens, .. } => total.accumulate(&tokens),
                    AgentEvent::Raw(r) => panic!("stream events are not raw output: {r}"),
                    _ => {}
                }
            }
        }
        assert_eq!(total, Tokens { input: 10, output: 250, cache_read: 100, cache_creation: 0 });
    }

    #[test]
    fn result_tokens_come_from_model_usage() {
        let mut p = ClaudeParser::default();
        let res = r#"{"type":"result","subtype":"success","is_error":false,"session_id":"s","total_cost_usd":0.5,"usage":{"input_tokens":3,"output_tokens":4},"modelUsage":{"claude-a":{"inputTokens":100,"outputTokens":20,"cacheReadInputTokens":1000,"cacheCreationInputTokens":50,"costUSD":0.4},"claude-b":{"inputTokens":7,"outputTokens":2,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"costUSD":0.1}}}"#;
        let ev = p.parse_line(res);
        let r = ev.iter().find_map(|e| if let AgentEvent::Result(r) = e { Some(r) } else { None }).unwrap();
        assert_eq!(r.tokens, Some(Tokens { input: 107, output: 22, cache_read: 1000, cache_creation: 50 }));
        assert_eq!(r.cost_usd, Some(0.5));
    }

    #[test]
    fn a_session_that_cannot_be_resumed_is_recognised() {
        let mut p = ClaudeParser::default();
        let ev = p.parse_line("No conversation found with session ID: 0b5c7e1a-aaaa-bbbb-cccc-1234567890ab");
        assert!(matches!(ev.as_slice(), [AgentEvent::ResumeFailed(_)]), "{ev:?}");
        // The phrase inside the agent's own JSON text is not the CLI's error.
        let text = r#"{"type":"assistant","session_id":"s","message":{"content":[{"type":"text","text":"No conversation found with session ID"}]}}"#;
        assert!(!p.parse_line(text).iter().any(|e| matches!(e, AgentEvent::ResumeFailed(_))));
    }
}
