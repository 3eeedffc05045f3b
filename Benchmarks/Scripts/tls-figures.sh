#!/usr/bin/env bash
# TLS figures for the chat node (issue 21), beside Python's TLS (asyncio + ssl, OpenSSL underneath) and
# `openssl s_server`:
#   - memory per idle TLS connection: the server's RSS grown by COUNT connections held after their
#     handshake (the IM port, nobody logged in), OpenSSL included, beside the same for plaintext TCP;
#   - handshakes per second: `openssl s_time -new` (full handshakes, one at a time, for SECONDS), TLS 1.3
#     and 1.2, on the node's IM port and its web port (HTTPS/wss), Python's server and s_server;
#   - echo throughput (MB/s) with and without TLS, one connection and CONNECTIONS at once
#     (tls_echo_load.py): ws-echo-server (RunLoopWebSocket, the node's web transport) over ws:// and
#     wss://, Python's asyncio echo over TCP and TLS (bytes, no WebSocket framing).
# Prints a table with the machine and its load before and after; run it three times for the spread.
#   Benchmarks/Scripts/tls-figures.sh                 # COUNT=1000 SECONDS_PER_RUN=5 CONNECTIONS=4
#   COUNT=2000 SECONDS_PER_RUN=10 CHAT_NODE=.build/release/chat-node WS_ECHO=.build/release/ws-echo-server \
#       Benchmarks/Scripts/tls-figures.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
count="${COUNT:-1000}"
seconds="${SECONDS_PER_RUN:-5}"
connections="${CONNECTIONS:-4}"
if [ -z "${CHAT_NODE:-}" ] || [ -z "${WS_ECHO:-}" ]; then
    (cd "$root" && swift build -c release --product chat-node >/dev/null && swift build -c release --product ws-echo-server >/dev/null)
    bin="$(cd "$root" && swift build -c release --show-bin-path)"
    CHAT_NODE="${CHAT_NODE:-$bin/chat-node}"
    WS_ECHO="${WS_ECHO:-$bin/ws-echo-server}"
fi
CHAT_NODE="$(realpath "$CHAT_NODE")"  # the script runs in its own directory
WS_ECHO="$(realpath "$WS_ECHO")"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
work="$(mktemp -d -t tls-figures.XXXXXX)"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
cd "$work"
bash "$root/Scripts/make-test-certificate.sh" "$work"

rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }

# Starts a server (its command in "$@"), waits for "listening on HOST:PORT", sets $server, $port and
# $server_log.
start() {
    server_log="$work/server.$RANDOM.log"
    "$@" > "$server_log" 2>&1 &
    server=$!
    pids+=("$server")
    for _ in $(seq 100); do grep -q "listening on" "$server_log" && break; sleep 0.1; done
    port="$(grep -o 'listening on 127.0.0.1:[0-9]*' "$server_log" | head -1 | sed 's/.*://')"
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

# Full handshakes per second to port $1 with version flag $2 (-tls1_3, -tls1_2).
handshakes() {
    openssl s_time -connect "127.0.0.1:$1" -new -time "$seconds" -CAfile ca.pem "$2" 2>/dev/null \
        | awk '/real seconds/ { printf "%.0f\n", $1 / $4 }' | tail -1
}
both_versions() { echo "$(handshakes "$1" -tls1_3) / $(handshakes "$1" -tls1_2)"; }

# Echo MB/s to $port in mode $1 (raw, tls, ws, wss): one connection, then CONNECTIONS.
echo_rates() {
    local one many
    one="$(python3 "$here/tls_echo_load.py" "$port" "$1" 1 "$seconds" ca.pem | awk '{ print $2 }')"
    many="$(python3 "$here/tls_echo_load.py" "$port" "$1" "$connections" "$seconds" ca.pem | awk '{ print $2 }')"
    echo "$one|$many"
}

node_args=(serve --host 127.0.0.1 --port 0 --no-http --login-seconds 600 --max-connections $((count + 100)) --scrypt-cost 4)
start "$CHAT_NODE" "${node_args[@]}" --database "$work/plain.sqlite"
plain_bytes="$(per_connection plain)"
kill "$server"
start "$CHAT_NODE" "${node_args[@]}" --database "$work/tls.sqlite" --tls-cert node.pem --tls-key node.key
tls_bytes="$(per_connection tls)"
kill "$server"
start "$CHAT_NODE" serve --host 127.0.0.1 --port 0 --http-port 0 --scrypt-cost 4 --database "$work/web.sqlite" \
    --tls-cert node.pem --tls-key node.key
for _ in $(seq 100); do grep -q "page: https://" "$server_log" && break; sleep 0.1; done
web_port="$(grep -o 'page: https://127.0.0.1:[0-9]*' "$server_log" | head -1 | sed 's/.*://')"
node_rates="$(both_versions "$port")"
web_rates="$(both_versions "$web_port")"
kill "$server"
start python3 "$here/tls_python_server.py" node.pem node.key
python_bytes="$(per_connection tls)"
python_rates="$(both_versions "$port")"
IFS='|' read -r python_tls_one python_tls_many <<< "$(echo_rates tls)"
kill "$server"
start python3 "$here/tls_python_server.py" --plain
IFS='|' read -r python_plain_one python_plain_many <<< "$(echo_rates raw)"
kill "$server"
s_server_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
openssl s_server -accept "127.0.0.1:$s_server_port" -cert node.pem -key node.key -www -quiet > /dev/null 2>&1 &
s_server=$!
pids+=("$s_server")
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$s_server_port") 2>/dev/null && break; sleep 0.1; done
s_server_rates="$(both_versions "$s_server_port")"
kill "$s_server"
start "$WS_ECHO" --host 127.0.0.1 --port 0
IFS='|' read -r ws_one ws_many <<< "$(echo_rates ws)"
kill "$server"
start "$WS_ECHO" --host 127.0.0.1 --port 0 --tls-cert node.pem --tls-key node.key
IFS='|' read -r wss_one wss_many <<< "$(echo_rates wss)"
kill "$server"

echo "machine: $(nproc) cores, $(awk -F: '/model name/ { print $2; exit }' /proc/cpuinfo | sed 's/^ *//')"
echo "load: $load_before before, $(cut -d' ' -f1-3 /proc/loadavg) after (1/5/15 min)"
echo "chat-node: $CHAT_NODE; ws-echo-server: $WS_ECHO; $count idle connections; ${seconds} s a figure; $(openssl version)"
echo
echo "| | chat-node (RunLoopTLS) | Python asyncio + ssl | openssl s_server |"
echo "|---|---|---|---|"
echo "| RSS per idle plaintext TCP connection | $plain_bytes | – | – |"
echo "| RSS per idle TLS connection (after the handshake) | $tls_bytes | $python_bytes | – |"
echo "| handshakes/s, TLS 1.3 / 1.2, IM port (s_time -new, one at a time) | $node_rates | $python_rates | $s_server_rates |"
echo "| handshakes/s, TLS 1.3 / 1.2, web port (HTTPS, wss://) | $web_rates | – | – |"
echo "| echo MB/s, 1 connection, plaintext / TLS | $ws_one / $wss_one (ws:// / wss://) | $python_plain_one / $python_tls_one (TCP / TLS) | – |"
echo "| echo MB/s, $connections connections, plaintext / TLS | $ws_many / $wss_many (ws:// / wss://) | $python_plain_many / $python_tls_many (TCP / TLS) | – |"
