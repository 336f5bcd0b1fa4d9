//! Anthropic's Messages API as Claude Code uses it: `POST /v1/messages` (Claude Code adds `?beta=true`),
//! streamed (`stream: true`) or not, and `POST /v1/messages/count_tokens`.
//!
//! With `--json-schema` Claude Code offers the model a `StructuredOutput` tool whose input schema is the
//! schema, and asks the model to call it (a text-only answer draws a "[structured-output-enforce]"
//! request); the tool's input becomes the `result` event's `structured_output`.

use axum::http::Method;
use serde_json::{Value, json};

use super::script::{Play, Script, Step, all_text, line_after};
use super::{Reply, Seen, unscripted};

/// The tool Claude Code adds for `--json-schema`.
pub const STRUCTURED_OUTPUT: &str = "StructuredOutput";

pub(super) fn answer(script: &Script, method: &Method, path: &str, body: &Value) -> (Reply, Seen) {
    if method != Method::POST {
        return (error(404, "not_found_error", "no such route"), unscripted("404"));
    }
    match path {
        "/v1/messages/count_tokens" => {
            let tokens = all_text(body).len() / 4 + 1;
            (Reply::json(200, &json!({"input_tokens": tokens})), unscripted("count_tokens"))
        }
        "/v1/messages" => messages(script, body),
        _ => (error(404, "not_found_error", "no such route"), unscripted("404")),
    }
}

fn messages(script: &Script, body: &Value) -> (Reply, Seen) {
    let text = all_text(body.get("messages").unwrap_or(&Value::Null));
    let system = all_text(body.get("system").unwrap_or(&Value::Null));
    let tools: Vec<String> = body
        .get("tools")
        .and_then(Value::as_array)
        .map(|t| t.iter().filter_map(|t| t.get("name")?.as_str().map(String::from)).collect())
        .unwrap_or_default();
    let done = tool_results(body);
    let role = script.role_for(&text);
    let (blocks, stop, played) = match Script::play(role, done) {
        Play::Step(step) => turn(step, &text, &system, &tools, done),
        Play::Done => (vec![json!({"type": "text", "text": "Done."})], "end_turn", "text".to_string()),
        Play::Unscripted => (vec![json!({"type": "text", "text": "OK."})], "end_turn", "unscripted".into()),
    };
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let model = body.get("model").and_then(Value::as_str).unwrap_or("claude-fake").to_string();
    // Distinct per turn, stable across a retry of the same request.
    let id = format!("msg_fake_{}_{done}", role.map(|r| r.name.as_str()).unwrap_or("none"));
    let usage = json!({"input_tokens": text.len() / 4 + 1, "output_tokens": 12,
                       "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    let reply = if stream {
        Reply::sse(&events(&id, &model, &blocks, stop, &usage))
    } else {
        Reply::json(
            200,
            &json!({"id": id, "type": "message", "role": "assistant", "model": model, "content": blocks,
                    "stop_reason": stop, "stop_sequence": null, "usage": usage}),
        )
    };
    let seen =
        Seen { role: role.map(|r| r.name.clone()), step: done, stream, tools, played, ..unscripted("") };
    (reply, seen)
}

/// The content of one scripted turn, its stop reason and what it was.
fn turn(
    step: &Step,
    text: &str,
    system: &str,
    tools: &[String],
    done: usize,
) -> (Vec<Value>, &'static str, String) {
    let tool_use = |name: &str, input: Value| {
        let block =
            json!({"type": "tool_use", "id": format!("toolu_fake_{done}"), "name": name, "input": input});
        (vec![block], "tool_use", format!("tool:{name}"))
    };
    match step {
        Step::Shell(command) => {
            tool_use("Bash", json!({"command": command, "description": "Run a scripted command"}))
        }
        Step::Write { path, content } => {
            // `Write` takes an absolute path: the working directory Claude Code's system text names.
            let cwd = line_after(system, "Primary working directory:")
                .or_else(|| line_after(text, "Primary working directory:"))
                .unwrap_or_else(|| ".".into());
            tool_use("Write", json!({"file_path": format!("{cwd}/{path}"), "content": content}))
        }
        Step::Answer(f) => {
            let value = f(text);
            if tools.iter().any(|t| t == STRUCTURED_OUTPUT) {
                tool_use(STRUCTURED_OUTPUT, value)
            } else {
                (vec![json!({"type": "text", "text": value.to_string()})], "end_turn", "answer".into())
            }
        }
    }
}

/// The `tool_result` blocks in the conversation: how many steps were played.
fn tool_results(body: &Value) -> usize {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else { return 0 };
    messages
        .iter()
        .filter_map(|m| m.get("content")?.as_array())
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        .count()
}

/// A message as the streaming events Anthropic documents: `message_start` (the message with empty
/// content and the input usage), a `ping`, per block `content_block_start` / one `content_block_delta`
/// (`text_delta`, or `input_json_delta` with the tool input as partial JSON) / `content_block_stop`,
/// then `message_delta` (stop reason, output usage) and `message_stop`.
pub fn events(id: &str, model: &str, blocks: &[Value], stop: &str, usage: &Value) -> Vec<Value> {
    let mut out = vec![
        json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant",
               "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
               "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 1,
                         "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}),
        json!({"type": "ping"}),
    ];
    for (index, block) in blocks.iter().enumerate() {
        let (start, delta) = match block.get("type").and_then(Value::as_str) {
            Some("tool_use") => (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            ),
            _ => (json!({"type": "text", "text": ""}), json!({"type": "text_delta", "text": block["text"]})),
        };
        out.push(json!({"type": "content_block_start", "index": index, "content_block": start}));
        out.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        out.push(json!({"type": "content_block_stop", "index": index}));
    }
    out.push(json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                    "usage": {"output_tokens": usage["output_tokens"]}}));
    out.push(json!({"type": "message_stop"}));
    out
}

fn error(status: u16, kind: &str, message: &str) -> Reply {
    Reply::json(status, &json!({"type": "error", "error": {"type": kind, "message": message}}))
}
