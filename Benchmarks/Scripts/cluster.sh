#!/usr/bin/env bash
# Chat nodes beyond one process (issue 20): one chat node on SQLite beside a cluster of 3 nodes on
# PostgreSQL + Redis, then idle heartbeating connections held by 6 clustered nodes.
#
#   Scripts/cluster.sh                         2 runs of each traffic workload, then 6 × 2,000 idle
#   Scripts/cluster.sh --runs 0 --idle-per-node 16700 --idle-ready-timeout 1500
#                                              the issue's 100,000 (6 × 16,700), idle only: no traffic runs
#   Scripts/cluster.sh --skip-idle             the traffic workloads only
#   Scripts/cluster.sh --smoke                 debug builds, a few seconds of each workload, counts only (CI)
#
# Traffic workloads, each against fresh servers (a new SQLite file; a new PostgreSQL data directory and
# Redis), the sender always on the first node and, in the cluster, its recipients on the other nodes:
#   direct     M messages to one user, one at a time (SEND → DELIVER latency across nodes)
#   room       M messages to a room of 10 members, one at a time (latency of a room message across nodes)
#   fanout     M messages to a room of 1,000 members spread over all nodes, at most W in flight
#              (deliveries per second; node CPU per delivery, summed over the nodes)
# Idle: N connections per node, each node's from a client process of its own (the open-file limit is
# 20,000 per process), heartbeating every 10 s; memory per connection and idle CPU per node over a window.
# As root the whole run goes into a network namespace of its own (`unshare --net`) whose ephemeral port
# range is widened to 1024–65535: loopback's default gives a client 28,232 ports per node, and no other
# process's loopback traffic shares the run's. --no-namespace runs on the host's network.
#
# Needs the parent package's chat-node and this package's cluster-bench (built here, release; debug with
# --smoke), PostgreSQL (initdb, pg_ctl) and redis-server from Debian (../Scripts/setup.sh --tests), and
# python3 for the table. Every server is this script's: PostgreSQL in a temporary directory on a unix
# socket only (as the `postgres` user when run as root: it refuses root), redis-server with no TCP port,
# nodes on 127.0.0.1 port 0. All are stopped and the directory removed at exit, Ctrl-C included.
set -uo pipefail
script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/.."

smoke=false
runs=2
idle_per_node=2000
idle_nodes=6
idle_seconds=30
idle_ready=300
skip_idle=false
namespace=true
keep_results=""
node_override=""
arguments=("$@")
messages=300
fanout_members=1000
fanout_messages=100
fanout_window=20
while [ $# -gt 0 ]; do
    case "$1" in
    --smoke) smoke=true ;;
    --runs) runs="$2"; shift ;;
    --idle-per-node) idle_per_node="$2"; shift ;;
    --idle-nodes) idle_nodes="$2"; shift ;;
    --idle-seconds) idle_seconds="$2"; shift ;;
    --idle-ready-timeout) idle_ready="$2"; shift ;;
    --skip-idle) skip_idle=true ;;
    --no-namespace) namespace=false ;;
    --keep-results) keep_results="$2"; shift ;;
    --node) node_override="$2"; shift ;;
    --messages) messages="$2"; shift ;;
    --fanout-members) fanout_members="$2"; shift ;;
    --fanout-messages) fanout_messages="$2"; shift ;;
    *) echo "usage: $0 [--smoke] [--runs N] [--messages M] [--fanout-members N] [--fanout-messages M] [--skip-idle] [--idle-per-node N] [--idle-nodes N] [--idle-seconds S] [--idle-ready-timeout S] [--no-namespace] [--keep-results DIR] [--node CHAT_NODE]" >&2; exit 2 ;;
    esac
    shift
done
configuration=release
if $smoke; then
    # Seconds once built: enough clients and messages that a lost, doubled or unacknowledged delivery
    # shows in the counts; nothing is timed.
    configuration=debug
    runs=1
    messages=20
    fanout_members=30
    fanout_messages=10
    idle_per_node=20
    idle_nodes=3
    idle_seconds=12
    idle_ready=60
    namespace=false
fi

# Into a network namespace of its own, once, before anything is built or started (see the header). Only
# root may make one; anyone else runs on the host's network, and says so.
if $namespace && [ -z "${CLUSTER_SH_NAMESPACE:-}" ]; then
    if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && unshare --net true 2>/dev/null; then
        exec env CLUSTER_SH_NAMESPACE=1 unshare --net -- bash "$script" "${arguments[@]}"
    fi
    echo "cluster.sh: not root (or no unshare): on the host's network, 28,232 ephemeral ports per node" >&2
