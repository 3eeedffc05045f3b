#!/usr/bin/env bash
# The chat node under a real systemd, from its unit file (issue 21): boots systemd as PID 1 of a
# container made with systemd-nspawn (new PID, mount, UTS and network namespaces) over a copy-on-write
# view of this machine's root (an overlay whose writes go to a tmpfs), installs the node there the way
# Samples/ChatNode/README.md says ("Running as a service"), with a drop-in adding --tls-cert/--tls-key,
# and checks, each with a PASS or FAIL line: the start (READY=1, STATUS=), TLS on both ports with /health
# and /metrics, a certificate renewed by `systemctl reload` while a session stays up, the watchdog (its
# pings, and a stuck node killed and restarted), and the stop (STOPPING=1, exit 0). Then it powers the
# container off; its mounts lived in a mount namespace of their own, and its cgroups are removed, so
# nothing is left on the host. Exits 1 if a check failed. Needs root; about 25 s.
#   sudo Scripts/systemd-check.sh                    # the debug chat-node of this checkout (built first)
#   sudo CHAT_NODE=/path/to/chat-node Scripts/systemd-check.sh
# Needs systemd, systemd-container, openssl and curl (Scripts/setup.sh --systemd).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
[ "$(id -u)" -eq 0 ] || { echo "systemd-check: run as root (it boots a container)" >&2; exit 2; }
command -v systemd-nspawn >/dev/null && command -v curl >/dev/null || bash "$root/Scripts/setup.sh" --systemd

if [ -z "${CHAT_NODE:-}" ]; then
    (cd "$root" && swift build --product chat-node >/dev/null)
    CHAT_NODE="$(cd "$root" && swift build --show-bin-path)/chat-node"
fi
started=$SECONDS
work="$(mktemp -d /tmp/chat-node-systemd.XXXXXX)"
stage="$work/stage"     # bound read-only into the container at /run/chat-check
mkdir -p "$stage/renewed"
cp "$CHAT_NODE" "$stage/chat-node"
cp "$root/Samples/ChatNode/systemd/chat-node.service" "$stage/"
bash "$root/Scripts/make-test-certificate.sh" "$stage"
cp "$stage/ca.pem" "$stage/ca.key" "$stage/ca.srl" "$stage/renewed/"
bash "$root/Scripts/make-test-certificate.sh" "$stage/renewed"
# The binary finds Swift's runtime through its RUNPATH (the toolchain's lib dir): bound read-only at
# the same path, so no LD_LIBRARY_PATH drop-in is needed; ProtectSystem=strict leaves it readable.
swift_lib="$(dirname "$(ldd "$CHAT_NODE" | awk '/libswiftCore\.so/ { print $3 }')")"

