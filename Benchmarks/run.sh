#!/usr/bin/env bash
# Runs every benchmark of every system in one `swift package benchmark` run and prints one table:
# workload x system, value per operation, RunLoopKit's ratio to each baseline.
#
#   ./run.sh                      everything (a few minutes; the first build takes longer)
#   ./run.sh --target NIOBench    any extra arguments go to `swift package benchmark`
#
# Raw per-iteration samples stay in results/ (or $RESULTS_DIR); the full harness log in
# results/benchmark.log.
set -uo pipefail
cd "$(dirname "$0")"
out="${RESULTS_DIR:-results}"
rm -rf "$out"
mkdir -p "$out"

echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(uname -sr)"
echo "swift:   $(swift --version 2>/dev/null | head -1)"
echo "libevent: $(pkg-config --modversion libevent_core 2>/dev/null || echo '?')"
if git -C .. rev-parse --git-dir >/dev/null 2>&1; then
    changed=$(git -C .. status --porcelain -- Sources Package.swift | wc -l)
    echo "RunLoopKit: $(git -C .. log -1 --format='%h %s' | cut -c1-100)$([ "$changed" -gt 0 ] && echo " (+$changed uncommitted changes under Sources/)")"
fi
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min before the run; the machine may be shared)"
echo

swift package --allow-writing-to-package-directory benchmark run \
    --format histogramSamples --path "$out" --no-progress "$@" >"$out/benchmark.log" 2>&1
status=$?
if [ $status -ne 0 ]; then
    echo "swift package benchmark exited with $status; see $out/benchmark.log:" >&2
    grep -a -iE "error|fail|crash" "$out/benchmark.log" | tail -20 >&2
    echo >&2
fi
python3 Scripts/table.py "$out" || status=1
exit $status
