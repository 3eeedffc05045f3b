# Sourced by im-idle.sh and im-logins.sh (run from Benchmarks/): builds im-idle in release, prints
# the run's header, and starts `im-idle server "$@"` in the background. Sets `bin`, `server` (its
# pid, killed on exit), `log` (its output) and `port`; exits if it does not start.
swift build -c release --product im-idle >/dev/null || exit 1
bin="$(swift build -c release --show-bin-path)/im-idle"

source Scripts/run-header.sh

log="$(mktemp -t im-idle-server.XXXXXX)"
"$bin" server "$@" >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; rm -f "$log"' EXIT
port=""
for _ in $(seq 100); do
    port="$(sed -n 's/^port \([0-9]*\).*/\1/p' "$log")"
    [ -n "$port" ] && break
    sleep 0.1
done
if [ -z "$port" ]; then
    echo "im-idle server did not start:" >&2
    cat "$log" >&2
    exit 1
fi