failures=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
check() { local what="$1"; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
# Polls a command for up to $1 seconds.
within() {
    local seconds="$1"; shift
    for _ in $(seq $((seconds * 5))); do "$@" && return 0; sleep 0.2; done
    return 1
}

# The container. Its root is an overlay of / with the writes in a tmpfs; the overlay, the tmpfs and
# nspawn's own /run/systemd state are mounted in a private mount namespace (unshare), which ends with
# nspawn: the host keeps no mount and no file. Booted into basic.target, not multi-user.target, so the
# services this machine enables (PostgreSQL, Redis, ...) stay off; the node is started by hand anyway.
# --register=no and --keep-unit: there is no systemd on the host to register with or to ask for a scope.
# Without a scope nspawn nests the container's cgroups (payload/, supervisor/) in its own: a cgroup of
# this run's, in each hierarchy systemd uses (the name=systemd one and cgroup2), removed at the end.
cgroup="${work##*/}"
hierarchies="$(findmnt -rn -t cgroup2 -o TARGET; findmnt -rn -t cgroup -o TARGET,OPTIONS | awk '$2 ~ /name=systemd/ { print $1 }')"
unshare --mount --propagation private bash -c '
    set -e
    for hierarchy in $3; do mkdir "$hierarchy/$4"; echo $$ > "$hierarchy/$4/cgroup.procs"; done
    mount -t tmpfs tmpfs /run/systemd
    mkdir "$1/layer" "$1/root"
    mount -t tmpfs tmpfs "$1/layer"
    mkdir "$1/layer/upper" "$1/layer/work"
    mount -t overlay overlay -o "lowerdir=/,upperdir=$1/layer/upper,workdir=$1/layer/work" "$1/root"
    systemd-id128 new > "$1/root/etc/machine-id"
    exec systemd-nspawn --quiet --directory="$1/root" --machine=chat-node-check --register=no --keep-unit \
        --private-network --link-journal=no --console=pipe --bind-ro="$1/stage:/run/chat-check" \
        --bind-ro="$2" --boot -- systemd.unit=basic.target
' unshare-nspawn "$work" "$swift_lib" "$hierarchies" "$cgroup" < /dev/null > "$work/nspawn.log" 2>&1 &
nspawn=$!

leader=""
find_leader() {
    local child
    child="$(cat "/proc/$nspawn/task/$nspawn/children" 2>/dev/null | awk '{ print $1 }')"
    # Found once its private socket, which systemctl talks to as root, is there.
    [ -n "$child" ] && [ -S "/proc/$child/root/run/systemd/private" ] && leader="$child"
}
teardown() {
    if [ -n "$leader" ] && [ -e "/proc/$leader" ]; then
        nsenter -t "$leader" -a systemctl poweroff --no-block >/dev/null 2>&1 || kill -TERM "$nspawn" 2>/dev/null || true
    fi
    if ! within 20 eval '! kill -0 $nspawn 2>/dev/null'; then
        echo "the container did not power off in 20 s: killed"
        [ -n "$leader" ] && kill -KILL "$leader" 2>/dev/null || true
        kill -KILL "$nspawn" 2>/dev/null || true
    fi
    [ -n "${client:-}" ] && kill "$client" 2>/dev/null || true
    wait 2>/dev/null || true
    local left=""
    for hierarchy in $hierarchies; do
        [ -d "$hierarchy/$cgroup" ] && { find "$hierarchy/$cgroup" -depth -type d -exec rmdir {} + 2>/dev/null || left+=" $hierarchy/$cgroup"; }
    done
    [ -z "$(findmnt -rn -o TARGET | grep "^$work" || true)" ] || left+=" mounts under $work"
    [ -n "$leader" ] && [ -e "/proc/$leader" ] && left+=" the container's PID 1 ($leader)"
    if [ -z "$left" ]; then
        rm -rf "$work"
        echo "PASS teardown: the container is gone, nothing left mounted, its cgroups removed ($((SECONDS - started)) s in all)"
    else
        echo "FAIL teardown: left$left"
        exit 1
    fi
}
trap teardown EXIT

if ! within 30 find_leader; then echo "FAIL boot: no systemd in the container"; cat "$work/nspawn.log"; exit 1; fi
inside() { nsenter -t "$leader" -a "$@"; }           # a command in the container
on_its_network() { nsenter -t "$leader" -n "$@"; }   # a host command on the container's loopback
state="$(timeout 60 nsenter -t "$leader" -a systemctl is-system-running --wait 2>/dev/null || true)"
echo "booted $(inside systemctl --version | head -1) as PID 1 of the container: system $state ($((SECONDS - started)) s)"
# degraded: a unit of this machine's failed in the container; the node's checks do not depend on it.
case "$state" in
    running) ;;
    degraded) inside systemctl --failed --no-pager --plain | sed 's/^/     /' ;;
    *) fail "boot: system is ${state:-unreachable}"; exit 1 ;;
esac

# The README's install steps, then `systemctl edit`'s kind of drop-in. The key is the node user's
# to read, not to change; certificates are in /etc, which ProtectSystem=strict keeps readable.
inside bash -euc '
    install -m 755 /run/chat-check/chat-node /usr/local/bin/chat-node
    useradd --system --user-group --home-dir /var/lib/chat-node --no-create-home --shell /usr/sbin/nologin chat-node
    install -m 644 /run/chat-check/chat-node.service /etc/systemd/system/
    install -d -m 755 /etc/chat-node /etc/systemd/system/chat-node.service.d
    install -m 644 /run/chat-check/node.pem /etc/chat-node/node.pem
    install -m 640 -g chat-node /run/chat-check/node.key /etc/chat-node/node.key
    printf "%s\n" "[Service]" "ExecStart=" \
        "ExecStart=/usr/local/bin/chat-node serve --host 127.0.0.1 --port 7100 --http-port 7101 --database /var/lib/chat-node/chat-node.db --tls-cert /etc/chat-node/node.pem --tls-key /etc/chat-node/node.key" \
        > /etc/systemd/system/chat-node.service.d/tls.conf
    systemctl daemon-reload
    systemctl enable chat-node 2>/dev/null
    systemctl log-level debug
