#!/usr/bin/env bash
# Issue 22: N users log in to one chat server (ChatService, presence to contacts only), 8 logins in
# flight, each checked with scrypt at cost 10 off the loop, then all leave. Prints how long the logins
# took and the server's RSS before, with all online, and after they left (target: 19,000 logins in
# under 60 s; RSS after within 10 % of before).
#
#   Scripts/im-logins.sh                      19,000 users
#   Scripts/im-logins.sh --count 2000
#
# Two processes (`im-idle server` and `im-idle clients`), loopback only; the script kills only the
# server it started. The users share no rooms: what is measured is what a login costs while many
# others are online — with presence to everyone, each login cost more than the one before.
set -uo pipefail
cd "$(dirname "$0")/.."

count=19000
if [ "${1:-}" = "--count" ] && [ -n "${2:-}" ]; then count="$2"; fi
flags=(--count "$count" --seconds 1 --batch 8 --scrypt-cost 10 --heartbeat 30)
source Scripts/im-server.sh "${flags[@]}"

echo
echo "## $count logins: im-idle server ${flags[*]}  +  im-idle clients --port $port ${flags[*]}"
"$bin" clients --port "$port" "${flags[@]}"
clients=$?
for _ in $(seq 900); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
wait "$server"
server_status=$?
grep -E 'RSS before accepting|RSS with all online|after every client left' "$log"
[ $clients -eq 0 ] && [ $server_status -eq 0 ]
