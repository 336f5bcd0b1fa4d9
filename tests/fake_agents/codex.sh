#!/bin/sh
# Plays `codex exec --json`: JSONL thread events. `turn.completed.usage` is the thread's running total.
if [ -n "$FAKE_PROMPT_FILE" ]; then cat > "$FAKE_PROMPT_FILE"; else cat > /dev/null; fi
if [ -n "$FAKE_ARGS_FILE" ]; then printf '%s\n' "$@" > "$FAKE_ARGS_FILE"; fi
TID="${FAKE_SESSION:-0199a213-81c0-7800-8aa1-bbab2a035a53}"
printf '%s\n' "{\"type\":\"thread.started\",\"thread_id\":\"$TID\"}"
printf '%s\n' '{"type":"turn.started"}'
printf '%s\n' '{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Looking at the repository**"}}'
printf '%s\n' '{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}'
printf '%s\n' '{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"README.md\nsrc\n","exit_code":0,"status":"completed"}}'
printf '%s\n' '{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"src/app.js","kind":"update"}],"status":"completed"}}'
printf '%s\n' '{"type":"turn.completed","usage":{"input_tokens":1200,"cached_input_tokens":200,"output_tokens":345}}'
printf '%s\n' '{"type":"turn.started"}'
printf '%s\n' '{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Updated src/app.js and ran the tests."}}'
printf '%s\n' '{"type":"turn.completed","usage":{"input_tokens":1500,"cached_input_tokens":200,"output_tokens":400}}'
