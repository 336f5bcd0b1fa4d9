#!/bin/sh
# Plays a whole pipeline as a `command` agent: it acts according to $EXECUTOR_WORKER_KIND, which the
# runner sets, commits in its worktree, answers review comments through `executor comment`, and ends with
# a JSON result line (the command agent's structured result).
#   FAKE_SLOW=N   sleep N seconds (printing a heartbeat each second) before working
#   FAKE_REVIEW   the pr_review verdict (default pass)
prompt=$(cat)
echo "working as $EXECUTOR_WORKER_KIND on run $EXECUTOR_RUN_ID"
i=0
while [ "$i" -lt "${FAKE_SLOW:-0}" ]; do
  echo "still working ($i)"
  sleep 1
  i=$((i + 1))
done
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
    printf '%s\n' "$prompt" | sed -n 's/^### Comment `\([0-9][0-9]*\)`.*/\1/p' | while read -r id; do
      echo "addressed comment $id" >> review-notes.txt
      commit "Address comment $id"
      executor comment "$EXECUTOR_RUN_ID" --as-agent --reply-to "$id" "[ACKNOWLEDGED: addressed in a commit]" || exit 1
    done
    echo '{"summary": "answered every comment"}'
    ;;
  pr_review)
    echo "{\"verdict\": \"${FAKE_REVIEW:-pass}\", \"summary\": \"matches the task\"}"
    ;;
  *)
    echo "unknown worker kind" >&2
    exit 2
    ;;
esac
