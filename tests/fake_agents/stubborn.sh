#!/bin/sh
# Ignores SIGTERM (and so do its children): only SIGKILL after the grace period stops it.
trap '' TERM
cat > /dev/null
printf '%s\n' '{"type":"system","subtype":"init","session_id":"stubborn-1","model":"claude-fake-1","tools":[]}'
while :; do sleep 1; done
