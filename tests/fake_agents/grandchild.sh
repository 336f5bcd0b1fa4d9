#!/bin/sh
# Leaves a grandchild behind that would outlive it; the supervisor must kill the whole group.
cat > /dev/null
sleep 1000 &
echo $! > "$FAKE_PID_FILE"
echo 'started a background helper'
printf '%s\n' '{"summary":"left a process behind"}'
exit 0
