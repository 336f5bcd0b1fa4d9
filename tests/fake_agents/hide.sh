#!/bin/sh
# A detached child (see detach.sh) that hides from whoever would stop it: it tries to move itself out of
# its cgroup (to the root of the cgroup v2 hierarchy), writing `left` or `stayed` to
# $FAKE_PID_FILE.cgroup, then re-runs itself orphaned (a subshell that exits) with an empty environment
# but for what it needs. The orphan writes its pid to $FAKE_PID_FILE, sleeps $FAKE_DELAY seconds, then
# writes $FAKE_MARKER and commits in its working directory.
if [ "${1:-}" = orphan ]; then
  echo $$ > "$FAKE_PID_FILE.tmp" && mv "$FAKE_PID_FILE.tmp" "$FAKE_PID_FILE"
  sleep "${FAKE_DELAY:-2}"
  echo escaped > "$FAKE_MARKER"
  git commit -q --allow-empty -m "committed by a hidden child" 2>/dev/null
  exit 0
fi
root=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") print $5; break } }' /proc/self/mountinfo | head -n 1)
if [ -n "$root" ] && echo $$ 2>/dev/null > "$root/cgroup.procs"; then
  echo left > "$FAKE_PID_FILE.cgroup"
else
  echo stayed > "$FAKE_PID_FILE.cgroup"
fi
( env -i PATH="$PATH" FAKE_PID_FILE="$FAKE_PID_FILE" FAKE_MARKER="$FAKE_MARKER" FAKE_DELAY="${FAKE_DELAY:-2}" \
    "$0" orphan < /dev/null > /dev/null 2>&1 & )
