#!/bin/sh
# Prints without pause, forever: bursts of 4 MB of "y" lines (what `yes` prints), a short breath
# between bursts so the disk is not filled at full speed. Faster than any log can keep up with.
cat > /dev/null
while :; do
  yes | head -c 4000000
  sleep 0.05
done
