#!/usr/bin/env bash
# Issue 22, "Presence is quadratic": N users log in to one real `chat-node serve` (SQLite in a
# temporary directory, scrypt cost 10) from several client processes, all of them in a few shared
# rooms and some in direct conversations, so each login's presence has an audience of a thousand (a
# room of more than 1,000 is large and carries no presence, docs/PROTOCOL.md §8: --rooms 8 would
# leave only the direct conversations).
# Prints the logins per second, the time until all were online, the node's RSS before the first
# login, with all online and after all left, and whether each user learnt exactly its contacts
# online. Targets: 19,000 logins in under 60 s; RSS after within 10 % of before.
# The clients are ChatClients: from PRESENCE_BATCH on (docs/PROTOCOL.md §8) they ask for it and count a
# batch's notices one by one, so old and new binaries (NODE_BENCH_BIN) compare single frames with batches.
#
#   Scripts/node-logins.sh                                19,000 users, 19 rooms of 1,000, 4 client processes
#   Scripts/node-logins.sh --count 2000 --rooms 4 --processes 2
#   Scripts/node-logins.sh --count 4000 --rooms 200 --processes 2 --heaptrack
#       the node under heaptrack, killed 15 s after all left: what is still allocated then, by call
#       site (heaptrack's leaks), and malloc's own figures of every arena (in use, free but kept)
#   Scripts/node-logins.sh --count 4000 --rooms 200 --processes 2 --heap-pages
#       15 s after all left, what holds the pages of malloc's main heap resident: the blocks in use
#       by kind (Swift objects by type), and the pages each kind holds alone (Scripts/heap_pages.py)
#   Scripts/node-logins.sh --count 4000 --rooms 4 --processes 4 --sends
#       also the node's send system calls from the first login until all were online (`perf stat` on
#       the syscall tracepoint: needs perf and tracefs), and the presence notices per send
#
# The accounts exist before the run: `cluster-bench seed` prints SQL that sqlite3 applies to the
# node's database (schema made by `chat-node migrate` and `account list`): every account with one scrypt hash at
# cost 10 (shared: a check costs the same whatever the salt), user i in room i mod R, and a direct
# conversation between users i and i + 1 for every i mod 10 = 0 (a membership without a message).
# Each client process logs in one at a time: the node takes 4 logins in progress per address, and
# every process is 127.0.0.1. Release builds (chat-node as a product of the parent package,
# cluster-bench of this one); loopback only; the script stops only the processes it started.
set -uo pipefail
cd "$(dirname "$0")/.."

count=19000
rooms=19
direct_every=10
processes=4
cost=10
heaptrack=false
heap_pages=false
sends=false
while [ $# -gt 0 ]; do
    case "$1" in
    --count) count="$2"; shift ;;
    --rooms) rooms="$2"; shift ;;
    --direct-every) direct_every="$2"; shift ;;
    --processes) processes="$2"; shift ;;
    --heaptrack) heaptrack=true ;;
    --heap-pages) heap_pages=true ;;
    --sends) sends=true ;;
    *) echo "usage: $0 [--count N] [--rooms R] [--direct-every D] [--processes P] [--heaptrack] [--heap-pages] [--sends]" >&2; exit 2 ;;
    esac
    shift
done

source Scripts/node-bench-setup.sh node-logins

db="$work/chat.db"
layout=(--label u --total "$count" --rooms "$rooms" --direct-every "$direct_every")
# The node's schema (migrate: messages; account list: the accounts table), then the seed.
"$bin/chat-node" migrate --database "$db" >/dev/null || exit 1
"$bin/chat-node" account list --database "$db" >/dev/null || exit 1
"$bin/cluster-bench" seed "${layout[@]}" --scrypt-cost "$cost" | sqlite3 -bail "$db" || exit 1

flags=(serve --host 127.0.0.1 --port 0 --no-http --database "$db" --max-connections $((count + 100))
    --scrypt-cost "$cost" --log-level notice)
echo "node:    chat-node ${flags[*]}"
echo "clients: $processes × cluster-bench logins ${layout[*]} --logins-in-flight 1"
if $heaptrack; then
    heaptrack -o "$work/node" "$bin/chat-node" "${flags[@]}" >"$work/node.out" 2>"$work/node.err" &
else
    "$bin/chat-node" "${flags[@]}" >"$work/node.out" 2>"$work/node.err" &
