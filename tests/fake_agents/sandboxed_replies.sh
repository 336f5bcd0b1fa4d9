#!/bin/sh
# A `command` agent shut off from executor, as Codex's sandbox shuts it off: executor is not on its PATH,
# and it has no network (it re-runs itself in a network namespace of its own where the system allows
# one). It works like pipeline.sh, but as fix_comments it answers every comment the prompt lists without
# reaching back: the first reply is appended to the file $EXECUTOR_REPLIES names, the others are in its
# final JSON line, together with a reply to comment 999999, which the prompt did not list.
#   FAKE_SECRET       a value it puts into its reply (the runner must redact it)
#   FAKE_KILL_RUNNER  a flag file: the first time, once its replies are written, it creates the flag,
#                     waits until the test has killed its parent (the runner), then ends normally
prompt=$(cat)
if [ -z "${FAKE_NETNS:-}" ] && [ -z "${FAKE_KILL_RUNNER:-}" ]; then
  # As root, a plain network namespace; else one inside a user namespace of its own.
  for how in -n -rn; do
    if unshare "$how" true 2>/dev/null; then
      export FAKE_NETNS=1
      printf '%s\n' "$prompt" | exec unshare "$how" "$0"
    fi
  done
  echo "no network namespace here: $(unshare -rn true 2>&1)"
fi
PATH=/usr/local/bin:/usr/bin:/bin
export PATH
if command -v executor >/dev/null 2>&1; then echo "EXECUTOR ON PATH"; else echo "NO EXECUTOR ON PATH"; fi
if [ -n "${FAKE_NETNS:-}" ]; then echo "NO NETWORK (own namespace)"; fi
commit() {
  git add -A >/dev/null && git -c user.name=fake -c user.email=fake@example.com commit -qm "$1"
}
case "$EXECUTOR_WORKER_KIND" in
  queued|in_progress)
    echo "the feature" > feature.txt
    commit "Implement the task"
    echo '{"summary": "implemented the feature"}'
    ;;
  fix_ci)
    echo ok > ci-fixed
    commit "Fix CI"
    echo '{"summary": "made CI pass"}'
    ;;
  fix_comments)
    ids=$(printf '%s\n' "$prompt" | sed -n 's/^### Comment `\([A-Za-z0-9_.-]*\)`.*/\1/p')
    replies='{"to": "999999", "body": "[ACKNOWLEDGED: a comment nobody listed]"}'
    first=yes
    for id in $ids; do
      echo "addressed comment $id" >> review-notes.txt
      commit "Address comment $id"
      if [ "$first" = yes ]; then
        printf '{"to": "%s", "body": "[ACKNOWLEDGED: addressed in a commit] (from the file)"}\n' "$id" >> "$EXECUTOR_REPLIES"
        first=no
      else
        replies="$replies, {\"to\": \"$id\", \"body\": \"[ACKNOWLEDGED: addressed in a commit] (from the answer; token ${FAKE_SECRET:-none})\"}"
      fi
    done
    if [ -n "${FAKE_KILL_RUNNER:-}" ] && [ ! -e "$FAKE_KILL_RUNNER" ]; then
      touch "$FAKE_KILL_RUNNER"
      # The test kills the runner now (a contained agent cannot signal it); wait until it is gone.
      echo "waiting for the runner (pid $PPID) to be killed"
      i=0
      while [ -d "/proc/$PPID" ] && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    fi
    printf '{"summary": "answered every comment", "replies": [%s]}\n' "$replies"
    ;;
  pr_review)
    echo '{"verdict": "pass", "summary": "matches the task"}'
    ;;
  *)
    echo "unknown worker kind" >&2
    exit 2
    ;;
esac