fi
if [ -n "${CLUSTER_SH_NAMESPACE:-}" ]; then
    ip link set lo up || exit 1
    sysctl -qw net.ipv4.ip_local_port_range="1024 65535" || exit 1
fi

# Built every time (a no-op when up to date), so a chat-node from an older checkout is never measured.
# Release: chat-node is built here, as a product of the parent package, sharing this package's release
# build of the modules cluster-bench links too (one release build, not two). Debug (--smoke): the
# parent's own debug build, which CI has made already.
swift build -c "$configuration" --product cluster-bench >/dev/null || exit 1
bench="$(swift build -c "$configuration" --show-bin-path)/cluster-bench"
if [ -n "$node_override" ]; then
    # A chat-node built elsewhere (another configuration or checkout): measured as it is, named below.
    node="$(realpath "$node_override")"
    [ -x "$node" ] || { echo "cluster.sh: $node_override is not an executable" >&2; exit 2; }
elif [ "$configuration" = release ]; then
    swift build -c release --product chat-node >/dev/null || exit 1
    node="$(swift build -c release --show-bin-path)/chat-node"
else
    (cd .. && swift build --product chat-node >/dev/null) || exit 1
    node="$(cd .. && swift build --show-bin-path)/chat-node"
fi
pg_bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
if [ ! -x "$pg_bin/pg_ctl" ] || ! command -v redis-server >/dev/null; then
    bash ../Scripts/setup.sh --tests || exit 1
    pg_bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
fi

echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(uname -sr), $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
echo "commit:  $(git -C .. log -1 --format='%h %s' | cut -c1-100)$(git -C .. diff --quiet HEAD -- || echo ' (with local changes)')"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min before the run; the machine may be shared)"
echo "network: $([ -n "${CLUSTER_SH_NAMESPACE:-}" ] && echo 'a namespace of its own' || echo "the host's"), ephemeral ports $(tr '\t' - </proc/sys/net/ipv4/ip_local_port_range), open files $(ulimit -n) per process"
echo "servers: chat-node ($([ -n "$node_override" ] && echo "$node, not built here" || echo "$configuration")) | $("$pg_bin/postgres" --version) | $(redis-server --version | cut -d' ' -f1-3)"

work="$(mktemp -d -t cluster.XXXXXX)"
# PostgreSQL's user must reach its directory inside this one.
chmod 755 "$work"
mkdir "$work/results"
pids=()
postgres_data=""
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
stop_all() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
    pids=()
    if [ -n "$postgres_data" ]; then
        as_postgres "$pg_bin/pg_ctl" -D "$postgres_data" -w -s -m immediate stop >/dev/null 2>&1
        postgres_data=""
    fi
}
trap 'stop_all; [ -n "$keep_results" ] && mkdir -p "$keep_results" && cp -r "$work/results" "$work"/*/node*.err "$keep_results"/ 2>/dev/null; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
status=0

# Waits (at most $3 s, default 10) for a line matching $2 in file $1 and prints its first capture group.
wait_for() {
    local found=""
    for _ in $(seq $((${3:-10} * 10))); do
        found="$(sed -n "s/$2/\1/p" "$1" 2>/dev/null | head -1)"
        [ -n "$found" ] && break
        sleep 0.1
    done
    echo "$found"
}

# A throw-away PostgreSQL in $1 on a unix socket there. Durability as the SQLite node's
# (synchronous=NORMAL: a commit survives the process, not the machine): fsync off, commits still
# written to the kernel before they return (synchronous_commit stays on). Sets postgres_url, service_pids.
start_postgres() {
    local directory="$1"
    mkdir -p "$directory"
    [ "$(id -u)" = 0 ] && chown postgres: "$directory"
    as_postgres "$pg_bin/initdb" -D "$directory/data" -A trust -U postgres -E UTF8 --no-locale --no-sync >"$directory/initdb.log" 2>&1 || {
        cat "$directory/initdb.log" >&2
        return 1
    }
    postgres_data="$directory/data"
    as_postgres "$pg_bin/pg_ctl" -D "$postgres_data" -l "$directory/server.log" -w -t 60 -s \
        -o "-c listen_addresses='' -c unix_socket_directories='$directory' -c fsync=off -c full_page_writes=off -c max_connections=50" start || {
        cat "$directory/server.log" >&2
        return 1
    }
    postgres_url="postgresql://postgres@/postgres?host=$directory"
    service_pids="$(head -1 "$postgres_data/postmaster.pid")"
    "$node" migrate --postgres "$postgres_url" --log-level error >/dev/null || return 1
}

