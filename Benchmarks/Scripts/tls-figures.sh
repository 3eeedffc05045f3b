#!/usr/bin/env bash
# TLS figures for the chat node (issue 21), beside Python's TLS (asyncio + ssl, OpenSSL underneath):
#   - memory per idle TLS connection: the server's RSS grown by COUNT connections held after their
#     handshake (the IM port, nobody logged in), OpenSSL included, beside the same for plaintext TCP;
#   - handshakes per second: `openssl s_time -new` (full handshakes, one at a time, for SECONDS).
# Prints a table with the machine and its load; run it three times for the spread.
#   Benchmarks/Scripts/tls-figures.sh                 # COUNT=1000 SECONDS=5
#   COUNT=2000 SECONDS=10 CHAT_NODE=.build/release/chat-node Benchmarks/Scripts/tls-figures.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
count="${COUNT:-1000}"
seconds="${SECONDS_PER_RUN:-5}"
if [ -z "${CHAT_NODE:-}" ]; then
    (cd "$root" && swift build -c release --product chat-node >/dev/null)
    CHAT_NODE="$(cd "$root" && swift build -c release --show-bin-path)/chat-node"
fi
work="$(mktemp -d -t tls-figures.XXXXXX)"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
cd "$work"
bash "$root/Scripts/make-test-certificate.sh" "$work"

rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }

# Starts a server (its command in "$@"), waits for "listening on HOST:PORT", sets $server and $port.
start() {
    local log="$work/server.$RANDOM.log"
    "$@" > "$log" 2>&1 &
    server=$!
    pids+=("$server")
    for _ in $(seq 100); do grep -q "listening on" "$log" && break; sleep 0.1; done
    port="$(grep -o 'listening on 127.0.0.1:[0-9]*' "$log" | head -1 | sed 's/.*://')"
}

# RSS growth per connection (bytes) of $server while COUNT connections of mode $1 are held.
per_connection() {
    local before after fifo="$work/hold.$RANDOM"
    mkfifo "$fifo"
    sleep 0.5
    before="$(rss_kib "$server")"
    python3 "$here/tls_idle.py" "$port" "$count" "$1" "$work/ca.pem" < "$fifo" > "$work/idle.out" 2> "$work/idle.err" &
    local clients=$!
    exec 9> "$fifo"
    for _ in $(seq 600); do grep -q ready "$work/idle.out" && break; sleep 0.1; done
    sleep 1
    after="$(rss_kib "$server")"
    exec 9>&-
    wait "$clients" || true
    rm -f "$fifo"
    local open
    open="$(awk '/^ready/ { print $2 }' "$work/idle.out")"
    [ "${open:-0}" -gt 0 ] || { echo "n/a"; return; }
    # Beside the figure, how many of COUNT were open when it was read.
    echo "$(( (after - before) * 1024 / open )) B ($open open)"
}

handshakes() {
    openssl s_time -connect "127.0.0.1:$port" -new -time "$seconds" -CAfile ca.pem 2>/dev/null \
        | awk '/real seconds/ { printf "%.0f\n", $1 / $4 }' | tail -1
}

node_args=(serve --host 127.0.0.1 --port 0 --no-http --login-seconds 600 --max-connections $((count + 100)) --scrypt-cost 4)
start "$CHAT_NODE" "${node_args[@]}" --database "$work/plain.sqlite"
plain_bytes="$(per_connection plain)"
kill "$server"
start "$CHAT_NODE" "${node_args[@]}" --database "$work/tls.sqlite" --tls-cert node.pem --tls-key node.key
tls_bytes="$(per_connection tls)"
node_rate="$(handshakes)"
kill "$server"
start python3 "$here/tls_python_server.py" node.pem node.key
python_bytes="$(per_connection tls)"
python_rate="$(handshakes)"
kill "$server"

echo "machine: $(nproc) cores, $(awk -F: '/model name/ { print $2; exit }' /proc/cpuinfo | sed 's/^ *//'); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "chat-node: $CHAT_NODE; $count idle connections; s_time ${seconds}s; $(openssl version)"
echo
echo "| | chat-node | Python asyncio + ssl |"
echo "|---|---|---|"
echo "| RSS per idle plaintext TCP connection | $plain_bytes | – |"
echo "| RSS per idle TLS connection (after the handshake) | $tls_bytes | $python_bytes |"
echo "| full handshakes per second (openssl s_time -new, one at a time) | $node_rate | $python_rate |"