fi
started+=($!)
wait_for_node_port
node="$(pgrep -n -x chat-node -P "${started[0]}" || echo "${started[0]}")"
$heaptrack || node="${started[0]}"

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$node/status"; }
# RSS by kind, in MiB: mapped files (code pages the logins touched stay), malloc's main heap, other
# anonymous memory (the password threads' arenas, thread stacks).
rss_kinds() {
    awk '/^[0-9a-f]+-[0-9a-f]+ / { kind = ($6 ~ /^\// ? "files" : ($6 == "[heap]" ? "heap" : "other")) }
        /^Rss:/ { rss[kind] += $2 } END { printf "files %.1f, heap %.1f, other %.1f", rss["files"] / 1024, rss["heap"] / 1024, rss["other"] / 1024 }' \
        "/proc/$node/smaps"
}
# Resident KiB of each mapped file, its mappings summed: whose pages the logins touched and left.
rss_by_file() {
    awk '/^[0-9a-f]+-[0-9a-f]+ / { file = ($6 ~ /^\// ? $6 : "") } /^Rss:/ && file != "" { rss[file] += $2 }
        END { for (f in rss) print f, rss[f] }' "/proc/$node/smaps" | sort
}
# utime + stime in clock ticks (fields 14 and 15; the command name has no spaces).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$node/stat"; }

sleep 1
rss_before="$(rss_kib)"
kinds_before="$(rss_kinds)"
rss_by_file >"$work/files.before"
cpu_before="$(cpu_ticks)"
share=$((count / processes))
clients=()
if $sends; then
    perf stat -x, -e syscalls:sys_enter_sendto -p "$node" -o "$work/sends.csv" &
    sends_pid=$!
fi
ramp_start=$EPOCHREALTIME
for k in $(seq 0 $((processes - 1))); do
    n=$share
    [ "$k" -eq $((processes - 1)) ] && n=$((count - share * (processes - 1)))
    "$bin/cluster-bench" logins --ports "$port" --pids "$node" "${layout[@]}" --first $((k * share)) --count "$n" \
        --logins-in-flight 1 --ready-timeout 900 --stop-file "$work/stop" >"$work/clients.$k.txt" 2>&1 &
    clients+=($!)
    started+=($!)
done
# All online: every process said so (or one ended early).
while true; do
    ready=0
    for k in $(seq 0 $((processes - 1))); do
        if grep -q '^logins\.online ' "$work/clients.$k.txt" 2>/dev/null || ! kill -0 "${clients[$k]}" 2>/dev/null; then
            ready=$((ready + 1))
        fi
    done
    [ "$ready" -eq "$processes" ] && break
    sleep 0.1
done
ramp_end=$EPOCHREALTIME
cpu_online="$(cpu_ticks)"
if $sends; then
    kill -INT "$sends_pid"
    wait "$sends_pid" 2>/dev/null
fi
# The last logins' snapshot pages and announcements, then the figure with all online.
sleep 3
rss_online="$(rss_kib)"
touch "$work/stop"
# Each process checks its users' presence, then stays online until all have checked.
until [ "$(cat "$work"/clients.*.txt | grep -c '^logins\.presence_exact_users ')" -ge "$processes" ]; do
    alive=0
    for pid in "${clients[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" -eq 0 ] && break
    sleep 0.1
done
stalls_before="$(grep -c 'run loop stalled' "$work/node.err")"
touch "$work/stop.leave"
status=0
for pid in "${clients[@]}"; do wait "$pid" || status=1; done
# Everyone left when their processes ended; the node announces it, then settles.
sleep 5
rss_after="$(rss_kib)"
sleep 10
rss_later="$(rss_kib)"
kinds_later="$(rss_kinds)"
rss_by_file >"$work/files.later"
kill -0 "$node" 2>/dev/null || { echo "chat-node ended:" >&2; tail -5 "$work/node.err" >&2; status=1; }

sum() { cat "$work"/clients.*.txt | sed -n "s/^logins\.$1 //p" | awk '{ s += $1 } END { print s + 0 }'; }
online="$(sum online)"
ticks_per_s="$(getconf CLK_TCK)"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (after the run)"
echo
echo "| chat-node, $count logins at scrypt cost $cost, $rooms rooms, direct every $direct_every | value |"
echo "| --- | ---: |"
awk -v s="$ramp_start" -v e="$ramp_end" -v n="$online" -v c="$count" 'BEGIN {
    printf "| online / users | %d / %d |\n", n, c
    printf "| **time until all were online** | **%.1f s** |\n", e - s
    printf "| logins per second | %.0f |\n", n / (e - s) }'
