#!/usr/bin/env bash
# Issue 22, "Memory" and "Idle CPU": one real `chat-node serve` (SQLite in a temporary directory) holds
# N idle logged-in connections from one `cluster-bench idle` client process. Prints the node's RSS per
# connection ((RSS with all online − RSS before the first login) / N), its CPU over an idle window
# (/proc/PID/stat) as a share of one core, and its CPU per heartbeat answered.
#
#   Scripts/node-idle.sh                          19,000 connections, default heartbeat (30 s), 60 s window
#   Scripts/node-idle.sh --count 2000 --seconds 20 --heartbeat 2
#   Scripts/node-idle.sh --count 2000 --heaptrack   the node under heaptrack: live heap by call site
#   Scripts/node-idle.sh --count 4000 --heartbeat 2 --perf   the window under `perf record`: where the
#                                                   node's CPU goes (flat profile, then call chains)
#   --settle S: seconds between the last login and the window (default 10), so the window holds no
#   work left over from the logins
#   Scripts/node-idle.sh --count 8000 --seconds 5 --hang-up [--perf]   after the window the client
#                                                   process is killed, so the kernel closes all N
#                                                   connections at once: the node's longest loop pass
#                                                   (its stall detector's lines) while it reads the
#                                                   closes and clears their presence; with --perf, the
#                                                   profile of those seconds instead of the window's
#   Scripts/node-idle.sh --mosquitto              then the same crowd (N, heartbeat as MQTT keepalive,
#                                                   settle, window) on Debian's mosquitto, and one table
#                                                   of both with chat-node ÷ mosquitto
#                                                   (Scripts/node-idle-mosquitto.sh, Scripts/mqtt_idle.py)
#   Scripts/node-idle.sh --count 2000 --heartbeat 2 --seconds 10 --callgrind
#                                                   instructions per heartbeat, independent of the
#                                                   machine's load: the node under callgrind, counting
#                                                   only in two windows of S and 2S seconds after the
#                                                   settle (Scripts/idle_callgrind.py takes the difference)
#   Scripts/node-idle.sh --count 2000 --heartbeat 2 --seconds 20 --strace
#                                                   the window under `strace -c -f`: the node's system
#                                                   calls by count (per heartbeat: ÷ heartbeats answered);
#                                                   strace slows every call, so the CPU figures of such a
#                                                   run are not the node's
#   Scripts/node-idle.sh --floor [--mosquitto]    then the same crowd (the same cluster-bench clients, the
#                                                   same bytes on the wire) on Floor/idle-floor.c, a minimal
#                                                   C epoll server: what the kernel alone costs per
#                                                   heartbeat here; one table with each server ÷ the floor
#                                                   (Scripts/node-idle-floor.sh, Scripts/idle_table.py)
#   --floor-batch-ms M (repeatable; implies --floor): the floor again with `--batch-ms M`, its wake-ups
#                                                   at least M ms apart — how much fewer wake-ups per
#                                                   heartbeat would save, measured on the floor
#   --syscalls S: after each server's window, S more seconds with its system calls counted by perf's
#   tracepoints (per heartbeat in the table: epoll_waits, reads, writes, all); default one heartbeat
#   period with --floor or --mosquitto, else 0. The window itself counts wake-ups (voluntary context
#   switches) from /proc.
#   --paced / --unpaced: cluster-bench opens client i at i × heartbeat ÷ N s, so the heartbeats are
#   spread evenly over each period on any server (as mqtt_idle.py spreads its pings) — the default with
#   --floor or --mosquitto; unpaced, the logins go as fast as the server takes them and the heartbeats
#   come in a burst as long as the logins took (the default alone, as in the results before 2026-11-27)
#   --pin: every server on CPU 0 and its clients on CPU 1 (`taskset`; the node, the floor and mosquitto
#   alike, and with --heaptrack or --callgrind the tool with its server). A real node's clients are on
#   other machines and share neither its core nor its caches; unpinned on this 2-core VM, the scheduler
#   moves the node and the client process between the cores, and the same binary's user time per
#   heartbeat varied 4× between runs (IM-RESULTS, "Main after `mem7` and `batch9`"). Pinning keeps them
#   apart, not other work off CPU 0: say the machine's load beside the figures. The table then ends
#   with each server ÷ the floor per heartbeat (with --floor).
#   Scripts/node-idle.sh --pin --floor --count 8000   the pinned pair: node, then floor, same crowd
#   NODE_BENCH_BIN=DIR Scripts/node-idle.sh       chat-node and cluster-bench from DIR, not built here
#
# Setup only: the node runs with scrypt cost 4 (default 14), so 19,000 first logins (registrations)
# take a minute or two, 4 in flight as the node admits from one address. The measured window has no
# logins. The client process and the node each stay under the 20,000 open-file limit. Release builds
# (chat-node as a product of the parent package, cluster-bench of this one); loopback only; the script
# stops only the processes it started.
set -uo pipefail
cd "$(dirname "$0")/.."

