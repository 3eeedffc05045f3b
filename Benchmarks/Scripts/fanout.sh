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
#   Scripts/fanout.sh --callgrind                       instructions per delivery, chat-node and mosquitto
#   Scripts/fanout.sh --syscalls                        system calls per delivery, each kind, the same way
#   Scripts/fanout.sh --rooms "1000 10000"              rooms of 1,000 and 10,000 members, each through
#                                                       the node and mosquitto (raw MQTT subscribers in
#                                                       --processes K processes, default 4), M = 200,000 / N
#                                                       unless --messages is given (issue 22)
#   Scripts/fanout.sh --python                          the node with fanout-bench's Swift clients, then with
#                                                       clients written from docs/PROTOCOL.md in Python
#                                                       (Tests/PythonClient/imclient.py, Scripts/python_fanout.py;
#                                                       a window of 1): both counted; no mosquitto (issue 22)
#   Scripts/fanout.sh --callgrind --node OTHER/chat-node  the same for another build of the node
#                                                       (--bench PATH: a fanout-bench built elsewhere;
#                                                       --keep: leave the logs and callgrind files)
#
# --callgrind counts instructions instead of timing, so the figure does not depend on the machine's
# load: each server runs under `valgrind --tool=callgrind` twice, for M and for M/10 messages (N=50,
# M=100, W=100 unless given: a larger M makes the node under valgrind fall so far behind that its
# clients' heartbeats time out), and the difference of the two totals over the difference of their
# deliveries is the instructions one more delivery costs — start-up, logins and shutdown cancel out.
# mosquitto runs with the C clients (paho's Python subscribers would be the limit at valgrind's pace),
# or above 200 subscribers with the raw ones (a process per subscriber would be the limit then).
# --callgrind --subscribers 1000 counts a room of 1,000.
#
# --syscalls counts system calls the same way (M/10 and M, the difference per delivery): each server is
# attached to by `perf trace -s` (every thread) once it listens, and the table gives each call's count
# per delivery beside mosquitto's. perf reads the kernel's syscall tracepoints, which slow a call far
# less than strace's stops would (those would change how many frames a pass gathers); no time is used.
#
# Needs: the parent package's chat-node and this package's fanout-bench (both built here: release, or
# debug with --smoke), `mosquitto` and `mosquitto-clients` (Debian; installed here through
# ../Scripts/setup.sh --fanout if missing) and paho-mqtt 2.2.0 in the venv .build-mqtt (made here if
# missing). Every server listens on 127.0.0.1 only; each is started by this script, killed by its pid
# at the end (trap), and every client run is bounded by `timeout`.
set -uo pipefail
cd "$(dirname "$0")/.."

smoke=false
callgrind=false
syscalls=false
node=""
bench=""
keep=false
rooms=""
python_clients=false
processes=4
arguments=()
while [ $# -gt 0 ]; do
    case "$1" in
        --smoke) smoke=true ;;
        --callgrind) callgrind=true ;;
        --syscalls) syscalls=true ;;
        --node) node="$(realpath "$2")" && shift ;;
        --bench) bench="$(realpath "$2")" && shift ;;
        --keep) keep=true ;;
        --rooms) rooms="$2" && shift ;;
        --python) python_clients=true ;;
        --processes) processes="$2" && shift ;;
        *) arguments+=("$1") ;;
    esac
    shift
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
if [ -z "$bench" ]; then
    swift build -c "$configuration" --product fanout-bench >/dev/null || exit 1
    bench="$(swift build -c "$configuration" --show-bin-path)/fanout-bench"
fi
if [ -z "$node" ]; then
    (cd .. && swift build -c "$configuration" --product chat-node >/dev/null) || exit 1
    node="$(cd .. && swift build -c "$configuration" --show-bin-path)/chat-node"
fi
# --python: the outside-client test's interpreter (the protobuf runtime it pins), as the tests find it.
outside_python="${RUNLOOPKIT_PYTHON:-$(cd .. && pwd)/.build-python/bin/python}"
if $python_clients && ! "$outside_python" -c 'import google.protobuf' 2>/dev/null; then
    echo "--python needs $outside_python with the protobuf runtime: bash Scripts/setup.sh --tests makes it" >&2
    exit 1
fi
# Debian puts the broker in /usr/sbin, which is not on an ordinary user's PATH.
mosquitto="$(command -v mosquitto || echo /usr/sbin/mosquitto)"
if [ ! -x "$mosquitto" ] || ! command -v mosquitto_sub >/dev/null || ! command -v mosquitto_pub >/dev/null; then
    bash ../Scripts/setup.sh --fanout || exit 1
    mosquitto="$(command -v mosquitto || echo /usr/sbin/mosquitto)"
fi
python=".build-mqtt/bin/python"
if $callgrind || $syscalls || [ -n "$rooms" ] || $python_clients; then
    # The C and raw clients only, or no MQTT at all: the venv's paho is not needed (but valgrind or strace is, to count).
    python=python3
    if $callgrind; then
        command -v valgrind >/dev/null || { echo "--callgrind needs valgrind (Debian: valgrind)" >&2; exit 1; }
    fi
    if $syscalls; then
        command -v perf >/dev/null || { echo "--syscalls needs perf (Debian: linux-perf)" >&2; exit 1; }
    fi
