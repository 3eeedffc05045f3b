#!/usr/bin/env bash
# One IMServer loop holding N idle client connections that heartbeat every 2 s (issue 9): the server's
# RSS per connection and its CPU while idle, and heartbeats answered per second.
#
#   Scripts/im-idle.sh                        10,000 connections, 20 s window (about a minute in all)
#   Scripts/im-idle.sh --count 1000 --seconds 5
#
# Runs the two-process form first (`im-idle server` and `im-idle clients`: the server's RSS is its
# own), then the one-process form (`im-idle both`: server and clients on two threads of one process).
# Loopback only; each process stops by itself, and the script kills only the server it started.
set -uo pipefail
cd "$(dirname "$0")/.."

source Scripts/im-server.sh "$@"

echo
echo "## two processes: im-idle server $*  +  im-idle clients --port $port $*"
clients_log="$(mktemp -t im-idle-clients.XXXXXX)"
"$bin" clients --port "$port" "$@" >"$clients_log" 2>&1
clients=$?
# The server reports at the end of its window and exits once the clients have gone.
for _ in $(seq 600); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
wait "$server"
server_status=$?
grep -v '^port ' "$log"
cat "$clients_log"
# The server's CPU per heartbeat, from the two tables: thread CPU (ms) / heartbeats answered.
awk -F'|' '/server thread CPU in window/ { split($3, a, " "); cpu = a[1] }
           /heartbeats answered/ { split($3, b, " "); n = b[1] }
           END { if (n > 0) printf "| server thread CPU per heartbeat answered | %.1f µs |\n", cpu * 1000 / n }' "$log" "$clients_log"
rm -f "$clients_log"

echo
echo "## one process, two threads: im-idle both $*"
"$bin" both "$@"
both=$?
[ $clients -eq 0 ] && [ $server_status -eq 0 ] && [ $both -eq 0 ]
