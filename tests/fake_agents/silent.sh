#!/bin/sh
# Says hello, then goes silent: trips the idle watchdog.
cat > /dev/null
printf '%s\n' '{"type":"system","subtype":"init","session_id":"silent-1","model":"claude-fake-1","tools":[]}'
exec sleep 1000