elif ! "$python" -c 'import paho.mqtt' 2>/dev/null; then
    python3 -m venv .build-mqtt && "$python" -m pip install -q paho-mqtt==2.2.0 || exit 1
fi

# The node's limits are its defaults but for the rate of SENDs per connection: one publisher sends as
# fast as its acknowledgements allow, which the default (50 a second) would refuse. Logins keep the
# node's limits (at most 4 in progress from one address): fanout-bench logs its subscribers in 4 at a
# time, retrying a refusal after its retry_after_ms, as a well-behaved crowd behind one address would.
# scrypt cost 4 (default 14) makes each first login cheap; no page or WebSocket listener.
node_flags=(--host 127.0.0.1 --port 0 --no-http --messages-per-second 100000 --scrypt-cost 4 --log-level warning)
# --rooms: a room larger than the node's default 1,024 connections in all needs that limit raised too
# (to N + 64, said in the room's `node:` line); the default refuses the rest with `tooManyConnections`.
room_node_flags=()

echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(uname -sr)"
echo "commit:  $(git -C .. log -1 --format='%h %s' | cut -c1-100)$(git -C .. diff --quiet HEAD -- || echo ' (with local changes)')"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min before the run; the machine may be shared)"
echo "servers: chat-node $node ($configuration) | $("$mosquitto" -h 2>/dev/null | head -1) | $("$python" -c 'import paho.mqtt; print("paho-mqtt", paho.mqtt.__version__)' 2>/dev/null || echo "C clients")"
echo "node:    chat-node serve ${node_flags[*]} (limits raised: --messages-per-second, from 50)"
echo "args:    $*"

work="$(mktemp -d -t fanout.XXXXXX)"
server=""
tracer=""
stop_server() {
    if [ -n "$server" ]; then
        kill "$server" 2>/dev/null
        wait "$server" 2>/dev/null
        server=""
    fi
    # perf trace ends with the process it traces, once it has written its counts.
    if [ -n "$tracer" ]; then
        wait "$tracer" 2>/dev/null
        tracer=""
    fi
}
# --keep leaves the servers' logs and callgrind files (for callgrind_annotate) in $work.
trap 'stop_server; if $keep; then echo "kept: $work"; else rm -rf "$work"; fi' EXIT
status=0

# Every server runs under this prefix: nothing, or callgrind writing its counts to $work/NAME.callgrind.
# Under valgrind everything takes tens of times longer, so every wait is longer too.
wrap=()
patience=100
bound=180
if $callgrind || $syscalls; then
    patience=600
    bound=1800
elif [ -n "$rooms" ]; then
    # Thousands of logins before the fan-out: minutes, not seconds.
    bound=900
fi

# Starts a server for the run NAME (its command after NAME) under the prefix, in the background.
start_server() {
    local name="$1"
    shift
    $callgrind && wrap=(valgrind --tool=callgrind --callgrind-out-file="$work/$name.callgrind")
    "${wrap[@]}" "$@" &
    server=$!
}

# --syscalls: perf counts the server's calls (every thread's) from now until it ends, into
# $work/NAME.syscalls; attached once the server listens, so its start-up is not in the counts.
trace_server() {
    $syscalls || return 0
    perf trace -s -p "$server" -o "$work/$1.syscalls" 2>"$work/$1.perf.err" &
    tracer=$!
    # perf needs a moment to open its tracepoints; what it could miss is before the first login.
    sleep 1
}

# Waits (at most patience / 10 s) for a line matching $2 in file $1 and prints its first capture group.
wait_for() {
    local found=""
    for _ in $(seq "$patience"); do
        found="$(sed -n "s/$2/\1/p" "$1" | head -1)"
        [ -n "$found" ] && break
        kill -0 "$server" 2>/dev/null || break
        sleep 0.1
    done
    echo "$found"
}

# 1. The chat node on a fresh database, for the run NAME with fanout-bench's arguments after NAME.
run_node() {
    local name="$1"
    shift
    rm -f "$work/chat.db"*
    start_server "$name" "$node" serve "${node_flags[@]}" "${room_node_flags[@]}" --database "$work/chat.db" >"$work/$name.out" 2>"$work/$name.err"
    port="$(wait_for "$work/$name.out" '^listening on 127\.0\.0\.1:\([0-9]*\).*')"
    if [ -z "$port" ]; then
        echo "chat-node did not start:" >&2
        cat "$work/$name.out" "$work/$name.err" >&2
        exit 1
    fi
    trace_server "$name"
    timeout "$bound" "${node_clients[@]}" --port "$port" --pid "$server" "$@" >"$work/$name.txt" || status=1
    stop_server
}
# The node's clients: fanout-bench, or (--python) the Python ones for the run that names them.
node_clients=("$bench")

