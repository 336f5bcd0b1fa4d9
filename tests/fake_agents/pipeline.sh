#!/bin/sh
# Plays a whole pipeline as a `command` agent: it acts according to $EXECUTOR_WORKER_KIND, which the
# runner sets, commits in its worktree, answers review comments in its result (`replies`: it reaches
# neither the database nor the forge), and ends with a JSON result line (the command agent's structured
# result).
#   FAKE_SLOW=N   sleep N seconds (printing a heartbeat each second) before working
#   FAKE_REVIEW   the pr_review verdict (default pass); a failing review reports one finding on a line
#   FAKE_ECHO     a failing review quotes this value (a secret an agent came across) in its findings
#   FAKE_CI_ASK   fix_ci asks a question until its prompt has an answer
#   FAKE_CONFLICT_FILE  fix_conflicts: the file whose conflict markers it resolves by taking both sides
# The task's text steers the rest: FAKE_ASK makes the implementing worker ask a question until its prompt
# has an answer (an answer's GREETING=word goes into feature.txt, as does "plan: followed" when the prompt
# has an approved plan); FAKE_PLAN_ASK makes the plan worker ask.
# As the analyzer (EXECUTOR_WORKER_KIND=analyzer, read-only) it answers a valid triage by default; the
# task's text steers it with FAKE_ANALYZER=WORD (see tests/fake_agents/README.md).
prompt=$(cat)
if [ "$EXECUTOR_WORKER_KIND" = analyzer ]; then
  mode=$(printf '%s\n' "$prompt" | sed -n 's/.*FAKE_ANALYZER=\([a-z0-9_]*\).*/\1/p' | head -n 1)
  retried=no
  if printf '%s\n' "$prompt" | grep -q 'Your previous answer could not be used'; then retried=yes; fi
  echo "triaging in $PWD at $(git rev-parse --short HEAD 2>/dev/null || echo no-checkout)"
  echo "read a prompt of $(printf '%s' "$prompt" | wc -c | tr -d ' ') bytes"
  answer() {
    printf '{"status": "%s", "priority": %s, "complexity": "low", "feasibility": "high", "summary": "A small change with a clear test.", "acceptance_criteria": ["the change has a test", "the docs mention it"]}\n' "$1" "$2"
  }
  case "$mode" in
    prose) echo "I think this task is a good fit for an agent, priority two." ;;
    truncated) echo '{"status": "for_review", "priority": 2, "complexi' ;;
    bad_status) answer maybe 2 ;;
    bad_priority) answer awaiting_go 9 ;;
    skip) answer skip 5 ;;
    for_review) answer for_review 2 ;;
    fail_once)
      if [ "$retried" = yes ]; then answer awaiting_go 1; else echo "Looks fine to me."; fi
      ;;
    exit1) echo "something went wrong" >&2; exit 1 ;;
    silent) exec sleep 600 ;;
    *) answer awaiting_go 3 ;;
  esac
  exit 0
fi
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
answered=no
if printf '%s\n' "$prompt" | grep -q '^## Questions asked and answered'; then answered=yes; fi
case "$EXECUTOR_WORKER_KIND" in
  plan)
    # Read-only: a plan (revised when the prompt carries a reviewer's feedback), or FAKE_PLAN_ASK's question.
    if printf '%s\n' "$prompt" | grep -q FAKE_PLAN_ASK && [ "$answered" = no ]; then
      echo '{"approach": "", "files": [], "risks": "", "testing": "", "question": "Which file should hold it?"}'
      exit 0
    fi
    approach="Write feature.txt with the feature."
    if printf '%s\n' "$prompt" | grep -q "What the reviewer wants changed"; then
      approach="Revised as asked: write feature.txt and mention it in the README."
    fi
    printf '{"approach": "%s", "files": ["feature.txt"], "risks": "none", "testing": "cat feature.txt", "question": null}\n' "$approach"
    ;;
  queued|in_progress)
    # FAKE_ASK: asks before working, until an answer is in its prompt (GREETING=word, written down).
    if printf '%s\n' "$prompt" | grep -q FAKE_ASK && [ "$answered" = no ]; then
      echo '{"question": "Which greeting should the feature print?"}'
      exit 0
    fi
    {
      echo "the feature"
      if printf '%s\n' "$prompt" | grep -q '^## The approved plan'; then echo "plan: followed"; fi
      printf '%s\n' "$prompt" | sed -n 's/.*GREETING=\([a-z]*\).*/answer: \1/p' | head -n 1
    } > feature.txt
    commit "Implement the task"
    echo '{"summary": "implemented the feature"}'
    ;;
  fix_ci)
    if [ -n "${FAKE_CI_ASK:-}" ] && [ "$answered" = no ]; then
      echo '{"question": "Does this check fail on main too?"}'
      exit 0
    fi
    echo ok > ci-fixed
    commit "Fix CI"
    echo '{"summary": "made CI pass"}'
    ;;
  fix_comments)
    # A failed review's findings: fixed in a commit, no reply (the next review judges).
    printf '%s\n' "$prompt" | sed -n 's/^### Finding `\([A-Za-z0-9_.-]*\)`.*/\1/p' | while read -r id; do
      echo "fixed finding $id" >> review-notes.txt
      commit "Fix review finding $id"
    done
    # Comments: ids are numbers on the local forge, node ids on GitHub.
    replies=""
    for id in $(printf '%s\n' "$prompt" | sed -n 's/^### Comment `\([A-Za-z0-9_.-]*\)`.*/\1/p'); do
      echo "addressed comment $id" >> review-notes.txt
      commit "Address comment $id"
      replies="$replies${replies:+, }{\"to\": \"$id\", \"body\": \"[ACKNOWLEDGED: addressed in a commit]\"}"
    done
    printf '{"summary": "answered every comment", "replies": [%s]}\n' "$replies"
    ;;
  fix_conflicts)
    git merge -q --no-edit "$(git rev-parse --abbrev-ref HEAD@{upstream} 2>/dev/null || echo main)" >/dev/null 2>&1
    if [ -n "${FAKE_CONFLICT_FILE:-}" ] && grep -q '^<<<<<<<' "$FAKE_CONFLICT_FILE" 2>/dev/null; then
      grep -v '^\(<<<<<<<\|=======\|>>>>>>>\)' "$FAKE_CONFLICT_FILE" > "$FAKE_CONFLICT_FILE.tmp" && mv "$FAKE_CONFLICT_FILE.tmp" "$FAKE_CONFLICT_FILE"
    fi
    git add -A >/dev/null && git -c user.name=fake -c user.email=fake@example.com commit -qm "Merge the base branch" || true
    echo '{"summary": "merged the base branch"}'
    ;;
  pr_review)
    if [ "${FAKE_REVIEW:-pass}" = pass ]; then
      echo '{"verdict": "pass", "summary": "matches the task"}'
    else
      # FAKE_ECHO: the agent echoes what it saw (a token in a log) into its review.
      leak=${FAKE_ECHO:+ (the log printed $FAKE_ECHO)}
      printf '{"verdict": "fail", "summary": "not there yet%s", "findings": [{"path": "feature.txt", "line": 1, "body": "say more%s"}]}\n' "$leak" "$leak"
    fi
    ;;
  *)
    echo "unknown worker kind" >&2
    exit 2
    ;;
esac
