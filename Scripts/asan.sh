#!/usr/bin/env bash
# The loop, net, WebSocket and IM test suites under AddressSanitizer, a step of .ci/run: the hot paths
# of RunLoopKit use unsafe storage (unretained references, unchecked exclusivity), and ASan finds a use
# after free or an out-of-bounds access there the moment it happens.
#
# It builds only the test targets it runs and what they depend on (RUNLOOPKIT_TEST_TARGETS, read at the
# end of Package.swift), into .build-asan: not the chat node, the cluster, PostgreSQL, Redis or the
# samples, nor swift-argument-parser, swift-prometheus and TOMLKit's toml++ (SwiftPM says the last two
# are "not used by any target": true of this build, and only a warning).
# Measured 2026-11-26 at load 15-20 (four other helpers' builds on the 2 cores): the build 918 s (625
# steps, about 410 s of CPU; an ASan build of everything has 1,110 steps like the plain one), the 554
# tests 171 s (98 s of CPU). In a fresh-clone CI run at low load (`dbd9f3f`): 234 s in all, the 560
# tests (as many now) 42 s of it.
#
#   bash Scripts/asan.sh            build (into .build-asan) and run the suites
#   RUNLOOPKIT_TEST_TARGETS=RunLoopKitTests bash Scripts/asan.sh   only those of them (comma-separated)
#   bash Scripts/asan.sh --list     print the build's environment and the swift test arguments only
set -euo pipefail
cd "$(dirname "$0")/.."

test_targets=${RUNLOOPKIT_TEST_TARGETS:-RunLoopKitTests,RunLoopNetTests,RunLoopWebSocketTests,RunLoopIMTests,RunLoopIMCoreTests,RunLoopIMWebSocketTests}
# Suites that start another process are skipped: the toolchain's Foundation aborts under ASan inside
# Process.run (a heap-buffer-overflow in findMaximumOpenFromProcSelfFD, before the child exists), so
# they cannot run here whatever our code does. They spawn Python (PythonClientTests), the relay
# server (RelayRestartTests), openssl for certificates (TLSLoopbackTests, SecureWebSocketTests) and
# loop-demo (MainDispatchQueueTests);
# the plain and thread-sanitizer passes of .ci/run still run them.
# The crowd and differential tests of one loop run a smaller size here, as under the thread sanitizer
# (`scaledUnderSanitizers` in RunLoopTesting; .ci/run says why): at their plain size four of them took
# three minutes each beside the others, and the slowest set this step's length (230 s, 2026-11-27).
spawning='PythonClientTests|RelayRestartTests|TLSLoopbackTests|SecureWebSocketTests|MainDispatchQueueTests'
arguments=(--sanitize=address --scratch-path .build-asan --skip "$spawning")

if [ "${1:-}" = "--list" ]; then
  echo "RUNLOOPKIT_TEST_TARGETS=$test_targets swift test ${arguments[*]}"
  exit 0
fi
export RUNLOOPKIT_TEST_TARGETS="$test_targets"
swift build --build-tests --sanitize=address --scratch-path .build-asan
# LeakSanitizer is on: a leak fails the run. .ci/lsan-suppressions.txt says what it silences and why
# (Swift's weak-reference side tables, whose address LeakSanitizer cannot read, and XCTest's own run).
# Triaged 2026-11-26: every other report was a real reference cycle, fixed (a deferral's callbacks and
# an in-memory link's timer kept alive after their loop's thread ended, a connection with no source in
# its loop never told of the loop's end); two runs since found none.
ASAN_OPTIONS="detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
  LSAN_OPTIONS="suppressions=$PWD/.ci/lsan-suppressions.txt${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
  swift test --skip-build "${arguments[@]}"