# 2. and 3. mosquitto, a fresh broker for the run NAME (so each idle RSS is a fresh broker's), with
# mqtt_fanout.py's arguments after NAME.
run_mosquitto() {
    local name="$1"
    shift
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    # max_inflight_messages / max_queued_messages per subscriber: raised so a subscriber that lags
    # the publisher by thousands of messages is queued, not dropped (defaults 20 and 1000; the chat
    # node queues without limit). TCP_NODELAY on, as RunLoopNet sets it. No persistence: in memory.
    # It stays the user who ran this (as root it would switch to `mosquitto`, and callgrind could not
    # write its counts into $work).
    cat >"$work/$name.conf" <<EOF
user $(id -un)
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
    start_server "$name" "$mosquitto" -c "$work/$name.conf" 2>"$work/$name.log"
    # Listening once /proc/net/tcp has a LISTEN (0A) socket on 127.0.0.1:PORT (no probe connection,
    # which the idle RSS would include).
    local hex listening=""
    hex="$(printf '0100007F:%04X' "$port")"
    for _ in $(seq "$patience"); do
        awk -v a="$hex" '$2 == a && $4 == "0A" { found = 1 } END { exit !found }' /proc/net/tcp && { listening=1; break; }
        kill -0 "$server" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$listening" ]; then
        echo "mosquitto did not start:" >&2
        cat "$work/$name.log" >&2
        exit 1
    fi
    trace_server "$name"
    timeout "$bound" "$python" Scripts/mqtt_fanout.py --port "$port" --pid "$server" --log "$work/$name.log" "$@" >"$work/$name.txt" || status=1
    stop_server
}

# The last value given for a flag among the arguments, or $2 when none is.
last_value() {
    local flag="$1" value="$2"
    shift 2
    while [ $# -gt 1 ]; do
        [ "$1" = "$flag" ] && value="$2"
        shift
    done
    echo "$value"
}

# The MQTT clients for a room of N: Debian's C ones (a process each) up to 200, raw sockets beyond.
mqtt_clients() {
    if [ "$1" -le 200 ]; then echo "--clients c"; else echo "--clients raw --processes $processes"; fi
}

if $callgrind || $syscalls; then
    if $callgrind; then
        # Valgrind 3.19 cannot read the DWARF 5 Swift writes: a copy without debug information, which
        # keeps its symbols for callgrind_annotate.
        objcopy --strip-debug "$node" "$work/chat-node" || exit 1
        node="$work/chat-node"
    fi
    # Two runs per server, for M/10 and M messages; each run's counts are checked like any run's.
    counts="$(python3 Scripts/fanout_callgrind.py --message-counts "$@")" || exit 1
    for messages in $counts; do
        run_node "chat-node-$messages" "$@" --messages "$messages" --timeout "$bound"
        # shellcheck disable=SC2046
        run_mosquitto "mosquitto-$messages" $(mqtt_clients "$(last_value --subscribers 50 "$@")") "$@" --messages "$messages" --timeout "$bound"
    done
    echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    if $callgrind; then
        python3 Scripts/fanout_callgrind.py --work "$work" "$@" || status=1
    else
        python3 Scripts/fanout_callgrind.py --syscalls "$work" "$@" || status=1
    fi
    exit $status
fi

if [ -n "$rooms" ]; then
    # Per room size: the node, then mosquitto, then their table and counts.
    for n in $rooms; do
        messages="$(last_value --messages $((200000 / n > 0 ? 200000 / n : 1)) "$@")"
        room_node_flags=()
        if [ $((n + 64)) -gt 1024 ]; then
            room_node_flags=(--max-connections $((n + 64)))
            echo "node for N = $n: also --max-connections $((n + 64)) (default 1,024)"
        fi
        run_node "chat-node-$n" "$@" --subscribers "$n" --messages "$messages" --timeout "$bound"
        # shellcheck disable=SC2046
        run_mosquitto "mosquitto-$n" $(mqtt_clients "$n") "$@" --subscribers "$n" --messages "$messages" --timeout "$bound" --ready-timeout "$bound"
        echo "load after N = $n: $(cut -d' ' -f1-3 /proc/loadavg)"
        echo
        python3 Scripts/fanout_table.py "$work/chat-node-$n.txt" "$work/mosquitto-$n.txt" || status=1
        grep -h -v '^fanout\.' "$work/chat-node-$n.txt" "$work/mosquitto-$n.txt"
        echo
    done
    exit $status
fi

run_node chat-node "$@"
if $python_clients; then
    node_clients=("$outside_python" Scripts/python_fanout.py)
    # The same M as fanout-bench's run (its default 5,000 when not given).
    run_node chat-node-python "$@" --messages "$(last_value --messages 5000 "$@")" --timeout "$bound"
    results=("$work/chat-node.txt" "$work/chat-node-python.txt")
else
    run_mosquitto mosquitto-paho --clients paho "$@"
    run_mosquitto mosquitto-c --clients c "$@"
    results=("$work/chat-node.txt" "$work/mosquitto-paho.txt" "$work/mosquitto-c.txt")
fi

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
if $smoke; then
    python3 Scripts/fanout_table.py --counts-only "${results[@]}" || status=1
else
    python3 Scripts/fanout_table.py "${results[@]}" || status=1
fi
grep -h -v '^fanout\.' "${results[@]}"
exit $status
