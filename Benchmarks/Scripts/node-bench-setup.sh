# Shared set-up of the node benchmarks (node-idle.sh, node-logins.sh); source it from Benchmarks/ with the
# benchmark's name: `source Scripts/node-bench-setup.sh node-idle`. It builds the release chat-node and
# cluster-bench (into "$bin"), prints the run header (machine, load, commit), and makes "$work", a
# temporary directory removed on exit, when every process whose pid was added to "started" is killed.
swift build -c release --product cluster-bench >/dev/null || exit 1
swift build -c release --product chat-node >/dev/null || exit 1
bin="$(swift build -c release --show-bin-path)"

source Scripts/run-header.sh

work="$(mktemp -d -t "$1.XXXXXX")"
started=()
trap 'for pid in "${started[@]}"; do kill "$pid" 2>/dev/null; done; wait; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
