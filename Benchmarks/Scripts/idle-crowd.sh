# The idle crowd of Scripts/node-idle.sh and how a server holding it is measured, sourced by node-idle.sh
# (for chat-node and, with --floor, for Floor/idle-floor.c; Scripts/node-idle-floor.sh). Uses "$bin",
# "$work", "started", count, heartbeat, paced and settle from node-idle.sh and node-bench-setup.sh.
#
# For one server (its pid in "server"): start_crowd LABEL PORT logs `count` cluster-bench clients in;
# open_window waits the settle and reads the server's figures; close_window reads them again; then
# count_syscalls S (optional) and stop_crowd. write_figures LABEL prints what Scripts/idle_table.py reads.

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$server/status"; }
# utime + stime in clock ticks (fields 14 and 15; the command name has no spaces).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$server/stat"; }
user_ticks() { awk '{ print $14 }' "/proc/$server/stat"; }
# Voluntary context switches per thread ("TID COUNT" lines): each a sleep a thread went into itself —
# for an idle event loop, an epoll_wait that found nothing ready and blocked, so each is one wake-up.
wakeups() {
    local task
    for task in /proc/"$server"/task/*; do
        awk -v tid="${task##*/}" '/^voluntary_ctxt_switches:/ { print tid, $2 }' "$task/status" 2>/dev/null
    done
}
# The wake-ups between two `wakeups` lists, of the threads in both (a thread that came or went between
# them, such as a login worker, is left out: the loop's thread stays).
wakeups_between() {
    awk 'NR == FNR { before[$1] = $2; next } $1 in before { n += $2 - before[$1] } END { print n + 0 }' \
        <(echo "$1") <(echo "$2")
}

start_crowd() {
    crowd_label="$1"
    sleep 1
    rss_before="$(rss_kib)"
    local ramp_start=$SECONDS
    local pacing=()
    [ "$paced" -eq 1 ] && pacing=(--paced 1)
    "${client_pin[@]}" "$bin/cluster-bench" idle --ports "$2" --pids "$server" --label idle --count "$count" --heartbeat "$heartbeat" \
        --ready-timeout 900 "${pacing[@]}" --stop-file "$work/$crowd_label.stop" >"$work/$crowd_label-clients.txt" 2>&1 &
    clients=$!
    started+=($clients)
    until grep -q '^idle\.online ' "$work/$crowd_label-clients.txt" 2>/dev/null; do
        kill -0 "$clients" 2>/dev/null || break
        sleep 0.5
    done
    ramp=$((SECONDS - ramp_start))
}

open_window() {
    # Settle: the last logins' presence and inbox reads, then the window.
    sleep "$settle"
    rss_online="$(rss_kib)"
    cpu_online="$(cpu_ticks)"
    user_online="$(user_ticks)"
    wake_online="$(wakeups)"
    window_start=$SECONDS
}

close_window() {
    rss_end="$(rss_kib)"
    cpu_end="$(cpu_ticks)"
    user_end="$(user_ticks)"
    wake_end="$(wakeups)"
    window=$((SECONDS - window_start))
}

# count_syscalls S: the server's system calls over S more seconds with the crowd still there, counted by
# perf's syscall tracepoints (in the kernel: no stop per call as under strace, so the server keeps its
# pace), into "$work/$crowd_label-syscalls.txt" as idle.syscalls_* lines. Kept out of the timed window.
count_syscalls() {
    local events=raw_syscalls:sys_enter
    local name
    for name in epoll_wait epoll_pwait epoll_pwait2 recvfrom read sendto write timerfd_settime ioctl; do
        events+=",syscalls:sys_enter_$name"
    done
    perf stat -x, -e "$events" -p "$server" -o "$work/$crowd_label-perf-stat.txt" -- sleep "$1" >/dev/null 2>&1
    # A counter of a call never made reads "<not counted>".
    awk -F, -v s="$1" '
        $3 ~ /sys_enter/ { n = ($1 ~ /^[0-9]+$/) ? $1 : 0; sub(/.*sys_enter_?/, "", $3); c[$3] += n }
        END {
            print "idle.syscall_window_s " s
            print "idle.syscalls_all " c[""] + 0
            print "idle.syscalls_epoll_wait " c["epoll_wait"] + c["epoll_pwait"] + c["epoll_pwait2"]
            print "idle.syscalls_read " c["recvfrom"] + c["read"]
            print "idle.syscalls_write " c["sendto"] + c["write"]
            print "idle.syscalls_timer " c["timerfd_settime"] + 0
            print "idle.syscalls_ioctl " c["ioctl"] + 0
        }' "$work/$crowd_label-perf-stat.txt" >"$work/$crowd_label-syscalls.txt"
}

stop_crowd() {
    touch "$work/$crowd_label.stop"
    wait "$clients"
}

# The server's figures in the lines idle_table.py reads: cluster-bench's counts and what was measured of
# the server itself.
write_figures() {
    grep -E '^idle\.(count|online|heartbeats_answered|connections_heartbeating|window_disconnects) ' \
        "$work/$1-clients.txt"
    local hz
    hz="$(getconf CLK_TCK)"
    echo "idle.heartbeat_s $heartbeat"
    echo "idle.ramp_s $ramp"
    echo "idle.window_s $window"
    echo "idle.rss_before_kib $rss_before"
    echo "idle.rss_online_kib $rss_online"
    echo "idle.rss_end_kib $rss_end"
    echo "idle.server_cpu_ms $(((cpu_end - cpu_online) * 1000 / hz))"
    echo "idle.server_user_ms $(((user_end - user_online) * 1000 / hz))"
    echo "idle.server_wakeups $(wakeups_between "$wake_online" "$wake_end")"
    [ -f "$work/$1-syscalls.txt" ] && cat "$work/$1-syscalls.txt"
    return 0
}
