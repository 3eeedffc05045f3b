#!/usr/bin/env bash
# RunLoopIM frames encoded and decoded per second, and allocations per frame, beside swift-protobuf's
# own delimited framing (IMFrameBench; issue 9). Runs only that target under package-benchmark (about
# 30 s once built) and prints one table; raw samples stay in results/im-frames.
#
#   Scripts/im-frames.sh              any arguments go to `swift package benchmark run`
set -uo pipefail
cd "$(dirname "$0")/.."
out="results/im-frames"
rm -rf "$out"
mkdir -p "$out"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(uname -sr)"
echo "commit:  $(git -C .. log -1 --format='%h %s' | cut -c1-100)"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min before the run; the machine may be shared)"
echo
swift package --allow-writing-to-package-directory benchmark run --target IMFrameBench \
    --format histogramSamples --path "$out" --no-progress "$@" >"$out/benchmark.log" 2>&1
status=$?
if [ $status -ne 0 ]; then
    echo "swift package benchmark exited with $status; see $out/benchmark.log" >&2
    exit $status
fi
python3 Scripts/im_frames.py "$out"