awk -v t="$((cpu_online - cpu_before))" -v hz="$ticks_per_s" -v n="$online" 'BEGIN {
    if (n > 0) printf "| node CPU during the logins / per login | %.1f s / %.2f ms |\n", t / hz, t * 1000 / hz / n }'
echo "| login retries (refused for now) / disconnects | $(sum login_retries) / $(sum disconnects) |"
echo "| presence notices received / contacts online expected / known at the end | $(sum presence_notices) / $(sum presence_expected) / $(sum presence_known) |"
echo "| users knowing exactly their contacts online / strangers announced | $(sum presence_exact_users) / $(sum presence_strangers) |"
if $sends; then
    # Every send of the logins: LOGIN_ACKs, snapshots and announcements alike.
    awk -F, -v n="$(sum presence_notices)" -v c="$online" '/sys_enter_sendto/ && $1 > 0 {
        printf "| node sends until all were online / per login / presence notices per send | %d / %.1f / %.2f |\n", $1, $1 / c, n / $1 }' \
        "$work/sends.csv"
fi
echo "| longest wait for the last presence after all were online | $(cat "$work"/clients.*.txt | sed -n 's/^logins\.presence_settle_s //p' | sort -g | tail -1) s (+3 s) |"
echo "| RSS before the first login → all online | $((rss_before / 1024)) → $((rss_online / 1024)) MiB |"
awk -v b="$rss_before" -v a="$rss_after" -v l="$rss_later" 'BEGIN {
    printf "| **RSS after all left** (5 s; 15 s) | **%.1f MiB = %+.1f %%** (%.1f MiB = %+.1f %%) |\n",
        a / 1024, (a - b) * 100 / b, l / 1024, (l - b) * 100 / b }'
echo "| RSS by kind before → 15 s after all left (MiB) | $kinds_before → $kinds_later |"
join "$work/files.before" "$work/files.later" | awk '$3 - $2 >= 64 { n = split($1, p, "/"); printf "%.2f %s\n", ($3 - $2) / 1024, p[n] }' |
    sort -gr | head -6 | awk '{ printf "%s%s +%s", (NR > 1 ? ", " : ""), $2, $1 } END { if (NR) print "" }' |
    sed 's/^/| mapped files that grew most before → 15 s after (MiB) | /; s/$/ |/'
grep -h 'freed heap given back\|follow-up trim' "$work/node.err" | sed 's/^.*chat-node: /| node: /; s/$/ |/' | head -10
echo "| client CPU, all processes | $(sum client_cpu_ms) ms |"
print_stalls_since "$stalls_before" "once all left at once"
grep -h '^cluster-bench:' "$work"/clients.*.txt | head -5
if $heap_pages; then
    echo
    python3 Scripts/heap_pages.py "$node"
fi
if $heaptrack; then
    # malloc_stats() prints every arena's system bytes and bytes in use to the node's stderr.
    gdb -p "$node" -batch -ex 'call (void) malloc_stats()' >/dev/null 2>&1
    echo
    echo "malloc_stats 15 s after all left (system bytes: held from the system; in use: live blocks):"
    sed -n '/^Arena 0:/,/^max mmap bytes/p' "$work/node.err"
    # SIGKILL, so nothing is freed by a graceful stop: heaptrack's leaks are what was live then.
    kill -KILL "$node" 2>/dev/null
    wait "${started[0]}" 2>/dev/null
    started=()
    data="$(ls "$work"/node*.zst "$work"/node*.gz 2>/dev/null | head -1)"
    cp "$data" "/tmp/node-logins-heap.$$.${data##*.}"
    heaptrack_print -f "$data" --print-peaks 0 \
        --print-allocators 0 --print-leaks 1 --print-temporary 0 --peak-limit 40 \
        --sub-peak-limit 8 >"$work/heap.txt" 2>&1
    cp "$work/heap.txt" "/tmp/node-logins-heap.$$.txt"
    echo "live blocks 15 s after all left, by call site: /tmp/node-logins-heap.$$.txt (data: .${data##*.})"
    sed -n '/MEMORY LEAKS/,$p' "$work/heap.txt" | head -60
fi
[ "$status" -eq 0 ] && [ "$online" -eq "$count" ] && [ "$(sum presence_exact_users)" -eq "$count" ]
