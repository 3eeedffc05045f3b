#!/usr/bin/env python3
"""System calls per delivery (issue 22), for `Scripts/fanout.sh --syscalls`: each server was traced
by `perf trace -s` (attached once it listened, every thread) twice, for M/10 and for M messages, with
the same N subscribers; one more delivery costs (calls of the long run − of the short one) /
(N × (M − M/10)) of each system call, since start-up, logins and shutdown are the same in both runs.
Counts, not times (perf's own times are left out). Checks every run's counts
(Scripts/fanout_table.py). Run through `fanout_callgrind.py --syscalls DIR [fanout-bench arguments]`.
"""
import os

from fanout_callgrind import SYSTEMS, counts_right, two_runs


def calls(path):
    """{system call: calls} summed over the threads of a `perf trace -s` summary, or None when the
    file is missing."""
    if not os.path.exists(path):
        return None
    counted = {}
    with open(path) as lines:
        for line in lines:
            fields = line.split()
            # "syscall calls errors total min avg max stddev", a table per thread.
            if len(fields) == 8 and fields[1].isdigit():
                counted[fields[0]] = counted.get(fields[0], 0) + int(fields[1])
    return counted


def report(work, arguments):
    short_run, long_run, deliveries = two_runs(arguments, "calls")
    per_delivery = {}
    for name, _ in SYSTEMS:
        runs = [calls(os.path.join(work, f"{name}-{m}.syscalls")) for m in (short_run, long_run)]
        if None in runs:
            continue
        names = set(runs[0]) | set(runs[1])
        per_delivery[name] = {call: (runs[1].get(call, 0) - runs[0].get(call, 0)) / deliveries for call in names}
    shown = sorted({call for table in per_delivery.values() for call, each in table.items() if abs(each) >= 0.005},
                   key=lambda call: -max(table.get(call, 0) for table in per_delivery.values()))
    labels = [label for name, label in SYSTEMS if name in per_delivery]
    print("| system call | " + " | ".join(labels) + " |")
    print("| --- |" + " ---: |" * len(labels))
    for call in shown:
        cells = [f"{per_delivery[name].get(call, 0):.3f}" for name, _ in SYSTEMS if name in per_delivery]
        print(f"| `{call}` | " + " | ".join(cells) + " |")
    totals = [f"**{sum(per_delivery[name].values()):.3f}**" for name, _ in SYSTEMS if name in per_delivery]
    print("| **all** | " + " | ".join(totals) + " |")
    right = counts_right(work, arguments)
    return 0 if right and len(per_delivery) == len(SYSTEMS) else 1