'
# systemd's debug log names every notification it takes from the node ("Got notification message").
# The unit's journal, whole or after a cursor (mark), read into a file: a `grep -q` at the end of a
# pipe would end journalctl early and, under pipefail, fail the pipe whatever it found.
journal() { inside journalctl -u chat-node --no-pager -o cat ${1:+--after-cursor="$1"} > "$work/journal"; }
mark() { inside journalctl -u chat-node --no-pager -n 1 --show-cursor -o cat | sed -n 's/^-- cursor: //p'; }
in_journal() { journal "${2:-}"; grep -qE "$1" "$work/journal"; }
notified() { journal "${2:-}"; grep -c "Got notification message from PID [0-9]* (.*$1" "$work/journal" || true; }
property() { inside systemctl show -p "$1" --value chat-node; }

# 1. The start: `systemctl start` returns once READY=1 arrived.
check "1 systemctl start chat-node returned 0" inside systemctl start chat-node
status="$(inside systemctl status chat-node --no-pager 2>&1 || true)"
grep -E '^ *(Loaded|Drop-In|Active|Main PID|Status):' <<< "$status" | sed 's/^ */     /'
check "1 the unit is active (running)" [ "$(property ActiveState)/$(property SubState)" = active/running ]
check "1 systemd took READY=1 from the node" [ "$(notified READY=1)" -ge 1 ]
check "1 systemctl status shows the node's STATUS= text" grep -q 'Status: "serving IM on 127.0.0.1:7100' <<< "$status"

# 2. TLS on both ports, verified against the test CA; /health and /metrics over HTTPS.
handshake() {  # port, extra s_client options: the certificate's serial, after a verified handshake
    local port="$1"; shift
    on_its_network openssl s_client -connect "127.0.0.1:$port" -verify_return_error -CAfile "$stage/ca.pem" "$@" \
        < /dev/null > "$work/handshake.$port" 2>&1 || return 1
    grep -q 'Verify return code: 0 (ok)' "$work/handshake.$port" || return 1
    openssl x509 -noout -serial < "$work/handshake.$port" | cut -d= -f2
}
serial() { openssl x509 -noout -serial -in "$1" | cut -d= -f2; }
https() { on_its_network curl -sS --fail --max-time 5 --cacert "$stage/ca.pem" "https://127.0.0.1:7101$1"; }
# The gauge as swift-prometheus writes it: 1.0.
sessions() { https /metrics > "$work/metrics" && grep -qxE "im_sessions\{transport=\"tcp\"\} $1(\.0)?" "$work/metrics"; }
first="$(serial "$stage/node.pem")"
check "2 TLS handshake on the IM port 7100 verifies (serial $first)" [ "$(handshake 7100)" = "$first" ]
check "2 TLS handshake on the HTTPS port 7101 verifies, ALPN http/1.1" \
    eval '[ "$(handshake 7101 -alpn http/1.1)" = "$first" ] && grep -q "ALPN protocol: http/1.1" "$work/handshake.7101"'
check "2 GET https://127.0.0.1:7101/health answers ok" [ "$(https /health)" = ok ]
check "2 GET https://127.0.0.1:7101/metrics answers, im_sessions{transport=\"tcp\"} 0" sessions 0

# 3. A session across a reload: a client logged in over TLS, then the certificate files are replaced
# by a renewal (same CA, next serial) and `systemctl reload` sends SIGHUP.
mkfifo "$work/client.in"
nsenter -t "$leader" -n env CHAT_NODE_PASSWORD=pw "$CHAT_NODE" client --user alice --host 127.0.0.1 --tls \
    --ca-file "$stage/ca.pem" < "$work/client.in" > "$work/client.out" 2>&1 &
client=$!
exec 7> "$work/client.in"
printf '/join lobby\nbefore the reload\n' >&7
check "3 a client logged in over TLS and its message was stored" within 10 grep -q '→ m1 stored' "$work/client.out"
check "3 /metrics counts its session" sessions 1
inside install -m 644 /run/chat-check/renewed/node.pem /etc/chat-node/node.pem
inside install -m 640 -g chat-node /run/chat-check/renewed/node.key /etc/chat-node/node.key
check "3 systemctl reload chat-node returned 0" inside systemctl reload chat-node
readiness() { journal; grep -oE 'PID [0-9]+ \((RELOADING|READY)=1' "$work/journal" | cut -d'(' -f2 | paste -sd' '; }
check "3 the node said RELOADING=1, then READY=1 again" [ "$(readiness)" = "READY=1 RELOADING=1 READY=1" ]
journal
sed -n '/enqueue job chat-node.service.reload/,/Reloaded/p' "$work/journal" \
    | grep -E 'Reloading|RELOADING|READY|Changed|Reloaded|TLS' | sed 's/^/     /'
