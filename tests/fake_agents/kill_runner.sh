#!/bin/sh
# The first time it runs, kills the runner that started it, right away; then works as pipeline.sh.
# Each start and end is appended to $FAKE_TRACE with the run id and pid, to count live agents.
[ -e "$FAKE_KILLED" ] || { : > "$FAKE_KILLED"; kill -9 "$PPID"; }
echo "start $EXECUTOR_RUN_ID $$" >> "$FAKE_TRACE"
"$(dirname "$0")/pipeline.sh"
status=$?
echo "end $EXECUTOR_RUN_ID $$" >> "$FAKE_TRACE"
exit $status
