#!/usr/bin/env bash
# Builds the frame decoder's libFuzzer target with AddressSanitizer and runs it for a fixed number of
# inputs, then prints libFuzzer's final statistics.
#
#   ./run.sh                  10,000,000 inputs (about 10 minutes on one core)
#   ./run.sh 100000           a quick run
#   ./run.sh 1000000 -seed=7  any further arguments go to libFuzzer
#
# Seeds (valid frames of every command) are written by make-seeds.py into .build/seeds; what the
# fuzzer learns stays in corpus/ between runs; a crashing, leaking, slow or memory-hungry input is
# saved in artifacts/ and the script exits non-zero.
set -euo pipefail
cd "$(dirname "$0")"
runs="${1:-10000000}"
shift || true

# lld: gold links ASan objects with a spurious "Cannot export local symbol" warning.
swift build -c release -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld
binary="$(swift build -c release -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld --show-bin-path)/FrameDecoderFuzz"

python3 make-seeds.py .build/seeds >/dev/null
mkdir -p corpus artifacts

echo "date:   $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "commit: $(git log -1 --format='%h %s' | cut -c1-100)"
# One process (no -jobs/-workers: the machine may be shared). Limits: a single input running over
# 10 s is a hang; RSS over 2 GiB, or any one allocation over 64 MiB, is unbounded allocation (the
# largest body the decoder accepts is 64 KiB). Swift's own backtracer is off so libFuzzer reports.
set -x
SWIFT_BACKTRACE=enable=no "$binary" -runs="$runs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=64 \
    -print_final_stats=1 -artifact_prefix=artifacts/ "$@" corpus .build/seeds