check "3 the unit is active (running) again" [ "$(property ActiveState)/$(property SubState)" = active/running ]
renewed="$(serial "$stage/renewed/node.pem")"
check "3 a new handshake on the IM port gets the renewed certificate (serial $renewed)" [ "$(handshake 7100)" = "$renewed" ]
check "3 a new handshake on the HTTPS port gets it too" [ "$(handshake 7101 -alpn http/1.1)" = "$renewed" ]
printf 'after the reload\n' >&7
check "3 the first session still answers: its next message was stored" within 10 grep -q '→ m2 stored' "$work/client.out"
exec 7>&-
check "3 ... on the same connection, and the client logged out cleanly (exit 0)" \
    eval 'wait $client && [ "$(grep -c "^\* connected" "$work/client.out")" -eq 1 ]'
client=""

# 4. The watchdog: systemd arms it from WatchdogSec=, and the node pings every half of it.
watchdog="$(property WatchdogUSec)"
check "4 WatchdogUSec is $watchdog (WatchdogSec=30 in the unit)" [ "$watchdog" = 30s ]
main_pid="$(property MainPID)"
check "4 the node got WATCHDOG_USEC=30000000 and its own WATCHDOG_PID" \
    eval 'inside cat /proc/$main_pid/environ | tr "\0" "\n" > "$work/environ"
          grep -qx WATCHDOG_USEC=30000000 "$work/environ" && grep -qx "WATCHDOG_PID=$main_pid" "$work/environ"'
# One ping as it starts, then one every 15 s from the loop's timer: the second shows the timer runs.
check "4 WATCHDOG=1 at the start and again from the loop's timer 15 s later" within 20 eval '[ "$(notified WATCHDOG=1)" -ge 2 ]'
check "4 no watchdog timeout, no restart" \
    eval '! in_journal "Watchdog timeout" && [ "$(property NRestarts)" = 0 ]'
# A stuck loop, for which SIGSTOP stands in: the pings stop, systemd aborts the node and starts it
# again (Restart=on-failure). A drop-in shortens the wait from 30 s to 2 s, and the abort's: a stopped
# process leaves SIGABRT pending, so it ends by the SIGKILL that follows.
inside bash -euc '
    printf "%s\n" "[Service]" "WatchdogSec=2" "TimeoutAbortSec=1" > /etc/systemd/system/chat-node.service.d/watchdog.conf
    systemctl daemon-reload
    systemctl restart chat-node
'
stuck="$(property MainPID)"
inside kill -STOP "$stuck"
restarted() { [ "$(property NRestarts)" = 1 ] && [ "$(property SubState)" = running ] && [ "$(property MainPID)" != "$stuck" ]; }
check "4 a stuck node (SIGSTOP, WatchdogSec=2) is killed on the watchdog's timeout and started again" \
    eval 'within 15 restarted && in_journal "Watchdog timeout \(limit 2s\)"'
inside rm /etc/systemd/system/chat-node.service.d/watchdog.conf
inside systemctl daemon-reload

# 5. The stop: SIGTERM, STOPPING=1, the graceful stop, exit 0 within TimeoutStopSec.
before_stop="$(mark)"
check "5 systemctl stop chat-node returned 0" inside systemctl stop chat-node
check "5 the node said STOPPING=1" [ "$(notified STOPPING=1 "$before_stop")" -eq 1 ]
result="$(property ActiveState) $(property Result) $(property ExecMainCode) $(property ExecMainStatus)"
check "5 the unit is inactive, result success, the node exited with 0 ($result)" [ "$result" = "inactive success 1 0" ]
check "5 nothing was killed" eval '[ -n "$before_stop" ] && ! in_journal "timed out|Killing process|SIGKILL" "$before_stop"'

echo "checks done in $((SECONDS - started)) s: $failures failed"
[ "$failures" -eq 0 ] || { echo "--- the node's journal"; inside journalctl -u chat-node --no-pager -o short-precise | grep -v 'systemd\[1\]: .*: \(Got notification\|Changed\)' | tail -40; }
exit $((failures > 0))
