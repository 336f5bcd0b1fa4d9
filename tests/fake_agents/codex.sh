#!/bin/sh
# Plays `codex exec --json`: JSONL thread events on stdout, where `turn.completed.usage` is the thread's
# running total, and, when CODEX_HOME is set, the session file Codex writes as it works:
# `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl`, a `token_count` event after every
# model request. A resumed thread appends to its file, its totals continuing from the last one there.
if [ -n "$FAKE_PROMPT_FILE" ]; then cat > "$FAKE_PROMPT_FILE"; else cat > /dev/null; fi
if [ -n "$FAKE_ARGS_FILE" ]; then printf '%s\n' "$@" > "$FAKE_ARGS_FILE"; fi
TID="${FAKE_SESSION:-0199a213-81c0-7800-8aa1-bbab2a035a53}"
prev=""
for a in "$@"; do
  if [ "$prev" = "resume" ]; then TID="$a"; fi
  prev="$a"
done
ROLL=""
IN=0; CACHED=0; OUT=0
if [ -n "$CODEX_HOME" ]; then
  ROLL=$(find "$CODEX_HOME/sessions" -name "rollout-*-$TID.jsonl" 2>/dev/null | head -n 1)
  if [ -n "$ROLL" ]; then
    # Codex restores the thread's token counts from its last `token_count` event.
    set -- $(grep '"token_count"' "$ROLL" | tail -n 1 |
      sed 's/.*"total_token_usage":{"input_tokens":\([0-9]*\),"cached_input_tokens":\([0-9]*\),"output_tokens":\([0-9]*\).*/\1 \2 \3/')
    IN=${1:-0}; CACHED=${2:-0}; OUT=${3:-0}
  else
    DIR="$CODEX_HOME/sessions/$(date +%Y/%m/%d)"
    mkdir -p "$DIR"
    ROLL="$DIR/rollout-$(date +%Y-%m-%dT%H-%M-%S)-$TID.jsonl"
    printf '%s\n' "{\"timestamp\":\"$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)\",\"type\":\"session_meta\",\"payload\":{\"id\":\"$TID\",\"timestamp\":\"$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)\",\"cwd\":\"$PWD\",\"originator\":\"codex_exec\",\"cli_version\":\"0.46.0\",\"instructions\":null}}" > "$ROLL"
  fi
fi
# One model request: its usage is added to the thread's total and written to the session file.
request() {
  IN=$((IN + $1)); CACHED=$((CACHED + $2)); OUT=$((OUT + $3))
  if [ -n "$ROLL" ]; then
    printf '%s\n' "{\"timestamp\":\"$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)\",\"type\":\"event_msg\",\"payload\":{\"type\":\"token_count\",\"info\":{\"total_token_usage\":{\"input_tokens\":$IN,\"cached_input_tokens\":$CACHED,\"output_tokens\":$OUT,\"reasoning_output_tokens\":0,\"total_tokens\":$((IN + OUT))},\"last_token_usage\":{\"input_tokens\":$1,\"cached_input_tokens\":$2,\"output_tokens\":$3,\"reasoning_output_tokens\":0,\"total_tokens\":$(($1 + $3))},\"model_context_window\":272000},\"rate_limits\":{\"primary\":{\"used_percent\":1.0,\"window_minutes\":300,\"resets_in_seconds\":1000},\"secondary\":null}}}" >> "$ROLL"
  fi
}
completed() {
  printf '%s\n' "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":$IN,\"cached_input_tokens\":$CACHED,\"output_tokens\":$OUT}}"
}
printf '%s\n' "{\"type\":\"thread.started\",\"thread_id\":\"$TID\"}"
printf '%s\n' '{"type":"turn.started"}'
request 600 100 200
printf '%s\n' '{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Looking at the repository**"}}'
printf '%s\n' '{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}'
printf '%s\n' '{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"README.md\nsrc\n","exit_code":0,"status":"completed"}}'
request 600 100 145
printf '%s\n' '{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"src/app.js","kind":"update"}],"status":"completed"}}'
if [ -n "$FAKE_ENDLESS_TURN" ]; then
  # A turn that never ends: a model request every 0.2 s, each seen only in the session file (and a
  # command's output on stdout, so the idle watchdog does not fire).
  while :; do
    sleep 0.2
    request 600 100 100
    printf '%s\n' '{"type":"item.completed","item":{"id":"item_9","type":"command_execution","command":"bash -lc make","aggregated_output":"…","exit_code":0,"status":"completed"}}'
  done
fi
completed
printf '%s\n' '{"type":"turn.started"}'
request 300 0 55
printf '%s\n' '{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Updated src/app.js and ran the tests."}}'
completed
