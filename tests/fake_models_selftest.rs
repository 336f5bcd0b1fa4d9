//! The fake model APIs answer as the real ones do, and play their scripts step by step: checked over
//! real HTTP on loopback, the way the agent CLIs call them.

mod fake_models;

use fake_models::{Api, FakeModel, Role, Script, Step, comment_ids};
use serde_json::{Value, json};

fn script() -> Script {
    Script::new(vec![Role::new(
        "queued",
        "one task from a backlog",
        vec![
            Step::write("feature.txt", "the feature\n"),
            Step::shell("git commit -am work"),
            Step::answer(|text| json!({"summary": "done", "saw_comment": text.contains("### Comment `c1`")})),
        ],
    )])
}

/// The `data:` payloads of a server-sent event stream, each checked against its `event:` line.
fn events(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let kind = e.lines().find_map(|l| l.strip_prefix("event: ")).expect("an event line");
            let data = e.lines().find_map(|l| l.strip_prefix("data: ")).expect("a data line");
            let v: Value = serde_json::from_str(data).expect("JSON data");
            assert_eq!(v["type"], kind, "the event name is the data's type");
            v
        })
        .collect()
}

async fn post(url: &str, body: Value) -> (u16, String, String) {
    let r = reqwest::Client::new()
        .post(url)
        .header("x-api-key", "key-a")
        .header("authorization", "Bearer key-o")
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let ct = r.headers().get("content-type").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
    (status, ct, r.text().await.unwrap())
}

fn claude_request(results: usize, structured: bool) -> Value {
    let mut messages = vec![json!({"role": "user", "content": [{"type": "text",
        "text": "You work on one task from a backlog.\n### Comment `c1` by alex"}]})];
    for i in 0..results {
        messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": format!("t{i}"), "name": "Bash", "input": {}}]}));
        messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "ok"}]}));
    }
    let mut tools = vec![json!({"name": "Bash"}), json!({"name": "Write"})];
    if structured {
        tools.push(json!({"name": "StructuredOutput", "input_schema": {"type": "object"}}));
    }
    json!({"model": "claude-x", "stream": true, "max_tokens": 100, "messages": messages,
           "system": [{"type": "text", "text": "Primary working directory: /work/tree"}], "tools": tools})
}

#[tokio::test]
async fn the_anthropic_fake_streams_each_step_in_the_documented_event_order() {
    let model = FakeModel::start(Api::Anthropic, script());
    let url = format!("{}/v1/messages?beta=true", model.origin());

    let (status, ct, body) = post(&url, claude_request(0, true)).await;
    assert_eq!((status, ct.as_str()), (200, "text/event-stream"));
    let evs = events(&body);
    let kinds: Vec<&str> = evs.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(evs[0]["message"]["content"], json!([]));
    assert_eq!(evs[2]["content_block"]["name"], "Write");
    assert_eq!(evs[3]["delta"]["type"], "input_json_delta");
    let input: Value = serde_json::from_str(evs[3]["delta"]["partial_json"].as_str().unwrap()).unwrap();
    assert_eq!(input, json!({"file_path": "/work/tree/feature.txt", "content": "the feature\n"}));
    assert_eq!(evs[5]["delta"]["stop_reason"], "tool_use");

    let evs = events(&post(&url, claude_request(1, true)).await.2);
    assert_eq!(evs[2]["content_block"]["name"], "Bash");

    // The answer goes through the schema's tool when the CLI offers it, else as the final text.
    let evs = events(&post(&url, claude_request(2, true)).await.2);
    assert_eq!(evs[2]["content_block"]["name"], "StructuredOutput");
    let input: Value = serde_json::from_str(evs[3]["delta"]["partial_json"].as_str().unwrap()).unwrap();
    assert_eq!(input, json!({"summary": "done", "saw_comment": true}));
    let evs = events(&post(&url, claude_request(2, false)).await.2);
    assert_eq!(evs[3]["delta"]["type"], "text_delta");
    assert_eq!(evs[5]["delta"]["stop_reason"], "end_turn");

    // After the last step, a plain end of turn; a request for no role is answered and logged as such.
    let evs = events(&post(&url, claude_request(3, true)).await.2);
    assert_eq!(evs[3]["delta"]["text"], "Done.");
    let mut other = claude_request(0, false);
    other["stream"] = json!(false);
    other["messages"] = json!([{"role": "user", "content": "Write a title for this conversation"}]);
    let (status, _, body) = post(&url, other).await;
    let message: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (status, message["type"].as_str(), message["content"][0]["type"].as_str()),
        (200, Some("message"), Some("text"))
    );

    let (status, _, body) =
        post(&format!("{}/v1/messages/count_tokens", model.origin()), claude_request(0, false)).await;
    assert_eq!(status, 200);
    assert!(serde_json::from_str::<Value>(&body).unwrap()["input_tokens"].as_u64().unwrap() > 0);

    let seen = model.seen();
    let played: Vec<&str> = seen.iter().map(|s| s.played.as_str()).collect();
    assert_eq!(
        played,
        ["tool:Write", "tool:Bash", "tool:StructuredOutput", "answer", "text", "unscripted", "count_tokens"]
    );
    assert_eq!(seen[0].role.as_deref(), Some("queued"));
    assert_eq!(seen[0].path, "/v1/messages");
    assert_eq!(seen[0].credential.as_deref(), Some("key-a"));
}

