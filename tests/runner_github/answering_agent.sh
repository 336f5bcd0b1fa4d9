#!/bin/sh
# A `command` agent that answers a question without changing the code: as fix_comments it hands back a
# reply to every comment its prompt lists and commits nothing (so no push, and CI stays as it was); every
# other kind of worker is pipeline.sh's.
prompt=$(cat)
if [ "$EXECUTOR_WORKER_KIND" != fix_comments ]; then
  printf '%s\n' "$prompt" | "$(dirname "$0")/../fake_agents/pipeline.sh"
  exit $?
fi
replies=""
for id in $(printf '%s\n' "$prompt" | sed -n 's/^### Comment `\([A-Za-z0-9_.-]*\)`.*/\1/p'); do
  [ -n "$replies" ] && replies="$replies, "
  replies="$replies{\"to\": \"$id\", \"body\": \"[ACKNOWLEDGED: answered] One line is all the task asks for.\"}"
done
printf '{"summary": "answered every comment", "replies": [%s]}\n' "$replies"
