#!/usr/bin/env bash
# Autobahn|Testsuite 25.10.1 against RunLoopWebSocket, both ways, every case outside the compression
# sections (12.*, 13.*: permessage-deflate is not implemented):
#   fuzzingclient  -> ws-echo-server       (our server)
#   fuzzingserver  <- ws-autobahn-client   (our client)
# With --tls the same both ways over wss:// (RunLoopTLS under RunLoopWebSocket): a throw-away CA and a
# certificate for 127.0.0.1 (Scripts/make-test-certificate.sh); the fuzzing client does not verify it
# (Autobahn's client context checks nothing), our client verifies it against that CA; the fuzzing
# server takes it as the spec's "key" and "cert". Same cases, same pass criteria.
# Prints one summary line per mode and exits non-zero if any case FAILED. Without Python 2.7 (the
# suite's only runtime) it says so loudly and exits 0 with a SKIPPED line, so CI can always call it.
# Installs the pinned suite into .build-autobahn/ on first use; reports go to .build-autobahn/reports/.
set -euo pipefail
tls=false
case "${1:-}" in
    "") ;;
    --tls) tls=true ;;
    *) echo "usage: Scripts/autobahn/run.sh [--tls]" >&2; exit 2 ;;
esac
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="$root/.build-autobahn"
# Free ports chosen now (a fixed one met a fuzzing server left behind by an earlier run).
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
server_port="${AUTOBAHN_SERVER_PORT:-$(free_port)}"
fuzzing_port="${AUTOBAHN_FUZZING_PORT:-$(free_port)}"

python2=""
for candidate in "${PYTHON2:-}" python2.7 "$HOME/.pyenv/versions/2.7.18/bin/python2.7"; do
    [ -n "$candidate" ] || continue
    if PYENV_VERSION=2.7.18 "$candidate" -c 'import sys; assert sys.version_info[:2] == (2, 7)' >/dev/null 2>&1; then
        python2="$candidate"
        break
    fi
done
if [ -z "$python2" ]; then
    echo "##################################################################" >&2
    echo "## PYTHON 2.7 NOT FOUND: Autobahn|Testsuite CANNOT RUN HERE.     ##" >&2
    echo "## WebSocket conformance is NOT verified by this run.            ##" >&2
    echo "##################################################################" >&2
    echo "autobahn: SKIPPED (no python2.7)"
    exit 0
fi
py2() { PYENV_VERSION=2.7.18 PYTHONUSERBASE="$work/py" "$python2" "$@"; }
# For background runs: `exec`, so that `$!` is Python's own pid and the cleanup really stops it
# (killing the subshell of a plain function call left the fuzzing server running).
py2_exec() { PYENV_VERSION=2.7.18 PYTHONUSERBASE="$work/py" exec "$python2" "$@"; }

mkdir -p "$work"
if ! py2 -c 'import autobahntestsuite' >/dev/null 2>&1; then
    echo "autobahn: installing the pinned suite into $work/py"
    py2 -m pip install --quiet --user --no-deps --disable-pip-version-check --no-warn-script-location -r "$here/requirements.txt"
fi

echo "autobahn: building ws-echo-server and ws-autobahn-client"
cd "$root"
config="${AUTOBAHN_BUILD_CONFIGURATION:-debug}"
swift build -c "$config" --product ws-echo-server >/dev/null
swift build -c "$config" --product ws-autobahn-client >/dev/null
bin="$(swift build -c "$config" --show-bin-path)"

rm -rf "$work/reports"
mkdir -p "$work/reports"
cd "$work"
start=$(date +%s)
scheme=ws
server_tls=()
client_tls=()
spec_tls=""
if $tls; then
    scheme=wss
    rm -rf "$work/pki"
    mkdir -p "$work/pki"
    bash "$root/Scripts/make-test-certificate.sh" "$work/pki"
    server_tls=(--tls-cert "$work/pki/node.pem" --tls-key "$work/pki/node.key")
    client_tls=(--ca-file "$work/pki/ca.pem")
    spec_tls="\"key\": \"$work/pki/node.key\", \"cert\": \"$work/pki/node.pem\","
fi

# The two modes share nothing (their own ports, processes, specs, logs and report directories), and
# each is one Python process taking turns with one of ours — about one core — so they run side by side
# and the whole takes the time of the longer one (section 9's large messages are most of either).
# Each mode stops its own background process on exit, whoever ends it.

# 1. fuzzingclient against our echo server.
fuzz_our_server() {
    "$bin/ws-echo-server" --host 127.0.0.1 --port "$server_port" "${server_tls[@]}" > "$work/echo-server.log" 2>&1 &
    echo_server=$!  # not `local`: the EXIT trap reads it after the function returned
    trap 'kill $echo_server 2>/dev/null || true' EXIT
    for _ in $(seq 100); do grep -q "listening on" "$work/echo-server.log" && break; sleep 0.1; done
    cat > "$work/fuzzingclient.json" <<SPEC
{
  "outdir": "./reports/servers",
  "servers": [{"agent": "RunLoopWebSocket", "url": "$scheme://127.0.0.1:$server_port"}],
  "cases": ["*"],
  "exclude-cases": ["12.*", "13.*"],
  "exclude-agent-cases": {}
}
SPEC
    py2 "$here/wstest_local.py" -m fuzzingclient -s "$work/fuzzingclient.json" > "$work/fuzzingclient.log" 2>&1 || true
    py2 "$here/summarize.py" "fuzzingclient ($scheme://)" "$work/reports/servers/index.json"
}

# 2. fuzzingserver against our client (--webport 0: no report web server, whose fixed port 8080 a
#    fuzzing server left behind, or anything else there, would take).
fuzz_our_client() {
    cat > "$work/fuzzingserver.json" <<SPEC
{
  "url": "$scheme://127.0.0.1:$fuzzing_port", $spec_tls
  "outdir": "./reports/clients",
  "cases": ["*"],
  "exclude-cases": ["12.*", "13.*"],
  "exclude-agent-cases": {}
}
SPEC
    py2_exec "$here/wstest_local.py" -m fuzzingserver --webport 0 -s "$work/fuzzingserver.json" > "$work/fuzzingserver.log" 2>&1 &
    fuzzing_server=$!  # not `local`: the EXIT trap reads it after the function returned
    trap 'kill $fuzzing_server 2>/dev/null || true' EXIT
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$fuzzing_port") 2>/dev/null && break; sleep 0.1; done
    local client_status=0
    "$bin/ws-autobahn-client" --port "$fuzzing_port" --agent runloopkit "${client_tls[@]}" > "$work/autobahn-client.log" 2>&1 || client_status=1
    py2 "$here/summarize.py" "fuzzingserver ($scheme://)" "$work/reports/clients/index.json" || client_status=1
    return $client_status
}

( fuzz_our_server ) > "$work/server-mode.summary" 2>&1 &
server_mode=$!
trap 'kill $server_mode 2>/dev/null || true' EXIT
status=0
( fuzz_our_client ) > "$work/client-mode.summary" 2>&1 || status=1
wait $server_mode || status=1
cat "$work/server-mode.summary" "$work/client-mode.summary"

echo "autobahn: $(( $(date +%s) - start )) s, reports in $work/reports"
exit $status
