# The mosquitto half of `Scripts/node-idle.sh --mosquitto`, sourced by it after its chat-node run:
# `run_mosquitto_idle` stops the node, starts Debian's mosquitto on a free loopback port (no
# persistence, no connection limit, log in "$work"), holds the same idle crowd on it with
# Scripts/mqtt_idle.py (count, keepalive = heartbeat, settle and window as the node had), stops it, and
# prints one table of both servers (Scripts/idle_table.py). Sets "mosquitto_status" (0 when every
# client was online and answered through the window). Uses node-idle.sh's variables: count, heartbeat,
# settle, seconds, the node's figures (rss_*, cpu_*, window, ramp) and "$work"/clients.txt.

# chat-node's figures in the lines idle_table.py reads: cluster-bench's counts and what the script
# measured of the node itself.
write_node_figures() {
    grep -E '^idle\.(count|online|heartbeats_answered|connections_heartbeating|window_disconnects) ' "$work/clients.txt"
    echo "idle.heartbeat_s $heartbeat"
    echo "idle.ramp_s $ramp"
    echo "idle.window_s $window"
    echo "idle.rss_before_kib $rss_before"
    echo "idle.rss_online_kib $rss_online"
    echo "idle.rss_end_kib $rss_end"
    echo "idle.server_cpu_ms $(((cpu_end - cpu_online) * 1000 / $(getconf CLK_TCK)))"
}

run_mosquitto_idle() {
    mosquitto_status=1
    write_node_figures >"$work/chat-node.txt"
    # One server at a time: the node's memory and descriptors go before the broker starts (--heaptrack
    # has stopped it already and emptied "started").
    if [ ${#started[@]} -gt 0 ]; then
        kill "${started[0]}" 2>/dev/null
        wait "${started[0]}" 2>/dev/null
    fi
    # Debian puts the broker in /usr/sbin, which is not on an ordinary user's PATH.
    local broker
    broker="$(command -v mosquitto || echo /usr/sbin/mosquitto)"
    if [ ! -x "$broker" ]; then
        bash ../Scripts/setup.sh --fanout || return 1
    fi
    # mosquitto cannot listen on port 0: a port the kernel just gave out and took back.
    local port
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    # TCP_NODELAY as RunLoopNet sets it; it stays the user who ran this (as root it would switch to
    # `mosquitto`, which could not write its log into "$work").
    cat >"$work/mosquitto.conf" <<EOF
user $(id -un)
listener $port 127.0.0.1
allow_anonymous true
persistence false
max_connections -1
set_tcp_nodelay true
log_dest file $work/mosquitto.log
EOF
    echo
    echo "broker:  $("$broker" -h 2>/dev/null | head -1), $work/mosquitto.conf: max_connections -1, persistence false"
    "$broker" -c "$work/mosquitto.conf" >"$work/mosquitto.err" 2>&1 &
    local pid=$!
    started+=($pid)
    for _ in $(seq 100); do
        grep -q "listen socket on port $port\." "$work/mosquitto.log" 2>/dev/null && break
        sleep 0.1
    done
    if ! grep -q "listen socket on port $port\." "$work/mosquitto.log" 2>/dev/null; then
        echo "mosquitto did not start:" >&2
        cat "$work/mosquitto.err" "$work/mosquitto.log" >&2
        return 1
    fi
    timeout $((900 + settle + seconds + 60)) python3 Scripts/mqtt_idle.py --port "$port" --pid "$pid" \
        --count "$count" --keepalive "$heartbeat" --settle "$settle" --seconds "$seconds" >"$work/mosquitto.txt" 2>&1
    mosquitto_status=$?
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (after mosquitto's window)"
    echo
    python3 Scripts/idle_table.py "$work/chat-node.txt" "$work/mosquitto.txt" || mosquitto_status=1
    grep -v '^idle\.' "$work/mosquitto.txt" | head -5
}