count=19000
seconds=60
heartbeat=30
heaptrack=false
perf=false
settle=10
mosquitto=false
floor=false
syscalls=""
paced=""
floor_batch_ms=""
hang_up=false
callgrind=false
strace=false
pin=false
while [ $# -gt 0 ]; do
    case "$1" in
    --count) count="$2"; shift ;;
    --seconds) seconds="$2"; shift ;;
    --heartbeat) heartbeat="$2"; shift ;;
    --heaptrack) heaptrack=true ;;
    --perf) perf=true ;;
    --settle) settle="$2"; shift ;;
    --mosquitto) mosquitto=true ;;
    --floor) floor=true ;;
    --syscalls) syscalls="$2"; shift ;;
    --paced) paced=1 ;;
    --floor-batch-ms) floor=true; floor_batch_ms+=" $2"; shift ;;
    --unpaced) paced=0 ;;
    --hang-up) hang_up=true ;;
    --callgrind) callgrind=true ;;
    --strace) strace=true ;;
    --pin) pin=true ;;
    *) echo "usage: $0 [--count N] [--seconds S] [--heartbeat S] [--settle S] [--heaptrack] [--perf] [--hang-up] [--callgrind] [--strace] [--floor] [--floor-batch-ms M]… [--mosquitto] [--syscalls S] [--paced|--unpaced] [--pin]" >&2; exit 2 ;;
    esac
    shift
done
# Comparing servers, each one's system calls are counted too, after its window, over one heartbeat
# period (whatever its phase, a period holds each client's heartbeat once); and the logins are paced, so
# every server gets the same evenly spread heartbeats.
if [ -z "$syscalls" ]; then
    if $floor || $mosquitto; then syscalls=$heartbeat; else syscalls=0; fi
fi
if [ -z "$paced" ]; then
    if $floor || $mosquitto; then paced=1; else paced=0; fi
fi

# The commands' prefixes that pin a server and its clients (--pin); empty otherwise.
server_pin=()
client_pin=()
if $pin; then
    if [ "$(nproc)" -lt 2 ]; then
        echo "--pin needs two CPUs (this machine has $(nproc))" >&2
        exit 2
    fi
    server_pin=(taskset -c 0)
    client_pin=(taskset -c 1)
fi

