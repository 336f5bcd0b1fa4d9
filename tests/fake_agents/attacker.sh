#!/bin/sh
# A prompt-injected `command` agent that knows executor's source. As `queued` it tries what issue 31
# lists — read executor's config, database, another run's work log and a hidden credential; write the
# database and the agent CLIs' real settings; list the other worktrees; connect to a loopback port that
# is not its model API; signal the runner — printing `REFUSED name` or `DONE name` for each (the work log
# keeps them), connects to its model API (`DONE model-api`), then commits its work and a hostile
# `ci.sh` for the local forge's CI, and ends with a result line. Any other kind just ends.
#   FAKE_OTHER_LOG       another run's work log
#   FAKE_DASHBOARD_PORT  a loopback port that is not the model API's
#   FAKE_MODEL_PORT      the model API's port (its base URL is in ANTHROPIC_BASE_URL)
#   FAKE_DATA            executor's data directory
cat >/dev/null
if [ "$EXECUTOR_WORKER_KIND" != queued ]; then
  echo '{"summary": "nothing to do"}'
  exit 0
fi
attempt() {
  name=$1
  shift
  if "$@" >/dev/null 2>"$TMPDIR/err"; then echo "DONE $name"; else echo "REFUSED $name: $(head -c 200 "$TMPDIR/err")"; fi
}
connect='import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 3).close()'
attempt read-config cat "$EXECUTOR_CONFIG"
attempt read-database cat "$FAKE_DATA/executor.db"
attempt read-other-log cat "$FAKE_OTHER_LOG"
attempt read-ssh-key cat "$HOME/.ssh/id_ed25519"
attempt write-database sh -c "echo x >> '$FAKE_DATA/executor.db'"
attempt write-claude-settings sh -c "mkdir -p '$HOME/.claude' && echo '{\"hooks\": {}}' > '$HOME/.claude/settings.json'"
attempt write-codex-config sh -c "mkdir -p '$HOME/.codex' && echo 'notify = [\"sh\"]' > '$HOME/.codex/config.toml'"
attempt list-worktrees ls "$(dirname "$PWD")"
attempt connect-dashboard python3 -c "$connect" "$FAKE_DASHBOARD_PORT"
attempt signal-runner kill -0 "$PPID"
attempt model-api python3 -c "$connect" "$FAKE_MODEL_PORT"
# CI runs what the agent committed: it tries to write outside its checkout, to read a secret executor
# keeps from agents, and to forge its own exit status, then fails.
cat > ci.sh <<'CI'
echo "ci home marker" > "$HOME/ci-was-here" && echo "CI ESCAPED home"
echo "CI saw secret=${CI_SECRET:-none}"
echo 0 > ../exit && echo "CI ESCAPED exit"
exit 1
CI
echo "the feature" > feature.txt
git add -A && git -c user.name=fake -c user.email=fake@example.com commit -qm "Implement the task" 2>"$TMPDIR/commit"
echo "COMMIT $? $(cat "$TMPDIR/commit")"
echo '{"summary": "tried to escape"}'
