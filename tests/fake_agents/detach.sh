#!/bin/sh
# Leaves a process of its own session behind, as Claude Code runs each Bash tool command (setsid): it
# writes its pid to $FAKE_PID_FILE, sleeps $FAKE_DELAY seconds (default 2), then writes $FAKE_MARKER and
# commits in the agent's working directory. The worker must be stopped before that, the child with it.
# FAKE_EXIT=1: the agent exits as soon as the child has started; otherwise it waits until it is stopped.
# FAKE_HIDE=1: the child hides as well as it can (see hide.sh).
cat > /dev/null
here=$(dirname "$0")
if [ "${FAKE_HIDE:-}" = 1 ]; then
  setsid "$here/hide.sh" < /dev/null > /dev/null 2>&1 &
else
  setsid sh -c '
    echo $$ > "$FAKE_PID_FILE.tmp" && mv "$FAKE_PID_FILE.tmp" "$FAKE_PID_FILE"
    sleep "${FAKE_DELAY:-2}"
    echo escaped > "$FAKE_MARKER"
    git commit -q --allow-empty -m "committed by a detached child" 2>/dev/null
  ' < /dev/null > /dev/null 2>&1 &
fi
while [ ! -s "$FAKE_PID_FILE" ]; do sleep 0.05; done
printf '%s\n' '{"summary":"started a detached helper"}'
[ "${FAKE_EXIT:-}" = 1 ] && exit 0
while :; do sleep 1; done