# With --pin, where the server (the pid in "server") and the client process run, as the kernel says:
# taskset's word, not the script's intent.
print_pinning() {
    [ ${#server_pin[@]} -gt 0 ] || return 0
    local server_cpus client_cpus
    server_cpus="$(taskset -cp "$server" 2>/dev/null | sed 's/.*: //')"
    client_cpus="$(taskset -cp "${2:-$clients}" 2>/dev/null | sed 's/.*: //')"
    echo "pinned:  $1 on CPU ${server_cpus:-?}, its clients on CPU ${client_cpus:-?}"
}

source Scripts/node-bench-setup.sh node-idle

flags=(serve --host 127.0.0.1 --port 0 --no-http --database "$work/chat.db" --max-connections "$count"
    --scrypt-cost 4 --log-level notice)
echo "node:    chat-node ${flags[*]}"
if $heaptrack; then
    "${server_pin[@]}" heaptrack -o "$work/node" "$bin/chat-node" "${flags[@]}" >"$work/node.out" 2>"$work/node.err" &
elif $callgrind; then
    # Valgrind cannot read the DWARF 5 Swift writes: a copy without debug information keeps its symbols.
    # Counting starts switched off, so the logins (scrypt) run at valgrind's uninstrumented pace.
    objcopy --strip-debug "$bin/chat-node" "$work/chat-node" || exit 1
    "${server_pin[@]}" valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/node.callgrind" \
        "$work/chat-node" "${flags[@]}" >"$work/node.out" 2>"$work/node.err" &
else
    "${server_pin[@]}" "$bin/chat-node" "${flags[@]}" >"$work/node.out" 2>"$work/node.err" &
fi
started+=($!)
wait_for_node_port
node="$(pgrep -n -x chat-node -P "${started[0]}" || echo "${started[0]}")"
$heaptrack || node="${started[0]}"

server="$node"
source Scripts/idle-crowd.sh
start_crowd node "$port"
print_pinning chat-node
open_window
if $callgrind; then
    # Two windows, S then 2S, each dumped on its own (the dump resets the counts).
    callgrind_control --instr=on "$node" >/dev/null && callgrind_control --zero "$node" >/dev/null
    sleep "$seconds"
    callgrind_control --dump=short "$node" >/dev/null
    sleep $((2 * seconds))
    callgrind_control --dump=long "$node" >/dev/null
elif $strace; then
    timeout -s INT "$seconds" strace -c -f -p "$node" -o "$work/strace.txt" >/dev/null 2>&1
elif $perf && ! $hang_up; then
    perf record -e cpu-clock -F 999 -g -p "$node" -o "$work/perf.data" -- sleep "$seconds" >/dev/null 2>&1
else
    sleep "$seconds"
fi
close_window
[ "$syscalls" -gt 0 ] && ! $strace && count_syscalls "$syscalls"
if $hang_up; then
    stalls_before="$(grep -c 'run loop stalled' "$work/node.err")"
    if $perf; then
        perf record -e cpu-clock -F 999 -g -p "$node" -o "$work/perf.data" -- sleep 8 >/dev/null 2>&1 &
        profiler=$!
        sleep 0.5
    fi
    hang_up_cpu="$(cpu_ticks)"
    kill -KILL "$clients"
    wait "$clients" 2>/dev/null
    if $perf; then wait "$profiler"; else sleep 8; fi
    hang_up_cpu=$(($(cpu_ticks) - hang_up_cpu))
else
    stop_crowd
fi
client_status=$?
figure() { sed -n "s/^idle\.$1 //p" "$work/node-clients.txt" | head -1; }
online="$(figure online)"
answered="$(figure heartbeats_answered)"
heartbeating="$(figure connections_heartbeating)"
disconnects="$(figure window_disconnects)"
ticks_per_s="$(getconf CLK_TCK)"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (after the window)"
echo
echo "| chat-node, $count idle connections, heartbeat every $heartbeat s | value |"
echo "| --- | ---: |"
echo "| online / heartbeating in the window / disconnects | ${online:-?} / ${heartbeating:-?} / ${disconnects:-?} |"
echo "| logins (registrations) took | $ramp s |"
echo "| RSS before the first login | $((rss_before / 1024)) MiB |"
echo "| RSS all online / at the window's end | $((rss_online / 1024)) / $((rss_end / 1024)) MiB |"
awk -v b="$rss_before" -v o="$rss_online" -v e="$rss_end" -v n="${online:-0}" 'BEGIN {
    if (n > 0) printf "| **RSS per connection** (all online; window end) | **%.2f KiB** (%.2f) |\n", (o - b) / n, (e - b) / n }'
# Heartbeats in the window: the clients' schedule (each heartbeats every period from its login) puts
# count × window ÷ heartbeat there; cluster-bench's own count runs from all online to its stop (the
# settle, and any count of system calls after the window, included).
awk -v t="$((cpu_end - cpu_online))" -v hz="$ticks_per_s" -v w="$window" -v n="${online:-0}" -v k="$heartbeat" \
    -v a="${answered:-0}" 'BEGIN {
    ms = t * 1000 / hz
    b = n * w / k
    printf "| **node CPU in the %d s window** | %d ms = **%.2f %% of a core** |\n", w, ms, ms / 10 / w
    if (b > 0) printf "| heartbeats in the window (count × window ÷ heartbeat) / **node CPU per heartbeat** | %d / **%.1f µs** |\n", b, ms * 1000 / b
    printf "| heartbeats answered from all online to the clients'"'"' stop | %d |\n", a }'
awk -v u="$((user_end - user_online))" -v t="$((cpu_end - cpu_online))" -v hz="$ticks_per_s" 'BEGIN {
    printf "| of the window'"'"'s CPU, user / system | %d / %d ms |\n", u * 1000 / hz, (t - u) * 1000 / hz }'
echo "| wake-ups in the window (voluntary context switches of the threads it began with) | $(wakeups_between "$wake_online" "$wake_end") |"
[ -f "$work/node-syscalls.txt" ] && sed 's/^idle\.\(.*\) \(.*\)$/| \1, after the window | \2 |/' "$work/node-syscalls.txt"
grep -v '^idle\.' "$work/node-clients.txt" | grep -v '^idle.progress' | head -5
if $hang_up; then
    echo "| all $count clients hung up at once: node CPU in the next 8 s | $((hang_up_cpu * 1000 / ticks_per_s)) ms |"
    print_stalls_since "$stalls_before" "after the hang-up"
fi
if $perf; then
    profile="/tmp/node-idle-perf.$$.txt"
    {
        perf report -i "$work/perf.data" --stdio --no-children --percent-limit 0.5 -g none 2>/dev/null
        perf report -i "$work/perf.data" --stdio --children --percent-limit 3 -g graph,0.5,caller --max-stack 40 2>/dev/null
    } >"$profile"
    echo "profile of the window: $profile"
    grep -v '^#' "$profile" | grep -v '^$' | head -40
fi
if $strace; then
    cp "$work/strace.txt" "/tmp/node-idle-strace.$$.txt"
    echo "system calls in the window (strace -c -f): /tmp/node-idle-strace.$$.txt"
    head -25 "$work/strace.txt"
fi
if $heaptrack; then
    kill -INT "$node" 2>/dev/null
    wait "${started[0]}"
    started=()
    heaptrack_print -f "$(ls "$work"/node*.zst "$work"/node*.gz 2>/dev/null | head -1)" --print-peaks 1 \
        --print-allocators 0 --print-leaks 0 --print-temporary 0 --peak-limit 25 \
        --sub-peak-limit 6 >"$work/heap.txt" 2>&1
    cp "$work/heap.txt" "/tmp/node-idle-heap.$$.txt"
    echo "heap peak by call site: /tmp/node-idle-heap.$$.txt"
    sed -n '/PEAK MEMORY CONSUMERS/,$p' "$work/heap.txt" | head -60
fi
if $callgrind; then
    short="$(grep -l '^desc: Trigger: .*short' "$work"/node.callgrind* | head -1)"
    long="$(grep -l '^desc: Trigger: .*long' "$work"/node.callgrind* | head -1)"
    echo
    python3 Scripts/idle_callgrind.py "$short" "$long" || client_status=1
    mkdir -p "/tmp/node-idle-callgrind.$$" && cp "$short" "$long" "/tmp/node-idle-callgrind.$$/"
    echo "dumps (for callgrind_annotate): /tmp/node-idle-callgrind.$$"
fi
floor_status=0
mosquitto_status=0
if $floor || $mosquitto; then
    write_figures node >"$work/chat-node.txt"
    tables=(chat-node="$work/chat-node.txt")
    # One server at a time: the node's memory and descriptors go before the next starts (--heaptrack has
    # stopped it already and emptied "started").
    if [ ${#started[@]} -gt 0 ]; then
        kill "${started[0]}" 2>/dev/null
        wait "${started[0]}" 2>/dev/null
    fi
fi
if $floor; then
    source Scripts/node-idle-floor.sh
    run_floor_idle floor
    tables+=(floor="$work/floor.txt")
    for ms in $floor_batch_ms; do
        run_floor_idle "floor-batch-${ms}ms" --batch-ms "$ms"
        tables+=("floor-batch-${ms}ms=$work/floor-batch-${ms}ms.txt")
    done
fi
if $mosquitto; then
    source Scripts/node-idle-mosquitto.sh
    run_mosquitto_idle
    tables+=(mosquitto="$work/mosquitto.txt")
fi
if $floor || $mosquitto; then
    echo
    python3 Scripts/idle_table.py "${tables[@]}" || client_status=1
fi
[ "$client_status" -eq 0 ] && [ "${online:-0}" -eq "$count" ] && [ "$floor_status" -eq 0 ] && [ "$mosquitto_status" -eq 0 ]
