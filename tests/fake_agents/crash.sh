#!/bin/sh
# Starts a stream, stops in the middle of an event.
cat > /dev/null
printf '%s\n' '{"type":"system","subtype":"init","session_id":"crash-1","model":"claude-fake-1","tools":[]}'
printf '%s\n' '{"type":"assistant","session_id":"crash-1","message":{"content":[{"type":"text","text":"Working on it"}]}}'
printf '{"type":"assistant","session_id":"crash-1","message":{"content":[{"type":"te'
if [ "$FAKE_CRASH" = "exit" ]; then exit 3; fi
kill -9 $$
