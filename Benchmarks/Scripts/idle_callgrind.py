#!/usr/bin/env python3
"""Instructions per heartbeat (issue 22), for `Scripts/node-idle.sh --callgrind`: the node ran under
callgrind with instrumentation switched on for two windows of the idle crowd, the second twice as long
as the first, each dumped on its own. A heartbeat costs (instructions of the long window − of the short
one) / (heartbeats in the long − in the short), so what each window pays regardless of heartbeats (the
loop's timers, the stall detector's second) drops out, as in `fanout.sh --callgrind`. Heartbeats are
counted in the dumps themselves: calls of the session machine's `frameReceived` (one per frame read,
and an idle logged-in client sends only HEARTBEATs) and of `sendto` (one per answer).

    idle_callgrind.py SHORT.callgrind LONG.callgrind
"""
import re
import sys

COUNTED = [("frameReceived", re.compile(r"IMServerSessionMachineV13frameReceived")),
           ("sendto", re.compile(r"^(__libc_)?sendto$|^send$|^__send$"))]


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
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
