#!/usr/bin/env bash
# The loop, net, WebSocket and IM test suites under AddressSanitizer: the hot paths of RunLoopKit use
# unsafe storage (unretained references, unchecked exclusivity), and ASan finds a use after free or an
# out-of-bounds access there the moment it happens. Not yet a step of .ci/run: what the ASan build adds
# to the CI run has still to be measured on a quiet machine (the run must stay well under 30 min).
#
#   bash Scripts/asan.sh            build (into .build-asan) and run the suites
#   bash Scripts/asan.sh --list     print the swift test arguments only
set -euo pipefail
cd "$(dirname "$0")/.."

suites='RunLoopKitTests|RunLoopNetTests|RunLoopWebSocketTests|RunLoopIMTests|RunLoopIMCoreTests|RunLoopIMWebSocketTests'
# Suites that start another process are skipped: the toolchain's Foundation aborts under ASan inside
# Process.run (a heap-buffer-overflow in findMaximumOpenFromProcSelfFD, before the child exists), so
# they cannot run here whatever our code does. They spawn Python (PythonClientTests), the relay
# server (RelayRestartTests) and openssl for certificates (TLSLoopbackTests, SecureWebSocketTests);
# the plain and thread-sanitizer passes of .ci/run still run them.
spawning='PythonClientTests|RelayRestartTests|TLSLoopbackTests|SecureWebSocketTests'
arguments=(--sanitize=address --scratch-path .build-asan --filter "$suites" --skip "$spawning")

if [ "${1:-}" = "--list" ]; then
  echo "swift test ${arguments[*]}"
  exit 0
fi
swift build --build-tests --sanitize=address --scratch-path .build-asan
swift test --skip-build "${arguments[@]}"
