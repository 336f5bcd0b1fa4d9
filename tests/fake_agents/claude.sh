#!/bin/sh
# Plays Claude Code's stream-json output. See README.md for the knobs.
if [ -n "$FAKE_PROMPT_FILE" ]; then cat > "$FAKE_PROMPT_FILE"; else cat > /dev/null; fi
if [ -n "$FAKE_ARGS_FILE" ]; then printf '%s\n' "$@" > "$FAKE_ARGS_FILE"; fi
SID="${FAKE_SESSION:-sess-1234-abcd}"
if [ -n "$FAKE_NO_SESSION" ]; then
  # What Claude Code says (on stderr) when --resume names a session it does not have.
  echo "No conversation found with session ID: $FAKE_NO_SESSION" >&2
  exit 1
fi
# Per-message usage, as Claude Code repeats it on each content block's event of one message: what
# `message_start` said, with (almost) no output yet. The final usage comes in `message_delta`, which
# is printed only with --include-partial-messages.
USAGE='"usage":{"input_tokens":1000,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":1,"service_tier":"standard"}'
FINAL='"usage":{"input_tokens":1000,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":200}'
MODEL='"model":"claude-fake-1"'
PARTIAL=""
for a in "$@"; do
  if [ "$a" = "--include-partial-messages" ]; then PARTIAL=1; fi
done
# Stream events of a message (with --include-partial-messages): `started ID` before its content,
# `ended` after it.
started() {
  [ -n "$PARTIAL" ] || return 0
  printf '%s\n' "{\"type\":\"stream_event\",\"event\":{\"type\":\"message_start\",\"message\":{\"id\":\"$1\",\"type\":\"message\",\"role\":\"assistant\",$MODEL,\"content\":[],\"stop_reason\":null,$USAGE}},\"session_id\":\"$SID\",\"parent_tool_use_id\":null,\"uuid\":\"u-$1-a\"}"
  printf '%s\n' "{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"I will\"}},\"session_id\":\"$SID\",\"parent_tool_use_id\":null,\"uuid\":\"u-$1-b\"}"
}
ended() {
  [ -n "$PARTIAL" ] || return 0
  printf '%s\n' "{\"type\":\"stream_event\",\"event\":{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},$FINAL},\"session_id\":\"$SID\",\"parent_tool_use_id\":null,\"uuid\":\"u-d\"}"
  printf '%s\n' "{\"type\":\"stream_event\",\"event\":{\"type\":\"message_stop\"},\"session_id\":\"$SID\",\"parent_tool_use_id\":null,\"uuid\":\"u-s\"}"
}
pause() {
  if [ -n "$FAKE_SLEEP" ]; then
    i=0
    while [ "$i" -lt "$FAKE_SLEEP" ]; do
      sleep 1
      printf '%s\n' "{\"type\":\"system\",\"subtype\":\"heartbeat\",\"session_id\":\"$SID\"}"
      i=$((i + 1))
    done
  fi
}
printf '%s\n' "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"$SID\",\"model\":\"claude-fake-1\",\"tools\":[\"Bash\",\"Edit\",\"Read\"],\"cwd\":\"$PWD\"}"
pause
started msg_1
printf '%s\n' "{\"type\":\"assistant\",\"session_id\":\"$SID\",\"message\":{\"id\":\"msg_1\",$MODEL,\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"I will look at the repository first.\"}],$USAGE}}"
printf '%s\n' "{\"type\":\"assistant\",\"session_id\":\"$SID\",\"message\":{\"id\":\"msg_1\",$MODEL,\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"toolu_01\",\"name\":\"Bash\",\"input\":{\"command\":\"ls -la\",\"description\":\"List files\"}}],$USAGE}}"
ended
if [ -n "$FAKE_HANG" ]; then
  # The tool runs forever (a heartbeat keeps the idle watchdog away): only a timeout or a cap ends it.
  while :; do
    sleep 0.2
    printf '%s\n' "{\"type\":\"system\",\"subtype\":\"heartbeat\",\"session_id\":\"$SID\"}"
  done
fi
# The tool "runs" a moment, then the agent thinks in silence (adoption tests).
if [ -n "$FAKE_QUIET" ]; then sleep 0.3; fi
SECRET_LINE=""
if [ -n "$FAKE_ECHO_ENV" ]; then
  eval "SECRET_LINE=\"\$$FAKE_ECHO_ENV\""
fi
printf '%s\n' "{\"type\":\"user\",\"session_id\":\"$SID\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_01\",\"content\":\"total 8\\nREADME.md\\ntoken=$SECRET_LINE\",\"is_error\":false}]}}"
if [ -n "$FAKE_QUIET" ]; then sleep "$FAKE_QUIET"; fi
if [ "$FAKE_COMMIT" = "1" ]; then
  echo "made by the fake agent" > fake-agent-change.txt
  git add fake-agent-change.txt && git commit -q -m "Fake agent change" > /dev/null 2>&1
  printf '%s\n' "{\"type\":\"assistant\",\"session_id\":\"$SID\",\"message\":{\"content\":[{\"type\":\"tool_use\",\"id\":\"toolu_02\",\"name\":\"Bash\",\"input\":{\"command\":\"git commit -m 'Fake agent change'\"}}]}}"
  printf '%s\n' "{\"type\":\"user\",\"session_id\":\"$SID\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_02\",\"content\":[{\"type\":\"text\",\"text\":\"[executor/1207 abc1234] Fake agent change\"}]}]}}"
fi
pause
started msg_2
printf '%s\n' "{\"type\":\"assistant\",\"session_id\":\"$SID\",\"message\":{\"id\":\"msg_2\",$MODEL,\"content\":[{\"type\":\"text\",\"text\":\"Done: the change is committed.\"}],$USAGE}}"
ended
SUBTYPE="${FAKE_SUBTYPE:-success}"
IS_ERROR=false
[ "$SUBTYPE" = "success" ] || IS_ERROR=true
STRUCT=""
if [ -n "$FAKE_STRUCTURED" ]; then STRUCT=",\"structured_output\":$FAKE_STRUCTURED"; fi
printf '%s\n' "{\"type\":\"result\",\"subtype\":\"$SUBTYPE\",\"is_error\":$IS_ERROR,\"duration_ms\":1234,\"num_turns\":3,\"result\":\"Done: the change is committed.\",\"session_id\":\"$SID\",\"total_cost_usd\":${FAKE_COST:-0.1234},\"usage\":{\"input_tokens\":15,\"cache_creation_input_tokens\":1,\"cache_read_input_tokens\":20,\"output_tokens\":3},\"modelUsage\":{\"claude-fake-1\":{\"inputTokens\":1400,\"outputTokens\":300,\"cacheReadInputTokens\":2000,\"cacheCreationInputTokens\":100,\"webSearchRequests\":0,\"costUSD\":0.12,\"contextWindow\":200000},\"claude-fake-haiku\":{\"inputTokens\":100,\"outputTokens\":21,\"cacheReadInputTokens\":0,\"cacheCreationInputTokens\":0,\"webSearchRequests\":0,\"costUSD\":0.0034,\"contextWindow\":200000}}$STRUCT}"