# A throw-away redis-server with no TCP port, its socket in $1. Sets redis_url; adds to service_pids.
start_redis() {
    local directory="$1"
    mkdir -p "$directory"
    redis-server --port 0 --unixsocket "$directory/redis.sock" --unixsocketperm 700 --dir "$directory" \
        --save "" --appendonly no --daemonize no --logfile "$directory/redis.log" &
    pids+=($!)
    service_pids="$service_pids,$!"
    for _ in $(seq 100); do [ -S "$directory/redis.sock" ] && break; sleep 0.1; done
    redis_url="unix://$directory/redis.sock"
}

# Node flags: the defaults but for the rate of SENDs per connection (a sender here sends as fast as its
# window allows; default 50 a second) and room for the idle connections (default 1,024; 19,000 stays
# under the 20,000 descriptors a process may have). Logins keep the node's limits (4 in progress per
# address): the bench's clients ramp 4 at a time per node.
# scrypt cost 4 (default 14) makes each first login cheap; no page or WebSocket listener; notices
# logged (a cluster node's "joined the cluster").
node_flags=(--host 127.0.0.1 --port 0 --no-http --messages-per-second 100000 --max-connections 19000 --scrypt-cost 4 --log-level notice)
echo "node:    chat-node serve ${node_flags[*]} [--database FILE | --postgres URL --redis URL --node-id nodeK]"

# Starts $2 nodes of system $1 (sqlite or cluster) on fresh servers. Sets ports, node_pids, service_pids.
start_system() {
    local system="$1" count="$2" directory="$work/$1"
    rm -rf "$directory"
    mkdir -p "$directory"
    local storage=()
    service_pids=""
    if [ "$system" = sqlite ]; then
        storage=(--database "$directory/chat.db")
    else
        start_postgres "$directory/pg" || return 1
        start_redis "$directory/redis"
        storage=(--postgres "$postgres_url" --redis "$redis_url")
    fi
    ports=""
    node_pids=""
    for index in $(seq "$count"); do
        local flags=("${storage[@]}")
        [ "$system" = cluster ] && flags+=(--node-id "node$index")
        "$node" serve "${node_flags[@]}" "${flags[@]}" >"$directory/node$index.out" 2>"$directory/node$index.err" &
        pids+=($!)
        local port
        port="$(wait_for "$directory/node$index.out" '^listening on 127\.0\.0\.1:\([0-9]*\).*')"
        if [ -z "$port" ]; then
            echo "chat-node $index did not start:" >&2
            cat "$directory/node$index.out" "$directory/node$index.err" >&2
            return 1
        fi
        ports="${ports:+$ports,}$port"
        node_pids="${node_pids:+$node_pids,}$!"
    done
    if [ "$system" = cluster ]; then
        # Every node in the cluster before the first client.
        for index in $(seq "$count"); do
            [ -n "$(wait_for "$directory/node$index.err" '.*\(joined the cluster\).*' 30)" ] || {
                echo "chat-node $index did not join the cluster:" >&2
                cat "$directory/node$index.err" >&2
                return 1
            }
        done
    fi
}

# One traffic workload: run_traffic SYSTEM RUN WORKLOAD cluster-bench-arguments…
run_traffic() {
    local system="$1" run="$2" workload="$3"
    shift 3
    local out="$work/results/$system.$workload.$run.txt"
    echo "$system run $run: $workload" >&2
    # --foreground: the driver stays in this script's process group, so Ctrl-C ends it too and the
    # exit trap runs at once (timeout would otherwise shield it in a group of its own).
    timeout --foreground 600 "$bench" traffic --ports "$ports" --pids "$node_pids" ${service_pids:+--service-pids "$service_pids"} \
        --label "$workload$run" "$@" >"$out" 2>&1 || {
        status=1
        echo "$system run $run: $workload FAILED:" >&2
        grep -v '^cluster\.' "$out" >&2
    }
}

for run in $(seq "$runs"); do
    for system in sqlite cluster; do
        nodes=1
        [ "$system" = cluster ] && nodes=3
        start_system "$system" "$nodes" || { status=1; stop_all; continue; }
        run_traffic "$system" "$run" direct --to user --recipients 1 --spread others --messages "$messages" --window 1
        run_traffic "$system" "$run" room --to room --recipients 10 --spread others --messages "$messages" --window 1
        run_traffic "$system" "$run" fanout --to room --recipients "$fanout_members" --spread all \
            --messages "$fanout_messages" --window "$fanout_window" --ready-timeout 300
        stop_all
    done
