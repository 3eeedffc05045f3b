#!/usr/bin/env bash
# Fan-out through one node (issue 10): one room, N receiving clients, one publisher sending M messages
# with at most W unacknowledged — through the chat node (`chat-node serve`, SQLite store) and, in the
# same run, through mosquitto at QoS 1 (paho-mqtt clients, then Debian's C clients). Prints one table
# with messages/s, p50/p99 delivery latency, RSS per client and CPU, and chat-node ÷ mosquitto, then
# the counts of every system: all M × N deliveries arrived and all M messages were acknowledged, or the
# script says which count is wrong and exits 1.
#
#   Scripts/fanout.sh                                   N=50, M=5,000, W=100 (about a minute once built)
#   Scripts/fanout.sh --subscribers 20 --messages 1000 --window 50
#   Scripts/fanout.sh --smoke                           N=5, M=200, W=20, debug builds, counts only (CI)
#
# Needs: the parent package's chat-node and this package's fanout-bench (both built here: release, or
# debug with --smoke), `mosquitto` and `mosquitto-clients` (Debian; installed here through
# ../Scripts/setup.sh --fanout if missing) and paho-mqtt 2.2.0 in the venv .build-mqtt (made here if
# missing). Every server listens on 127.0.0.1 only; each is started by this script, killed by its pid
# at the end (trap), and every client run is bounded by `timeout`.
set -uo pipefail
cd "$(dirname "$0")/.."

smoke=false
arguments=()
for argument in "$@"; do
    if [ "$argument" = "--smoke" ]; then smoke=true; else arguments+=("$argument"); fi
done
if $smoke; then
    # A few seconds once built: enough clients and messages that a lost, doubled or unacknowledged
    # delivery shows in the counts; debug builds (CI has built the node already; nothing is timed).
    configuration=debug
    set -- --subscribers 5 --messages 200 --window 20 "${arguments[@]}"
else
    configuration=release
    set -- "${arguments[@]}"
fi

# Built every time (a no-op when up to date): a chat-node left from an older checkout is not measured.
swift build -c "$configuration" --product fanout-bench >/dev/null || exit 1
bench="$(swift build -c "$configuration" --show-bin-path)/fanout-bench"
(cd .. && swift build -c "$configuration" --product chat-node >/dev/null) || exit 1
node="$(cd .. && swift build -c "$configuration" --show-bin-path)/chat-node"
# Debian puts the broker in /usr/sbin, which is not on an ordinary user's PATH.
mosquitto="$(command -v mosquitto || echo /usr/sbin/mosquitto)"
if [ ! -x "$mosquitto" ] || ! command -v mosquitto_sub >/dev/null || ! command -v mosquitto_pub >/dev/null; then
    bash ../Scripts/setup.sh --fanout || exit 1
    mosquitto="$(command -v mosquitto || echo /usr/sbin/mosquitto)"
fi
python=".build-mqtt/bin/python"
if ! "$python" -c 'import paho.mqtt' 2>/dev/null; then
    python3 -m venv .build-mqtt && "$python" -m pip install -q paho-mqtt==2.2.0 || exit 1
fi

# The node's limits are its defaults but for the rate of SENDs per connection: one publisher sends as
# fast as its acknowledgements allow, which the default (50 a second) would refuse. Logins keep the
# node's limits (at most 4 in progress from one address): fanout-bench logs its subscribers in 4 at a
# time, retrying a refusal after its retry_after_ms, as a well-behaved crowd behind one address would.
# scrypt cost 4 (default 14) makes each first login cheap; no page or WebSocket listener.
node_flags=(--host 127.0.0.1 --port 0 --no-http --messages-per-second 100000 --scrypt-cost 4 --log-level warning)

echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(uname -sr)"
echo "commit:  $(git -C .. log -1 --format='%h %s' | cut -c1-100)$(git -C .. diff --quiet HEAD -- || echo ' (with local changes)')"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min before the run; the machine may be shared)"
echo "servers: chat-node $(git -C .. log -1 --format=%h) ($configuration) | $("$mosquitto" -h 2>/dev/null | head -1) | paho-mqtt $("$python" -c 'import paho.mqtt; print(paho.mqtt.__version__)')"
echo "node:    chat-node serve ${node_flags[*]} (limits raised: --messages-per-second, from 50)"
echo "args:    $*"

work="$(mktemp -d -t fanout.XXXXXX)"
server=""
stop_server() {
    if [ -n "$server" ]; then
        kill "$server" 2>/dev/null
        wait "$server" 2>/dev/null
        server=""
    fi
}
trap 'stop_server; rm -rf "$work"' EXIT
status=0

# Waits (at most 10 s) for a line matching $2 in file $1 and prints its first capture group.
wait_for() {
    local found=""
    for _ in $(seq 100); do
        found="$(sed -n "s/$2/\1/p" "$1" | head -1)"
        [ -n "$found" ] && break
        kill -0 "$server" 2>/dev/null || break
        sleep 0.1
    done
    echo "$found"
}

# 1. The chat node, on a fresh database.
"$node" serve "${node_flags[@]}" --database "$work/chat.db" >"$work/node.out" 2>"$work/node.err" &
server=$!
port="$(wait_for "$work/node.out" '^listening on 127\.0\.0\.1:\([0-9]*\).*')"
if [ -z "$port" ]; then
    echo "chat-node did not start:" >&2
    cat "$work/node.out" "$work/node.err" >&2
    exit 1
fi
timeout 180 "$bench" --port "$port" --pid "$server" "$@" >"$work/chat-node.txt" || status=1
stop_server

# 2. and 3. mosquitto, a fresh broker for each client kind (so each idle RSS is a fresh broker's).
run_mosquitto() {
    local name="$1"
    shift
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    # max_inflight_messages / max_queued_messages per subscriber: raised so a subscriber that lags
    # the publisher by thousands of messages is queued, not dropped (defaults 20 and 1000; the chat
    # node queues without limit). TCP_NODELAY on, as RunLoopNet sets it. No persistence: in memory.
    cat >"$work/$name.conf" <<EOF
listener $port 127.0.0.1
allow_anonymous true
persistence false
max_inflight_messages 1000
max_queued_messages 1000000
set_tcp_nodelay true
log_dest stderr
log_type error
log_type warning
log_type notice
log_type subscribe
EOF
    "$mosquitto" -c "$work/$name.conf" 2>"$work/$name.log" &
    server=$!
    # Listening once /proc/net/tcp has a LISTEN (0A) socket on 127.0.0.1:PORT (no probe connection,
    # which the idle RSS would include).
    local hex listening=""
    hex="$(printf '0100007F:%04X' "$port")"
    for _ in $(seq 100); do
        awk -v a="$hex" '$2 == a && $4 == "0A" { found = 1 } END { exit !found }' /proc/net/tcp && { listening=1; break; }
        kill -0 "$server" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$listening" ]; then
        echo "mosquitto did not start:" >&2
        cat "$work/$name.log" >&2
        exit 1
    fi
    timeout 180 "$python" Scripts/mqtt_fanout.py --port "$port" --pid "$server" --log "$work/$name.log" "$@" >"$work/$name.txt" || status=1
    stop_server
}
run_mosquitto mosquitto-paho --clients paho "$@"
run_mosquitto mosquitto-c --clients c "$@"

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
results=("$work/chat-node.txt" "$work/mosquitto-paho.txt" "$work/mosquitto-c.txt")
if $smoke; then
    python3 Scripts/fanout_table.py --counts-only "${results[@]}" || status=1
else
    python3 Scripts/fanout_table.py "${results[@]}" || status=1
fi
grep -h -v '^fanout\.' "${results[@]}"
exit $status
