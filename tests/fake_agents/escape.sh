#!/bin/sh
# A `command` agent that tries to write where it must not, reporting each attempt as `WROTE name` or
# `REFUSED name` (with the error, which the work log keeps), then commits in its own checkout. The main
# repository is found through git (the common .git of the checkout); the outside file is
# $FAKE_OUTSIDE, or FAKE_OUTSIDE=PATH in the prompt. As the analyzer it ends with a valid triage.
prompt=$(cat)
outside=${FAKE_OUTSIDE:-$(printf '%s\n' "$prompt" | sed -n 's/.*FAKE_OUTSIDE=\([A-Za-z0-9_./-]*\).*/\1/p' | head -n 1)}
common=$(git rev-parse --path-format=absolute --git-common-dir)
main=$(dirname "$common")
attempt() {
  name=$1
  shift
  if "$@"; then echo "WROTE $name"; else echo "REFUSED $name"; fi
}
attempt main-readme sh -c "echo pwned >> '$main/README.md'"
attempt main-file sh -c "echo pwned > '$main/planted.txt'"
attempt main-hook sh -c "printf '#!/bin/sh\necho hook\n' > '$common/hooks/post-commit'"
attempt main-config git -C "$main" config core.pager evil
attempt main-branch git -C "$main" branch escaped
# Only in a scratch HOME the test made: a broken sandbox must not plant a key in a real one.
if [ "${FAKE_SCRATCH_HOME:-}" = 1 ]; then
  attempt authorized-keys sh -c "echo ssh-ed25519 AAAA evil >> '$HOME/.ssh/authorized_keys'"
fi
attempt outside sh -c "echo x > '$outside'"
attempt tmpdir sh -c "echo x > '${TMPDIR:-/tmp}/agent-scratch'"
attempt dev-null sh -c "echo x > /dev/null"
echo "work" > work.txt
if git add work.txt && git -c user.name=fake -c user.email=fake@example.com commit -qm "Work"; then
  echo "COMMITTED"
else
  echo "COMMIT FAILED"
fi
if [ "$EXECUTOR_WORKER_KIND" = analyzer ]; then
  echo '{"status": "awaiting_go", "priority": 3, "complexity": "low", "feasibility": "high", "summary": "Tried to escape.", "acceptance_criteria": ["none"]}'
else
  echo '{"summary": "tried to escape"}'
fi
