#!/usr/bin/env bash
# The smoke form of `Scripts/node-idle.sh --floor`, for CI (after `Scripts/cluster.sh --smoke`, which builds
# the same debug cluster-bench): Floor/idle-floor.c built from a fresh clone with the system's C compiler,
# then 50 real IM clients (`cluster-bench idle`, paced over one period) logging in to it and heartbeating
# every second for 3 s — once plain, once with --batch-ms 10. Counts only, no timing: exits 0 when every
# client logged in and had its heartbeats answered through the window without a disconnect, the floor
# answered every LOGIN it got and met nothing but LOGINs and HEARTBEATs.
set -uo pipefail
cd "$(dirname "$0")/.."

swift build --product cluster-bench >/dev/null || exit 1
bin="$(swift build --show-bin-path)"
work="$(mktemp -d -t floor-smoke.XXXXXX)"
started=()
trap 'for pid in "${started[@]}"; do kill "$pid" 2>/dev/null; done; wait; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

count=50
heartbeat=1
seconds=3
settle=1
syscalls=0
paced=1
source Scripts/idle-crowd.sh
source Scripts/node-idle-floor.sh
floor_status=0
run_floor_idle floor
run_floor_idle floor-batch --batch-ms 10
for label in floor floor-batch; do
    figure() { sed -n "s/^idle\.$1 //p" "$work/$label.txt" | head -1; }
    echo "$label: online $(figure online) of $count, heartbeating $(figure connections_heartbeating)," \
        "disconnects $(figure window_disconnects); the floor's counts: logins $(figure floor_logins)," \
        "heartbeats $(figure floor_heartbeats), other frames $(figure floor_other_frames)"
    if [ "$(figure online)" != "$count" ] || [ "$(figure connections_heartbeating)" != "$count" ] ||
        [ "$(figure window_disconnects)" != 0 ] || [ "$(figure floor_logins)" != "$count" ]; then
        floor_status=1
    fi
done
[ "$floor_status" -eq 0 ] && echo "floor smoke: all counts as expected"
exit "$floor_status"
