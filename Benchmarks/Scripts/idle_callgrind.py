#!/usr/bin/env python3
"""Instructions per heartbeat (issue 22), for `Scripts/node-idle.sh --callgrind`: the node ran under
callgrind with instrumentation switched on for two windows of the idle crowd, the second twice as long
as the first, each dumped on its own. A heartbeat costs (instructions of the long window − of the short
one) / (heartbeats in the long − in the short), so what each window pays regardless of heartbeats (the
loop's timers, the stall detector's second) drops out, as in `fanout.sh --callgrind`. Heartbeats are
counted in the dumps themselves: calls of the session machine's `frameReceived` or `heartbeatReceived`
(one per frame read, and an idle logged-in client sends only HEARTBEATs, which the session hands to the
second, or to `heartbeatAnswered`) and of `sendto` (one per answer).

    idle_callgrind.py SHORT.callgrind LONG.callgrind
"""
import re
import subprocess
import sys

COUNTED = [("frameReceived", re.compile(r"IMServerSessionMachineV(13frameReceived|17heartbeatReceived|17heartbeatAnswered)")),
           ("sendto", re.compile(r"^(__libc_)?sendto$|^send$|^__send$")),
           ("passes", re.compile(r"^epoll_wait$"))]

# The loop's work for heartbeats, by the mangled name's tail, inclusive: the port callouts (reads, frames
# handled, answers gathered), the blocks (the pass's batched writes) and the timers (the sessions'
# deadlines). The rest of the loop's work is paid once per pass (observers, waiting, bookkeeping),
# however many heartbeats the pass brought: load bunches heartbeats into fewer passes.
PER_HEARTBEAT = [("read callouts", "C17performReadyPorts"), ("write blocks", "C16runPendingBlocks"),
                 ("timers", "C13fireDueTimers")]


def read(path):
    """The dump's total instructions and, per counted function, the calls made to it."""
    names = {}
    calls = {label: 0 for label, _ in COUNTED}
    total = None
    callee = None
    with open(path) as lines:
        for line in lines:
            if line.startswith(("totals:", "summary:")):
                total = int(line.split()[1])
            elif line.startswith(("fn=", "cfn=")):
                key, _, rest = line.rstrip("\n").partition("=")
                match = re.match(r"\((\d+)\)(?: (.*))?$", rest)
                if match:
                    if match.group(2) is not None:
                        names[match.group(1)] = match.group(2)
                    name = names.get(match.group(1), "")
                else:
                    name = rest
                callee = name if key == "cfn" else None
            elif line.startswith("calls=") and callee is not None:
                count = int(line[len("calls="):].split()[0])
                for label, pattern in COUNTED:
                    if pattern.search(callee):
                        calls[label] += count
                callee = None
    return total, calls


def inclusive(path):
    """Inclusive instructions of the PER_HEARTBEAT functions in one dump (callgrind_annotate)."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                         capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        match = re.match(r"\s*([\d,]+) \([^)]*\)\s+\S*?:(\S+)", line)
        if not match:
            continue
        for label, tail in PER_HEARTBEAT:
            # The method itself (its mangled name ends in F), not its closures. When the loop's run
            # started inside a timer, callgrind names the recursion `'2`: the outer entry holds the
            # whole loop, so the smallest is the timers' own.
            if re.search(tail + r"\S*F('\d+)?$", match.group(2)):
                value = int(match.group(1).replace(",", ""))
                found[label] = min(found.get(label, value), value)
    return found


def split(short_path, long_path, more, short_calls, long_calls, long_total, short_total):
    """Instructions per heartbeat and per loop pass apart, from the windows' differences."""
    passes = long_calls["passes"] - short_calls["passes"]
    short_parts, long_parts = inclusive(short_path), inclusive(long_path)
    parts = {label: long_parts.get(label, 0) - short_parts.get(label, 0) for label, _ in PER_HEARTBEAT}
    per_pass_work = (long_total - short_total) - sum(parts.values())
    print(f"\nloop passes (epoll_wait calls): {passes:,} for {more:,} heartbeats ({passes / more:.2f} a heartbeat)")
    print("| part | instructions | per heartbeat | per pass |")
    print("| --- | ---: | ---: | ---: |")
    for label, _ in PER_HEARTBEAT:
        print(f"| {label} | {parts[label]:,} | {parts[label] / more:,.0f} | |")
    each_pass = per_pass_work / passes if passes > 0 else 0
    print(f"| the rest of the loop (observers, waiting, bookkeeping) | {per_pass_work:,} | | {each_pass:,.0f} |")
    at_one = sum(parts.values()) / more + each_pass
    print(f"\n**instructions per heartbeat at one pass a heartbeat** (a crowd spread out, no load): **{at_one:,.0f}**")


def main(short_path, long_path):
    short_total, short_calls = read(short_path)
    long_total, long_calls = read(long_path)
    if short_total is None or long_total is None:
        print("a dump has no totals line", file=sys.stderr)
        return 1
    print("| window | instructions | frameReceived calls | sendto calls | instructions ÷ frameReceived |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, total, calls in (("short", short_total, short_calls), ("long", long_total, long_calls)):
        heartbeats = calls["frameReceived"]
        each = f"{total / heartbeats:,.0f}" if heartbeats else "n/a"
        print(f"| {label} | {total:,} | {heartbeats:,} | {calls['sendto']:,} | {each} |")
    more = long_calls["frameReceived"] - short_calls["frameReceived"]
    if more <= 0:
        print("the long window read no more frames than the short one: no per-heartbeat figure", file=sys.stderr)
        return 1
    print(f"\n**instructions per heartbeat** (difference of the windows ÷ difference of their frames): "
          f"**{(long_total - short_total) / more:,.0f}** over {more:,} heartbeats")
    split(short_path, long_path, more, short_calls, long_calls, long_total, short_total)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