done
echo "load after traffic: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# Idle connections: one client process per node, all logging in at once (each at most 4 at a time to
# its node), then a window in which every connection heartbeats; the nodes' RSS and CPU from /proc.
run_idle() {
    local total=$((idle_per_node * idle_nodes))
    echo "idle: $idle_nodes nodes × $idle_per_node connections" >&2
    start_system cluster "$idle_nodes" || return 1
    local out="$work/results/idle.txt" stop="$work/idle.stop"
    local -a port_list pid_list drivers
    IFS=, read -r -a port_list <<<"$ports"
    IFS=, read -r -a pid_list <<<"$node_pids"
    sleep 1
    local rss_before=() cpu_start=() cpu_online=() cpu_end=() rss_online=() rss_end=()
    for pid in "${pid_list[@]}"; do rss_before+=("$(rss_kib "$pid")"); cpu_start+=("$(cpu_ticks "$pid")"); done
    local services_start services_online services_end services_rss_before services_rss_online
    services_start="$(services_cpu_ticks)"
    services_rss_before="$(services_rss_kib)"
    local started=$SECONDS
    for index in "${!port_list[@]}"; do
        "$bench" idle --ports "${port_list[$index]}" --pids "${pid_list[$index]}" --label idle \
            --first $((index * idle_per_node)) --count "$idle_per_node" --heartbeat 10 \
            --ready-timeout "$idle_ready" --stop-file "$stop" >"$work/results/idle.client$index.txt" 2>&1 &
        pids+=($!)
        drivers+=($!)
    done
    # Until every client process says how its ramp ended (all online, or its ready timeout).
    for index in "${!port_list[@]}"; do
        [ -n "$(wait_for "$work/results/idle.client$index.txt" '^idle\.online \([0-9]*\)' $((idle_ready + 30)))" ] || echo "client process $index did not report" >&2
    done
    local ramp=$((SECONDS - started))
    for pid in "${pid_list[@]}"; do rss_online+=("$(rss_kib "$pid")"); cpu_online+=("$(cpu_ticks "$pid")"); done
    services_online="$(services_cpu_ticks)"
    services_rss_online="$(services_rss_kib)"
    local window_start=$SECONDS
    sleep "$idle_seconds"
    for pid in "${pid_list[@]}"; do rss_end+=("$(rss_kib "$pid")"); cpu_end+=("$(cpu_ticks "$pid")"); done
    services_end="$(services_cpu_ticks)"
    local window=$((SECONDS - window_start))
    touch "$stop"
    for pid in "${drivers[@]}"; do wait "$pid" || status=1; done
    {
        echo "idle.nodes $idle_nodes"
        echo "idle.per_node $idle_per_node"
        echo "idle.total $total"
        echo "idle.ramp_wall_s $ramp"
        echo "idle.window_wall_s $window"
        for index in "${!pid_list[@]}"; do
            echo "idle.node$index rss_before_kib=${rss_before[$index]} rss_online_kib=${rss_online[$index]} rss_end_kib=${rss_end[$index]} cpu_ramp_ticks=$((cpu_online[index] - cpu_start[index])) cpu_window_ticks=$((cpu_end[index] - cpu_online[index]))"
        done
        echo "idle.services rss_before_kib=$services_rss_before rss_online_kib=$services_rss_online cpu_ramp_ticks=$((services_online - services_start)) cpu_window_ticks=$((services_end - services_online))"
        echo "idle.clock_ticks_per_s $(getconf CLK_TCK)"
        cat "$work"/results/idle.client*.txt
    } >"$out"
    stop_all
}
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# utime + stime (fields 14 and 15; the command name in field 2 has no spaces here).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# PostgreSQL (the postmaster and its backends) and Redis, summed: CPU ticks, and RSS (each backend's
# RSS counts the shared buffers it touched, so the sum overstates PostgreSQL's memory). A backend that
# ended is counted in its parent's cutime + cstime (fields 16 and 17), so the sum never goes back.
service_tree() { for pid in ${service_pids//,/ }; do echo "$pid"; pgrep -P "$pid"; done; }
services_cpu_ticks() {
    local sum=0
    for pid in ${service_pids//,/ }; do sum=$((sum + $(awk '{ print $16 + $17 }' "/proc/$pid/stat" 2>/dev/null || echo 0))); done
    for pid in $(service_tree); do sum=$((sum + $(cpu_ticks "$pid" 2>/dev/null || echo 0))); done
    echo "$sum"
}
services_rss_kib() { local sum=0; for pid in $(service_tree); do sum=$((sum + $(rss_kib "$pid" 2>/dev/null || echo 0))); done; echo "$sum"; }

if ! $skip_idle; then
    run_idle || status=1
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
if $smoke; then
    python3 Scripts/cluster_table.py --counts-only "$work/results" || status=1
else
    python3 Scripts/cluster_table.py "$work/results" || status=1
fi
exit $status
