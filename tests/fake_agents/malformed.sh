#!/bin/sh
# Prints everything a parser could choke on, then a valid result.
cat > /dev/null
printf '%s\n' '{"type":"system","subtype":"init","session_id":"mal-1","model":"claude-fake-1","tools":[]}'
printf '%s\n' '{"type":"assistant","message":{"content":[{"type":"text","text":"unterminated'
echo 'plain text, not JSON'
printf '%s\n' '{"type":"from_the_future","payload":{"x":1}}'
echo '[1,2,3]'
printf '%s\n' '{"type":"assistant","session_id":"mal-1","message":"content is not a list"}'
printf '\377\376 binary junk\n'
# One 10 MiB line without a newline in between.
head -c 10485760 /dev/zero | tr '\0' 'x'
echo
printf '%s\n' '{"type":"assistant","session_id":"mal-1","message":{"content":[{"type":"text","text":"still parsing after the big line"}]}}'
printf '%s\n' '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"ok","session_id":"mal-1","total_cost_usd":0.01,"usage":{"input_tokens":1,"output_tokens":2}}'
