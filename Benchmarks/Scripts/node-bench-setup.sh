# Shared set-up of the node benchmarks (node-idle.sh, node-logins.sh); source it from Benchmarks/ with the
# benchmark's name: `source Scripts/node-bench-setup.sh node-idle`. It builds the release chat-node and
# cluster-bench (into "$bin"), prints the run header (machine, load, commit), and makes "$work", a
# temporary directory removed on exit, when every process whose pid was added to "started" is killed.
# NODE_BENCH_BIN=DIR skips both builds and takes chat-node and cluster-bench from DIR instead (release
# binaries built elsewhere, e.g. another checkout's Benchmarks/.build/release: the commit in the header
# is this checkout's, not necessarily theirs).
if [ -n "${NODE_BENCH_BIN:-}" ]; then
    bin="$NODE_BENCH_BIN"
else
    swift build -c release --product cluster-bench >/dev/null || exit 1
    swift build -c release --product chat-node >/dev/null || exit 1
    bin="$(swift build -c release --show-bin-path)"
fi

source Scripts/run-header.sh

work="$(mktemp -d -t "$1.XXXXXX")"
started=()
trap 'for pid in "${started[@]}"; do kill "$pid" 2>/dev/null; done; wait; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# Waits up to 30 s for the node whose output goes to "$work/node.out" to say where it listens, and sets
# "port"; exits with the node's output when it does not.
wait_for_node_port() {
    port=""
    for _ in $(seq 300); do
        port="$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/node.out" 2>/dev/null | head -1)"
        [ -n "$port" ] && return 0
        sleep 0.1
    done
    echo "chat-node did not start:" >&2
    cat "$work/node.out" "$work/node.err" >&2
    exit 1
}

# Prints two table rows about the node's stall detector lines (passes busy over 100 ms) in
# "$work/node.err" after the first $1 of them ("$2" says since when): how many, and the longest —
# then the first few lines, cut short. The detector logs "busy=1.7 seconds" among its metadata.
print_stalls_since() {
    local stalls longest
    stalls="$(grep 'run loop stalled' "$work/node.err" | tail -n +$(($1 + 1)))"
    longest="$(sed -n 's/.*busy=\([0-9.e-]*\) \(seconds\|milliseconds\).*/\1 \2/p' <<<"$stalls" |
        awk '{ ms = $2 == "seconds" ? $1 * 1000 : $1; if (ms > max) max = ms } END { printf "%.0f", max }')"
    echo "| passes busy over 100 ms $2 (stall detector) / **longest** | $(grep -c . <<<"$stalls") / **${longest:-0} ms** |"
    cut -c1-400 <<<"$stalls" | head -5
}
