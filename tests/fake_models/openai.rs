//! OpenAI's Responses API as Codex 0.171 uses it: `POST /v1/responses` with `stream: true`, answered
//! with server-sent events — `response.created`, per output item `response.output_item.added` and
//! `response.output_item.done`, and `response.completed` whose `response.usage` Codex reads
//! (`input_tokens`, `input_tokens_details.cached_tokens`, `output_tokens`,
//! `output_tokens_details.reasoning_tokens`, `total_tokens`). A stream that ends without
//! `response.completed` is an error to Codex ("stream closed before response.completed").
//!
//! Codex 0.171 offers its tools in "code mode": one freeform (custom) tool `exec` whose input is
//! JavaScript that calls the nested tools (`await tools.exec_command({cmd})`,
//! `await tools.apply_patch(patch)`), listed in an `additional_tools` input item rather than in
//! `tools`. Where a request offers `exec_command` directly as a function, that is called instead.

use axum::http::Method;
use serde_json::{Value, json};

use super::script::{Play, Script, Step, all_text};
use super::{Reply, Seen, unscripted};

pub(super) fn answer(script: &Script, method: &Method, path: &str, body: &Value) -> (Reply, Seen) {
    match (method.as_str(), path) {
        ("POST", "/v1/responses") => responses(script, body),
        _ => (
            Reply::json(
                404,
                &json!({"error": {"message": "no such route", "type": "invalid_request_error", "code": null}}),
            ),
            unscripted("404"),
        ),
    }
}

fn responses(script: &Script, body: &Value) -> (Reply, Seen) {
    let input = body.get("input").unwrap_or(&Value::Null);
    let text = all_text(input);
    let tools = tool_names(body);
    let done = tool_outputs(input);
    let role = script.role_for(&text);
    let code_mode = tools.iter().any(|t| t == "exec");
    let (item, played) = match Script::play(role, done) {
        Play::Step(step) => turn(step, &text, code_mode, done),
        Play::Done => (message("Done.", done), "text".to_string()),
        Play::Unscripted => (message("OK.", done), "unscripted".to_string()),
    };
    let id = format!("resp_fake_{}_{done}", role.map(|r| r.name.as_str()).unwrap_or("none"));
    let model = body.get("model").and_then(Value::as_str).unwrap_or("gpt-fake").to_string();
    let usage = json!({"input_tokens": text.len() / 4 + 1, "input_tokens_details": {"cached_tokens": 0},
                       "output_tokens": 12, "output_tokens_details": {"reasoning_tokens": 0},
                       "total_tokens": text.len() / 4 + 13});
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let seen =
        Seen { role: role.map(|r| r.name.clone()), step: done, stream, tools, played, ..unscripted("") };
    (Reply::sse(&events(&id, &model, &item, &usage)), seen)
}

/// One scripted output item and what it was.
fn turn(step: &Step, text: &str, code_mode: bool, done: usize) -> (Value, String) {
    let call_id = format!("call_fake_{done}");
    match step {
        Step::Shell(command) if code_mode => {
            let js = format!(
                "const r = await tools.exec_command({{cmd: {cmd}}});\ntext(r.output);\ntext(\"exit \" + r.exit_code);\n",
                cmd = Value::String(command.clone())
            );
            (custom_call(&call_id, "exec", &js), "tool:exec_command".into())
        }
        Step::Shell(command) => {
            let arguments = json!({"cmd": command}).to_string();
            let item = json!({"type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id,
                              "name": "exec_command", "arguments": arguments, "status": "completed"});
            (item, "tool:exec_command".into())
        }
        Step::Write { path, content } => {
            let patch = add_file_patch(path, content);
            if code_mode {
                let js = format!(
                    "const r = await tools.apply_patch({patch});\ntext(JSON.stringify(r));\n",
                    patch = Value::String(patch)
                );
                (custom_call(&call_id, "exec", &js), "tool:apply_patch".into())
            } else {
                (custom_call(&call_id, "apply_patch", &patch), "tool:apply_patch".into())
            }
        }
        Step::Answer(f) => (message(&f(text).to_string(), done), "answer".into()),
    }
}

/// `apply_patch`'s format for a new file: every line prefixed with `+`.
fn add_file_patch(path: &str, content: &str) -> String {
    let mut patch = format!("*** Begin Patch\n*** Add File: {path}\n");
    for line in content.lines() {
        patch.push_str(&format!("+{line}\n"));
    }
    patch.push_str("*** End Patch\n");
    patch
}

fn custom_call(call_id: &str, name: &str, input: &str) -> Value {
    json!({"type": "custom_tool_call", "id": format!("ctc_{call_id}"), "call_id": call_id, "name": name,
           "input": input, "status": "completed"})
}

fn message(text: &str, done: usize) -> Value {
    json!({"type": "message", "id": format!("msg_fake_{done}"), "role": "assistant", "status": "completed",
           "content": [{"type": "output_text", "text": text, "annotations": []}]})
}

/// The names of the tools offered: `tools`, and the nested ones of `additional_tools` input items
/// (namespaces flattened).
fn tool_names(body: &Value) -> Vec<String> {
    fn walk(tools: &Value, out: &mut Vec<String>) {
        for t in tools.as_array().into_iter().flatten() {
            if let Some(inner) = t.get("tools") {
                walk(inner, out);
            } else if let Some(name) = t.get("name").and_then(Value::as_str) {
                out.push(name.to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(body.get("tools").unwrap_or(&Value::Null), &mut out);
    for item in body.get("input").and_then(Value::as_array).into_iter().flatten() {
        if item.get("type").and_then(Value::as_str) == Some("additional_tools") {
            walk(item.get("tools").unwrap_or(&Value::Null), &mut out);
        }
    }
    out
}

/// Tool outputs in the input (`function_call_output`, `custom_tool_call_output`): the steps played.
fn tool_outputs(input: &Value) -> usize {
    input
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| {
            matches!(
                i.get("type").and_then(Value::as_str),
                Some("function_call_output" | "custom_tool_call_output")
            )
        })
        .count()
}

/// The events of one response holding `item`.
pub fn events(id: &str, model: &str, item: &Value, usage: &Value) -> Vec<Value> {
    // An item begins in progress; a message's text arrives by deltas after it.
    let mut added = item.clone();
    added["status"] = json!("in_progress");
    if added.get("content").is_some() {
        added["content"] = json!([]);
    }
    let created =
        json!({"id": id, "object": "response", "status": "in_progress", "model": model, "output": []});
    let completed = json!({"id": id, "object": "response", "status": "completed", "model": model,
                           "output": [item], "usage": usage});
    let mut out = vec![
        json!({"type": "response.created", "sequence_number": 0, "response": created}),
        json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": added}),
    ];
    if item.get("type").and_then(Value::as_str) == Some("message") {
        let text = item.pointer("/content/0/text").cloned().unwrap_or(json!(""));
        out.push(json!({"type": "response.output_text.delta", "sequence_number": 2, "item_id": item["id"],
                        "output_index": 0, "content_index": 0, "delta": text}));
    }
    out.push(
        json!({"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": item}),
    );
    out.push(json!({"type": "response.completed", "sequence_number": 4, "response": completed}));
    out
}
