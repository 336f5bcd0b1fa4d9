#!/bin/sh
# An example `command` agent for executor: the whole contract in one commented script. Point the config
# at it to try a run end to end, then replace the marked parts with calls to your own model or tool:
#
#   [worker]
#   agent = "command"
#   [worker.command]
#   argv = ["/path/to/command-agent.sh"]
#
# THE CONTRACT
# - executor starts the program in the run's git worktree (its current directory), in its own process
#   group, with the prompt on STANDARD INPUT (never on the command line: it holds untrusted task text).
# - The environment says what the job is:
#     EXECUTOR_WORKER_KIND  queued | in_progress | fix_ci | fix_comments | pr_review | fix_conflicts,
#                           or analyzer (triage one task, read-only, in a scratch checkout)
#     EXECUTOR_TASK_GID     the task
#     EXECUTOR_RUN_ID       the run (not set for analyzer)
#     EXECUTOR_REPLIES      fix_comments: a file the agent may write its replies to (see below)
#     EXECUTOR_CONFIG       the config executor runs with (so `executor comment` finds it)
#   PATH starts with executor's own directory, HOME and LANG are passed, and so are the variables named
#   in worker.pass_env (their values are redacted from every log).
# - Work by COMMITTING in the worktree. Do not push and do not open pull requests: executor pushes the
#   branch and opens the (draft) pull request itself, and judges progress by the branch, not by what
#   the agent says.
# - fix_comments: answer each review comment the prompt lists ("### Comment `ID` …") with a reply that
#   begins "[ACKNOWLEDGED: what you did]". Hand the replies back; executor posts each in its comment's
#   thread, once, after checking it answers a listed comment. No network, database or `executor` on PATH
#   is needed, so this works inside any sandbox. Either
#     * in the final JSON line: {"summary": "...", "replies": [{"to": "ID", "body": "[ACKNOWLEDGED: ...]"}]}
#     * or as you go, one {"to": "ID", "body": "..."} object per line appended to "$EXECUTOR_REPLIES".
#   (Where executor is reachable, `executor comment "$EXECUTOR_RUN_ID" --as-agent --reply-to ID "…"`
#   posts one at once; it counts as that comment's one reply.)
# - Print anything you like (it goes to the work log, logs/<gid>/<kind>_<time>.md). The LAST line that is
#   a JSON object is the structured result:
#     pr_review  {"verdict": "pass"|"fail", "summary": "...", "findings": [{"path","line","body"}]}  REQUIRED
#     analyzer   {"status": "for_review"|"awaiting_go"|"skip", "priority": 1-5,
#                 "complexity": "low"|"medium"|"high", "feasibility": "low"|"medium"|"high",
#                 "summary": "...", "acceptance_criteria": ["..."]}                                  REQUIRED
#     fix_comments {"summary": "...", "replies": [{"to": "ID", "body": "..."}]}                    optional
#     the others {"summary": "..."}                                                                optional
#   A review or triage without it is "the agent returned no structured result": retried after a back-off.
# - Exit 0 when done. Output must keep coming: no output for worker.idle_timeout (30 min; analyzer 5 min)
#   and the process group is stopped, as it is after worker.hard_timeout (3 h; analyzer 15 min).
set -eu
prompt=$(cat)                      # the whole prompt; `executor prompts export DIR` shows the templates
echo "executor asked for: $EXECUTOR_WORKER_KIND (task $EXECUTOR_TASK_GID)"

commit() {
  git add -A && git -c user.name="example agent" -c user.email=agent@example.invalid commit -qm "$1"
}

case "$EXECUTOR_WORKER_KIND" in
  queued|in_progress|fix_ci|fix_conflicts)
    # REPLACE: let your model do the work from "$prompt" here. This example only leaves a note.
    printf '%s: %s\n' "$EXECUTOR_WORKER_KIND" "$(date -u +%FT%TZ)" >> AGENT_NOTES.md
    commit "$EXECUTOR_WORKER_KIND for task $EXECUTOR_TASK_GID"
    echo '{"summary": "left a note in AGENT_NOTES.md"}'
    ;;
  fix_comments)
    # Each comment to answer is listed in the prompt as: ### Comment `ID` … (ids are letters, digits,
    # and . _ -, so they are safe inside the JSON below).
    printf '%s\n' "$prompt" | sed -n 's/^### Comment `\([A-Za-z0-9_.-]*\)`.*/\1/p' | while read -r id; do
      printf 'answered comment %s\n' "$id" >> AGENT_NOTES.md     # REPLACE: the real fix
      commit "Address comment $id"
      # The reply, handed back to executor (a real reply's text must be JSON-escaped: use jq or your
      # language's JSON library).
      printf '{"to": "%s", "body": "[ACKNOWLEDGED: addressed in a commit]"}\n' "$id" >> "$EXECUTOR_REPLIES"
    done
    echo '{"summary": "answered the comments"}'
    ;;
  pr_review)
    # REPLACE: check the diff against the prompt's acceptance criteria and required checks.
    echo '{"verdict": "pass", "summary": "the example agent passes every review"}'
    ;;
  analyzer)
    # REPLACE: read the task in "$prompt" and the code in the current directory (read-only).
    echo '{"status": "awaiting_go", "priority": 3, "complexity": "low", "feasibility": "high",
           "summary": "the example agent finds every task clear", "acceptance_criteria": ["the change is committed"]}' | tr -d '\n'
    echo
    ;;
  *)
    echo "unknown EXECUTOR_WORKER_KIND: $EXECUTOR_WORKER_KIND" >&2
    exit 2
    ;;
esac
