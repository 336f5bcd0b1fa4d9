#!/bin/sh
# pipeline.sh, except that a pr_review worker first waits while the file $FAKE_REVIEW_GATE exists
# (printing a heartbeat), so a test can act while a review runs and then let it finish.
if [ "$EXECUTOR_WORKER_KIND" = pr_review ] && [ -n "$FAKE_REVIEW_GATE" ]; then
  while [ -e "$FAKE_REVIEW_GATE" ]; do
    echo "reviewing"
    sleep 0.2
  done
fi
exec "$(dirname "$0")/pipeline.sh"
