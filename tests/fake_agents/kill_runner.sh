#!/bin/sh
# The first time it runs, creates $FAKE_KILLED — the test then kills the runner that started it (a
# contained agent cannot signal it) — and waits (10 s at most) until that runner is gone; then works as
# pipeline.sh. Each start and end is appended to $FAKE_TRACE with the run id and pid, to count live agents.
if [ ! -e "$FAKE_KILLED" ]; then
  : > "$FAKE_KILLED"
  i=0
  while [ -d "/proc/$PPID" ] && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
fi
echo "start $EXECUTOR_RUN_ID $$" >> "$FAKE_TRACE"
"$(dirname "$0")/pipeline.sh"
status=$?
echo "end $EXECUTOR_RUN_ID $$" >> "$FAKE_TRACE"
exit $status
