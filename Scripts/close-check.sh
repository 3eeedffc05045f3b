#!/usr/bin/env bash
# Runs tests under the close-check shim (Scripts/close-check/close_check.c): every close(2) that fails
# with EBADF — a descriptor closed twice whose number was not reused yet — and every epoll_ctl(ADD) of an
# epoll instance into itself is reported with two backtraces (this close, and the last close of that
# number that succeeded), symbolized here. The test runner and the processes it spawns with Foundation's
# Process inherit the shim; runCommand's children (a fixed environment) do not.
#
#   bash Scripts/close-check.sh --filter RunLoopNetTests     swift test --skip-build with these arguments
#   CLOSE_CHECK_QUARANTINE=256 bash Scripts/close-check.sh …  also hold the last 256 closed numbers of
#       the test runner back, so a second close of one is caught even where the number would have been
#       reused. Expect a few failures that say nothing about closes: tests that check a closed number
#       is free or invalid see it held (SocketPairTests, PortSourceTests.badDescriptorsAreTypedErrors),
#       and the backtrace taken at every close slows tests with sub-second bounds
#       (ClientNetworkNamespaceTests at load 7, 2026-11-27)
#   bash Scripts/close-check.sh --symbolize FILE              symbolize an existing report
#
# Build the tests first (`swift build --build-tests`). The report is .build/close-check.log; the
# script prints it (symbolized) after the run and exits with the tests' status. Processes that are not
# ours (redis-server, postgres, python) may close bad numbers on purpose: read the executable in each
# report's first line.
set -uo pipefail
cd "$(dirname "$0")/.."

symbolize() {
    # `object(+0xOFFSET)[address]` has no exported symbol: ask llvm-symbolizer; `object(symbol+0x…)` only
    # needs demangling.
    while IFS= read -r line; do
        if [[ $line =~ ^(.+)\(\+(0x[0-9a-f]+)\)\[0x[0-9a-f]+\]$ ]]; then
            local object=${BASH_REMATCH[1]} offset=${BASH_REMATCH[2]}
            local where
            where=$(llvm-symbolizer --obj="$object" "$offset" 2>/dev/null | head -2 | paste -sd ' ')
            echo "  ${where:-$line}"
        elif [[ $line =~ ^(.+)\((.+)\+0x[0-9a-f]+\)\[0x[0-9a-f]+\]$ ]]; then
            echo "  ${BASH_REMATCH[2]}  (${BASH_REMATCH[1]##*/})"
        else
            echo "$line"
        fi
    done | swift demangle --simplified
}

if [ "${1:-}" = "--symbolize" ]; then
    symbolize <"$2"
    exit 0
fi

mkdir -p .build
shim=.build/close-check.so
log=$PWD/.build/close-check.log
cc -shared -fPIC -O1 -Wall -Wextra -Werror -o "$shim" Scripts/close-check/close_check.c -ldl
: >"$log"
LD_PRELOAD=$PWD/$shim CLOSE_CHECK_LOG=$log swift test --skip-build "$@"
status=$?
reports=$(grep -c '^close-check:' "$log")
echo "close-check: $reports report(s) in $log"
symbolize <"$log"
exit $status
