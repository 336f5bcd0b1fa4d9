#!/bin/sh
# The soak's agent: plays Claude Code's stream-json output (so that its cost reaches executor as a real
# agent's does) and does each worker kind's work like tests/fake_agents/pipeline.sh. How it behaves is
# drawn per worker, from /dev/urandom with the weights in $SOAK_MIX ("ok fail crash hang flood budget
# garbage escape slow", nine integers; the soak sets them from its seed):
#   ok       does the work and ends with its result
#   fail     reports an error result and exits 1
#   crash    kills itself with SIGKILL in the middle
#   hang     falls silent past the idle timeout
#   flood    prints without pause until the output cap stops it
#   budget   reports messages that cost more than the per-run cap
#   garbage  ends with a result whose structured output is not the kind's answer
#   escape   tries to write $SOAK_OUTSIDE (outside its worktree), then works normally
#   slow     keeps working (with heartbeats) past the hard timeout
# Every assistant message costs exactly $0.01 under the soak's pricing (1,000 input tokens of model
# soak-1 at $10 per million; $1 for an overspending one), and the result's total_cost_usd is their sum.
# Each is also written, after it is printed, to the ledger $SOAK_LEDGER/<session id> (a directory the
# sandbox lets it write): the soak checks that each session's recorded cost is what its ledger says.
prompt=$(cat)
SID="soak-$$-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')"
MESSAGES=0
say() { printf '%s\n' "$1"; }
CENTS=0
ledger() { if [ -n "$SOAK_LEDGER" ]; then echo "$1" >> "$SOAK_LEDGER/$SID"; fi; }
# message TEXT [INPUT_TOKENS]: one assistant message; 1,000 tokens cost a cent.
message() {
  MESSAGES=$((MESSAGES + 1))
  tokens=${2:-1000}
  say "{\"type\":\"assistant\",\"session_id\":\"$SID\",\"message\":{\"id\":\"msg_$MESSAGES\",\"model\":\"soak-1\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"$1\"}],\"usage\":{\"input_tokens\":$tokens,\"output_tokens\":0}}}"
  CENTS=$((CENTS + tokens / 1000))
  ledger "message $((tokens / 1000))"
}
cost() { printf '%d.%02d' $((CENTS / 100)) $((CENTS % 100)); }
result() {
  say "{\"type\":\"result\",\"subtype\":\"$1\",\"is_error\":$2,\"num_turns\":$MESSAGES,\"result\":\"done\",\"session_id\":\"$SID\",\"total_cost_usd\":$(cost),\"usage\":{\"input_tokens\":$((CENTS * 1000)),\"output_tokens\":0},\"structured_output\":$3}"
  ledger "total $CENTS"
}
commit() {
  git add -A >/dev/null 2>&1 && git -c user.name=soak -c user.email=soak@example.com commit -qm "$1" >/dev/null 2>&1
}
pick() {
  set -- ${SOAK_MIX:-72 5 5 4 3 2 4 3 2}
  total=0
  for w in "$@"; do total=$((total + w)); done
  r=$(($(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % total))
  for name in ok fail crash hang flood budget garbage escape slow; do
    if [ "$r" -lt "$1" ]; then echo "$name"; return; fi
    r=$((r - $1))
    shift
  done
  echo ok
}

say "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"$SID\",\"model\":\"soak-1\",\"tools\":[\"Bash\"],\"cwd\":\"$PWD\"}"
message "Reading the task."

if [ "$EXECUTOR_WORKER_KIND" = analyzer ]; then
  case "$prompt" in
    *SOAK_TRIAGE=skip*) status=skip ;;
    *SOAK_TRIAGE=review*) status=for_review ;;
    *) status=awaiting_go ;;
  esac
  case "$prompt" in
    *SOAK_TRIAGE=garbage*) result success false '"not a triage"'; exit 0 ;;
  esac
  result success false "{\"status\":\"$status\",\"priority\":3,\"complexity\":\"low\",\"feasibility\":\"high\",\"summary\":\"A small change.\",\"acceptance_criteria\":[\"it has a test\"]}"
  exit 0
fi

behaviour=$(pick)
say "{\"type\":\"system\",\"subtype\":\"soak\",\"behaviour\":\"$behaviour\",\"kind\":\"$EXECUTOR_WORKER_KIND\"}"
case "$behaviour" in
  fail)
    message "The build is broken in a way I cannot fix."
    result error_during_execution true null
    exit 1
    ;;
  crash)
    message "Working."
    kill -9 $$
    ;;
  hang)
    exec sleep 100000
    ;;
  flood)
    while :; do say "{\"type\":\"system\",\"subtype\":\"heartbeat\",\"session_id\":\"$SID\",\"pad\":\"flooding flooding flooding flooding flooding flooding\"}"; done
    ;;
  budget)
    i=0
    while [ "$i" -lt 20 ]; do
      # 100,000 input tokens: $1 a message under the soak's pricing.
      message "Thinking very hard." 100000
      sleep 0.5
      i=$((i + 1))
    done
    exec sleep 100000
    ;;
  escape)
    if (echo "escaped from $PWD" > "$SOAK_OUTSIDE/escaped-$$") 2>/dev/null; then
      message "I wrote outside my worktree."
    else
      message "Writing outside my worktree was refused."
    fi
    ;;
  slow)
    while :; do
      sleep 1
      say "{\"type\":\"system\",\"subtype\":\"heartbeat\",\"session_id\":\"$SID\"}"
    done
    ;;
esac

# ok, garbage and escape do the work, which takes 0 to 4 seconds.
i=$(($(od -An -N1 -tu1 /dev/urandom | tr -d ' ') % 5))
while [ "$i" -gt 0 ]; do
  sleep 1
  say "{\"type\":\"system\",\"subtype\":\"heartbeat\",\"session_id\":\"$SID\"}"
  i=$((i - 1))
done
case "$EXECUTOR_WORKER_KIND" in
  queued|in_progress)
    echo "the feature of $EXECUTOR_TASK_GID" > "feature-$EXECUTOR_TASK_GID.txt"
    commit "Implement the task"
    answer='{"summary":"implemented the feature"}'
    ;;
  fix_ci)
    date +%s%N > ci-fixed
    commit "Fix CI"
    answer='{"summary":"made CI pass"}'
    ;;
  fix_comments)
    ids=$(printf '%s\n' "$prompt" | sed -n 's/^### Comment `\([A-Za-z0-9_.=-]*\)`.*/\1/p')
    replies=""
    for id in $ids; do
      echo "addressed comment $id" >> review-notes.txt
      replies="$replies${replies:+,}{\"to\":\"$id\",\"body\":\"[ACKNOWLEDGED: comment $id addressed in a commit]\"}"
    done
    for id in $(printf '%s\n' "$prompt" | sed -n 's/^### Finding `\([A-Za-z0-9_.-]*\)`.*/\1/p'); do
      echo "fixed finding $id" >> review-notes.txt
    done
    date +%s%N >> review-notes.txt
    commit "Address the review"
    answer="{\"summary\":\"answered every comment\",\"replies\":[$replies]}"
    ;;
  fix_conflicts)
    git merge -q --no-edit origin/main >/dev/null 2>&1 || git merge --abort >/dev/null 2>&1
    answer='{"summary":"merged the base branch"}'
    ;;
  pr_review)
    answer='{"verdict":"pass","summary":"matches the task"}'
    ;;
  *)
    answer='{"summary":"nothing to do"}'
    ;;
esac
message "Done."
if [ "$behaviour" = garbage ]; then answer='[1, 2'; fi
result success false "$answer"
