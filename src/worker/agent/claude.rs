//! Claude Code in print mode: `claude -p --output-format stream-json --verbose`, one JSON event a line.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    AgentEvent, AgentResult, CommandLine, Launch, OutputParser, Tokens, json_object, str_field, u64_field,
};

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
    pub(super) fn command_line(&self, launch: &Launch) -> CommandLine {
        let mut args: Vec<String> =
            ["-p", "--output-format", "stream-json", "--verbose"].map(String::from).to_vec();
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
            args.extend(["--max-budget-usd".into(), format!("{usd:.2}")]);
        }
        args.extend(self.extra_args.iter().cloned());
        CommandLine { program: self.program.clone(), args }
    }
}

/// Parses stream-json events. Remembers the session id so a change (or a stream without an `init`
/// event) is still reported once.
#[derive(Debug, Default)]
pub struct ClaudeParser {
    session_id: Option<String>,
}

impl OutputParser for ClaudeParser {
    fn parse_line(&mut self, line: &str) -> Vec<AgentEvent> {
        let Some(map) = json_object(line) else {
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
            "assistant" => content_blocks(&event, &mut out, assistant_block),
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
    let tokens = event.get("usage").filter(|u| u.is_object()).map(|u| Tokens {
        input: u64_field(u, "input_tokens"),
        output: u64_field(u, "output_tokens"),
        cache_read: u64_field(u, "cache_read_input_tokens"),
        cache_creation: u64_field(u, "cache_creation_input_tokens"),
    });
    AgentResult {
        is_error: event.get("is_error").and_then(Value::as_bool).unwrap_or(subtype != "success"),
        budget_exceeded: subtype == "error_max_budget_usd",
        num_turns: event.get("num_turns").and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()),
        cost_usd: event.get("total_cost_usd").and_then(Value::as_f64),
        tokens,
        text: str_field(event, "result"),
        structured: event.get("structured_output").filter(|v| !v.is_null()).cloned(),
        session_id: str_field(event, "session_id").or(known_session),
        subtype,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_a_fresh_and_a_resumed_command_line() {
        let cfg = ClaudeConfig { model: Some("sonnet".into()), ..Default::default() };
        let fresh = cfg.command_line(&Launch {
            max_turns: Some(40),
            result_schema: Some(serde_json::json!({"type":"object"})),
            max_budget_usd: Some(1.5),
            ..Default::default()
        });
        assert_eq!(fresh.program, "claude");
        let a = fresh.args.join(" ");
        assert!(
            a.starts_with("-p --output-format stream-json --verbose --permission-mode bypassPermissions")
        );
        assert!(a.contains("--max-turns 40"));
        assert!(a.contains("--model sonnet"));
        assert!(a.contains("--json-schema {\"type\":\"object\"}"));
        assert!(a.contains("--max-budget-usd 1.50"));
        assert!(!a.contains("--resume"));
        let resumed =
            cfg.command_line(&Launch { resume_session: Some("abc-123".into()), ..Default::default() });
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
}
