#!/bin/sh
# A `command` agent that works for FAKE_SLEEP seconds (default 30) after printing progress — a JSON line
# among it — and then prints its result line.
cat > /dev/null
echo "working"
printf '%s\n' '{"progress": 1}'
sleep "${FAKE_SLEEP:-30}"
printf '%s\n' '{"summary": "done"}'
