# The mosquitto half of `Scripts/node-idle.sh --mosquitto`, sourced by it after its other servers' runs
# (each stopped): `run_mosquitto_idle` starts Debian's mosquitto on a free loopback port (no
# persistence, no connection limit, log in "$work"), holds the same idle crowd on it with
# Scripts/mqtt_idle.py (count, keepalive = heartbeat, settle and window as the node had; then, with
# --syscalls S, S more seconds with its system calls counted — Scripts/idle-crowd.sh's count_syscalls),
# stops it and leaves its figures in "$work/mosquitto.txt" for Scripts/idle_table.py. Sets
# "mosquitto_status" (0 when every client was online and answered through the window). Uses
# node-idle.sh's variables: count, heartbeat, settle, seconds, syscalls and "$work".

run_mosquitto_idle() {
    mosquitto_status=1
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
    echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (before mosquitto's run)"
    "${server_pin[@]}" "$broker" -c "$work/mosquitto.conf" >"$work/mosquitto.err" 2>&1 &
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
    "${client_pin[@]}" timeout $((900 + settle + seconds + syscalls + 60)) python3 Scripts/mqtt_idle.py --port "$port" --pid "$pid" \
        --count "$count" --keepalive "$heartbeat" --settle "$settle" --seconds "$seconds" \
        --extra-seconds $((syscalls > 0 ? syscalls + 3 : 0)) >"$work/mosquitto.txt" 2>&1 &
    local crowd=$!
    started+=($crowd)
    server=$pid print_pinning mosquitto "$crowd"
    if [ "$syscalls" -gt 0 ]; then
        # The window's figures are out: the crowd stays for the count.
        until grep -q '^idle\.server_cpu_ms ' "$work/mosquitto.txt" 2>/dev/null; do
            kill -0 "$crowd" 2>/dev/null || break
            sleep 0.2
        done
        server=$pid crowd_label=mosquitto count_syscalls "$syscalls"
    fi
    wait "$crowd"
    mosquitto_status=$?
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (after mosquitto's window)"
    [ -f "$work/mosquitto-syscalls.txt" ] && cat "$work/mosquitto-syscalls.txt" >>"$work/mosquitto.txt"
    grep -v '^idle\.' "$work/mosquitto.txt" | head -5
}