fn codex_request(outputs: usize, code_mode: bool) -> Value {
    let tools = if code_mode {
        json!([{"type": "namespace", "name": "functions", "tools": [{"type": "custom", "name": "exec"}]}])
    } else {
        json!([{"type": "function", "name": "exec_command"}])
    };
    let mut input = vec![
        json!({"type": "additional_tools", "role": "developer", "tools": tools}),
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "one task from a backlog"}]}),
    ];
    for i in 0..outputs {
        input.push(
            json!({"type": "custom_tool_call", "call_id": format!("c{i}"), "name": "exec", "input": "…"}),
        );
        input.push(json!({"type": "custom_tool_call_output", "call_id": format!("c{i}"), "output": "ok"}));
    }
    json!({"model": "gpt-x", "stream": true, "input": input, "tools": []})
}

#[tokio::test]
async fn the_openai_fake_streams_responses_events_with_codex_tools() {
    let model = FakeModel::start(Api::OpenAi, script());
    let url = format!("{}/responses", model.v1());

    let (status, ct, body) = post(&url, codex_request(0, true)).await;
    assert_eq!((status, ct.as_str()), (200, "text/event-stream"));
    let evs = events(&body);
    let kinds: Vec<&str> = evs.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["response.created", "response.output_item.added", "response.output_item.done", "response.completed"]
    );
    let item = &evs[2]["item"];
    assert_eq!((item["type"].as_str(), item["name"].as_str()), (Some("custom_tool_call"), Some("exec")));
    let js = item["input"].as_str().unwrap();
    assert!(js.contains("await tools.apply_patch(\"*** Begin Patch\\n*** Add File: feature.txt\\n+the feature\\n*** End Patch\\n\")"), "{js}");
    let usage = &evs[3]["response"]["usage"];
    for key in ["input_tokens", "output_tokens", "total_tokens"] {
        assert!(usage[key].as_u64().is_some(), "{key}: {usage}");
    }
    assert!(usage["input_tokens_details"]["cached_tokens"].is_u64());
    assert!(usage["output_tokens_details"]["reasoning_tokens"].is_u64());

    let evs = events(&post(&url, codex_request(1, true)).await.2);
    assert!(
        evs[2]["item"]["input"]
            .as_str()
            .unwrap()
            .contains("await tools.exec_command({cmd: \"git commit -am work\"})")
    );

    // Without code mode the command tool is called as a function.
    let evs = events(&post(&url, codex_request(1, false)).await.2);
    let item = &evs[2]["item"];
    assert_eq!((item["type"].as_str(), item["name"].as_str()), (Some("function_call"), Some("exec_command")));
    let args: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"cmd": "git commit -am work"}));

    let evs = events(&post(&url, codex_request(2, true)).await.2);
    let kinds: Vec<&str> = evs.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"response.output_text.delta"), "{kinds:?}");
    let item = &evs.iter().find(|e| e["type"] == "response.output_item.done").unwrap()["item"];
    assert_eq!((item["type"].as_str(), item["role"].as_str()), (Some("message"), Some("assistant")));
    let answer: Value = serde_json::from_str(item["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(answer["summary"], "done");

    let (status, _, _) = post(&format!("{}/models", model.v1()), json!({})).await;
    assert_eq!(status, 404);
    let played: Vec<String> = model.seen().iter().map(|s| s.played.clone()).collect();
    assert_eq!(played, ["tool:apply_patch", "tool:exec_command", "tool:exec_command", "answer", "404"]);
    assert!(model.seen()[0].tools.contains(&"exec".to_string()));
    assert_eq!(model.seen()[0].credential.as_deref(), Some("Bearer key-o"));
}

#[test]
fn comment_ids_are_read_from_a_fix_comments_prompt() {
    let prompt = "## Unresolved comments (2)\n\n### Comment `c17` by alex\n\nfix\n\n### Comment `42` by bo on x.rs line 3";
    assert_eq!(comment_ids(prompt), ["c17", "42"]);
}
