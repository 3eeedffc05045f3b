# The floor half of `Scripts/node-idle.sh --floor`, sourced by it after its chat-node run (the node
# stopped): `run_floor_idle LABEL [ARGUMENTS]` builds Floor/idle-floor.c with the system's C compiler,
# starts it (with ARGUMENTS, e.g. --batch-ms 10) on a free loopback port, holds the same idle crowd on
# it as on the node — the same cluster-bench clients, the same logins, heartbeats and answers on the
# wire — measures it as the node was measured (Scripts/idle-crowd.sh), stops it and writes its figures
# to "$work/LABEL.txt". Sets "floor_status" to 1 when a client was not online or not answered through
# the window, or the floor saw a frame other than LOGIN and HEARTBEAT (left as it was otherwise).

# Debian's compiler when there is one (`cc`, gcc); the Swift toolchain's clang otherwise, so a fresh
# machine set up by Scripts/setup.sh builds it too.
build_floor() {
    floor_cc="${CC:-$(command -v cc || command -v gcc || command -v clang)}"
    if [ -z "$floor_cc" ]; then
        echo "no C compiler for Floor/idle-floor.c" >&2
        return 1
    fi
    "$floor_cc" -O2 -Wall -Wextra -Werror -o "$work/idle-floor" Floor/idle-floor.c
}

run_floor_idle() {
    local label="$1"
    shift
    [ -x "$work/idle-floor" ] || build_floor || { floor_status=1; return 1; }
    echo
    echo "$label: Floor/idle-floor.c $* ($("$floor_cc" --version | head -1), -O2)"
    echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (before this run)"
    "${server_pin[@]}" "$work/idle-floor" "$@" >"$work/$label.out" 2>"$work/$label.err" &
    server=$!
    started+=($server)
    local port=""
    for _ in $(seq 100); do
        port="$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/$label.out" 2>/dev/null)"
        [ -n "$port" ] && break
        sleep 0.1
    done
    if [ -z "$port" ]; then
        echo "idle-floor did not start:" >&2
        cat "$work/$label.out" "$work/$label.err" >&2
        floor_status=1
        return 1
    fi
    start_crowd "$label" "$port"
    print_pinning "$label"
    open_window
    sleep "$seconds"
    close_window
    [ "$syscalls" -gt 0 ] && count_syscalls "$syscalls"
    stop_crowd
    local crowd_status=$?
    kill -INT "$server" 2>/dev/null
    wait "$server" 2>/dev/null
    write_figures "$label" >"$work/$label.txt"
    # What the floor itself counted: every frame it met was a LOGIN or a HEARTBEAT.
    grep '^floor\.' "$work/$label.out" | sed 's/^floor\./idle.floor_/' >>"$work/$label.txt"
    grep -v '^idle\.' "$work/$label-clients.txt" | grep -v '^idle.progress' | head -5
    if [ "$crowd_status" -ne 0 ] || ! grep -q '^idle\.floor_other_frames 0$' "$work/$label.txt"; then
        floor_status=1
    fi
}
