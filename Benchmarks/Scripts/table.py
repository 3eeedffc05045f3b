#!/usr/bin/env python3
"""Builds the one comparison table from package-benchmark's `histogramSamples` export.

Usage: table.py RESULTS_DIR

Every benchmark is named `<workload>#<operations per iteration>`; each exported sample is one iteration's
measurement (wall clock in ns, malloc count, leaked bytes), so the value per operation is
sample / operations. Rows are workloads, columns systems; the last columns are RunLoopKit's ratio to
each baseline (below 1.00x: RunLoopKit is faster or smaller).
"""
import math
import os
import re
import sys

SYSTEMS = [
    ("RunLoopKitBench", "RunLoopKit"),
    ("LibeventBench", "libevent 2.1 (C)"),
    ("FoundationBench", "Foundation RunLoop"),
    ("NIOBench", "SwiftNIO"),
]
BASELINES = SYSTEMS[1:]

FILE = re.compile(
    r"^(?P<baseline>[^.]+)\.(?P<target>" + "|".join(t for t, _ in SYSTEMS) + r")\."
    r"(?P<name>.+)\.(?P<metric>[A-Za-z]+)\.histogram\.samples\.tsv$"
)

# Why a system has no number for a workload (a missing cell without a reason means the benchmark failed).
NA = {
    ("xthread.signalWake", "NIOBench"): "NIO has no signalled sources: `execute` is its only hand-off",
    ("xthread.signalAndWakeUp", "LibeventBench"): "RunLoopKit API",
    ("xthread.signalAndWakeUp", "FoundationBench"): "RunLoopKit API",
    ("xthread.signalAndWakeUp", "NIOBench"): "RunLoopKit API",
    ("source0.signalPerform.observer1", "LibeventBench"): "libevent 2.1 has no loop observers (no prepare/check hooks)",
    ("source0.signalPerform.observer1", "NIOBench"): "NIO has no loop observers",
    ("source0.signalPerform.activityRecorder", "LibeventBench"): "no activity recorder",
    ("source0.signalPerform.activityRecorder", "FoundationBench"): "no activity recorder",
    ("source0.signalPerform.activityRecorder", "NIOBench"): "no activity recorder",
    ("source0.signalPerform.threadSafe", "RunLoopKitBench"): "libevent configuration variant",
    ("source0.signalPerform.threadSafe", "FoundationBench"): "libevent configuration variant",
    ("source0.signalPerform.threadSafe", "NIOBench"): "libevent configuration variant",
    ("timer.pending1k.insertCancel.threadSafe", "RunLoopKitBench"): "libevent configuration variant",
    ("timer.pending1k.insertCancel.threadSafe", "FoundationBench"): "libevent configuration variant",
    ("timer.pending1k.insertCancel.threadSafe", "NIOBench"): "libevent configuration variant",
    ("fd.pingpong.precise", "RunLoopKitBench"): "libevent configuration variant",
    ("fd.pingpong.precise", "FoundationBench"): "libevent configuration variant",
    ("fd.pingpong.precise", "NIOBench"): "libevent configuration variant",
    ("mem.customSource", "NIOBench"): "NIO has no custom sources",
    ("mem.portSource", "NIOBench"): "a NIO Channel is a whole pipeline, not a watched fd: not compared",
    ("tcp.echo", "FoundationBench"): "Foundation has no TCP listener/connection API on Linux (no Network.framework); CFSocket callbacks on BSD sockets are the fd ping-pong row",
    ("ws.echo", "LibeventBench"): "libevent 2.1 has no WebSocket (evws arrived in 2.2, not in Debian)",
    ("ws.echo", "FoundationBench"): "Foundation on Linux has a WebSocket client (URLSessionWebSocketTask) but no server",
}

# (section, label, workload, metric, statistic, unit, target)
# unit: "ns" (per operation), "ms" (per iteration), "B" (bytes per item), "allocs" (per operation),
#       "msgs" (operations per second from the per-operation time; no ratio cells: the ns row has them).
# target: None, ("ratio", baseline target, max ratio), ("abs", max value in the row's unit),
#         ("zero",) for "no allocation per operation".
ROWS = [
    ("1. Timers", "zero-delay one-shot, 100k scheduled then fired (per timer)",
     "timer.oneshot.batch", "wallClock", 50, "ns", ("ratio", "LibeventBench", 1.0)),
    ("", "zero-delay one-shot, scheduled by the previous one's callback (per timer)",
     "timer.oneshot.chain", "wallClock", 50, "ns", ("ratio", "LibeventBench", 1.0)),
    ("", "100k timers due over 100 ms: start to last fire",
     "timer.spread100ms", "wallClock", 50, "ms", ("abs", 110.0)),
    ("", "repeating timer, always due: one tick",
     "timer.repeat.tick", "wallClock", 50, "ns", ("ratio", "LibeventBench", 1.0)),
    ("", "insert + cancel one timer, 1,000 pending",
     "timer.pending1k.insertCancel", "wallClock", 50, "ns", None),
    ("", "insert + cancel one timer, 1,000,000 pending",
     "timer.pending1M.insertCancel", "wallClock", 50, "ns", None),
    ("", "insert + cancel, 1,000 pending, libevent with its locking on (event_add from any thread, as ours)",
     "timer.pending1k.insertCancel.threadSafe", "wallClock", 50, "ns", None),
    ("2. Custom source", "signal → perform on the loop thread (source0 dispatch)",
     "source0.signalPerform", "wallClock", 50, "ns", ("abs", 100.0)),
    ("", "the same, libevent with its locking on (event_active from any thread, as our signal())",
     "source0.signalPerform.threadSafe", "wallClock", 50, "ns", None),
    ("3. Cross-thread", "perform a block from another thread, wait for it: p50",
     "xthread.perform", "wallClock", 50, "ns", ("ratio", "LibeventBench", 1.1)),
    ("", "perform a block from another thread, wait for it: p99",
     "xthread.perform", "wallClock", 99, "ns", None),
    ("", "signal a source + wake, wait for it: p50",
     "xthread.signalWake", "wallClock", 50, "ns", ("ratio", "LibeventBench", 1.1)),
    ("", "signal a source + wake, wait for it: p99",
     "xthread.signalWake", "wallClock", 99, "ns", None),
    ("", "signalAndWakeUp(), wait for it: p50",
     "xthread.signalAndWakeUp", "wallClock", 50, "ns", None),
    ("", "signalAndWakeUp(), wait for it: p99",
     "xthread.signalAndWakeUp", "wallClock", 99, "ns", None),
    ("4. fd readiness", "1-byte ping-pong between two port sources (per round trip)",
     "fd.pingpong", "wallClock", 50, "ns", ("ratio", "LibeventBench", 1.2)),
    ("", "the same, libevent with EVENT_BASE_FLAG_PRECISE_TIMER",
     "fd.pingpong.precise", "wallClock", 50, "ns", None),
    ("5. Observers", "loop iteration, no observer (= source0 row)",
     "source0.signalPerform", "wallClock", 50, "ns", None),
    ("", "loop iteration, one observer of all activities",
     "source0.signalPerform.observer1", "wallClock", 50, "ns", None),
    ("", "loop iteration, activity recorder attached",
     "source0.signalPerform.activityRecorder", "wallClock", 50, "ns", None),
    ("6. Memory", "bytes per pending timer (100k pending)",
     "mem.pendingTimer", "memoryLeakedBytes", 50, "B", None),
    ("", "bytes per custom source (10k in a mode)",
     "mem.customSource", "memoryLeakedBytes", 50, "B", None),
    ("", "bytes per port source (1k pipes watched)",
     "mem.portSource", "memoryLeakedBytes", 50, "B", None),
    ("", "allocations per repeating-timer tick (steady state)",
     "timer.repeat.tick", "mallocCountTotal", 50, "allocs", ("zero",)),
    ("", "allocations per source signal → perform (steady state)",
     "source0.signalPerform", "mallocCountTotal", 50, "allocs", ("zero",)),
    ("", "allocations per fd ping-pong round trip (steady state)",
     "fd.pingpong", "mallocCountTotal", 50, "allocs", ("zero",)),
    ("", "allocations per one-shot timer (batch: create, schedule, fire)",
     "timer.oneshot.batch", "mallocCountTotal", 50, "allocs", None),
    ("", "allocations per cross-thread perform round trip",
     "xthread.perform", "mallocCountTotal", 50, "allocs", None),
    ("", "allocations per cross-thread signal + wake round trip",
     "xthread.signalWake", "mallocCountTotal", 50, "allocs", None),
    ("7. TCP echo", "64-byte echo, 100 connections, one message in flight each (per message)",
     "tcp.echo", "wallClock", 50, "ns", None),
    ("", "the same in messages per second",
     "tcp.echo", "wallClock", 50, "msgs", None),
    ("", "allocations per echoed message (client and server)",
     "tcp.echo", "mallocCountTotal", 50, "allocs", None),
    ("8. WebSocket echo", "64-byte binary message, masked by the client, 100 connections (per message)",
     "ws.echo", "wallClock", 50, "ns", None),
    ("", "the same in messages per second",
     "ws.echo", "wallClock", 50, "msgs", None),
    ("", "allocations per echoed message (client and server)",
     "ws.echo", "mallocCountTotal", 50, "allocs", None),
]

# Rows whose ratio to another row of the same system is the point: (label, workload, over workload).
FRAMING = [
    ("WebSocket framing's cost: ws.echo ÷ tcp.echo per message, each system against itself", "ws.echo", "tcp.echo"),
]


def percentile(values, p):
    """Nearest-rank percentile (p50 of an even count is the lower middle value)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100.0 * len(ordered)))
    return ordered[rank - 1]


def load(directory):
    """{(workload, target, metric): (operations, [samples])}"""
    results = {}
    for file_name in os.listdir(directory):
        match = FILE.match(file_name)
        if not match:
            continue
        name = match["name"]
        workload, _, operations = name.rpartition("#")
        if not workload or not operations.isdigit():
            continue
        samples = []
        with open(os.path.join(directory, file_name)) as handle:
            # The header names the metric and its unit; counts may be exported in K or M.
            header = next(handle, "")
            scale = 1.0
            unit = re.search(r"\((K|M|G)\)\s*$", header.strip())
            if unit and match["metric"] != "wallClock":
                scale = {"K": 1e3, "M": 1e6, "G": 1e9}[unit.group(1)]
            for line in handle:
                line = line.strip()
                if line:
                    samples.append(float(line) * scale)
        if samples:
            results[(workload, match["target"], match["metric"])] = (int(operations), samples)
    return results


def value(results, workload, target, metric, statistic):
    entry = results.get((workload, target, metric))
    if entry is None:
        return None
    operations, samples = entry
    return percentile(samples, statistic) / operations


def fmt(number, unit):
    if number is None:
        return None
    if unit == "msgs":
        return f"{1e9 / number:,.0f}/s" if number > 0 else "—"
    if unit == "ms":
        return f"{number / 1e6:.1f} ms"
    if unit == "B":
        return f"{number:,.0f} B"
    if unit == "allocs":
        if number == 0:
            return "0"
        if number < 0.01:
            return f"~0 ({number:.0e})"
        return f"{number:.3g}" if number < 10 else f"{number:,.0f}"
    if number >= 1e6:
        return f"{number / 1e6:.2f} ms"
    if number >= 1e4:
        return f"{number / 1e3:.1f} µs"
    if number >= 1e3:
        return f"{number / 1e3:.2f} µs"
    return f"{number:.1f} ns" if number < 100 else f"{number:.0f} ns"


def verdict(target, row_values, unit):
    ours = row_values.get("RunLoopKitBench")
    if target is None or ours is None:
        return ""
    kind = target[0]
    if kind == "zero":
        # Under 0.01 per operation means setup allocations amortised over the batch, not per operation.
        return "✓ 0" if ours < 0.01 else f"✗ {ours:.3g}"
    if kind == "abs":
        limit = target[1]
        shown = ours / 1e6 if unit == "ms" else ours
        return f"{'✓' if shown <= limit else '✗'} ≤ {limit:g} {'ms' if unit == 'ms' else 'ns'}"
    if kind == "ratio":
        base = row_values.get(target[1])
        if base is None:
            return "?"
        ratio = ours / base
        return f"{'✓' if ratio <= target[2] else '✗'} ≤ {target[2]:.1f}× libevent"
    return ""


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    results = load(sys.argv[1])
    if not results:
        sys.exit(f"no histogramSamples files in {sys.argv[1]}")

    header = ["Workload (one operation)"] + [label for _, label in SYSTEMS]
    header += [f"RLK ÷ {label.split(' ')[0]}" for _, label in BASELINES] + ["Target"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 2) + ["---"]) + "|"]
    notes = {}
    section_seen = None
    for section, label, workload, metric, statistic, unit, target in ROWS:
        if section and section != section_seen:
            lines.append(f"| **{section}** |" + " |" * (len(header) - 1))
            section_seen = section
        row_values = {target_name: value(results, workload, target_name, metric, statistic)
                      for target_name, _ in SYSTEMS}
        cells = [label]
        for target_name, _ in SYSTEMS:
            shown = fmt(row_values[target_name], unit)
            if shown is None:
                reason = NA.get((workload, target_name))
                if reason:
                    index = notes.setdefault(reason, len(notes) + 1)
                    shown = f"n/a[{index}]"
                else:
                    shown = "missing"
            cells.append(shown)
        ours = row_values["RunLoopKitBench"]
        for target_name, _ in BASELINES:
            base = row_values[target_name]
            if ours is None or base is None or unit == "msgs":
                cells.append("")  # a messages/s row repeats the ns row above it, which has the ratios
            elif unit == "allocs" and max(ours, base) < 0.01:
                cells.append("=")  # both below one allocation per 100 operations: setup, not per operation
            elif unit == "allocs" and ours < 0.01:
                cells.append("≈0×")
            elif unit == "allocs" and base < 0.01:
                cells.append("—")  # the baseline allocates nothing per operation: no meaningful ratio
            elif base == 0:
                cells.append("=" if ours == 0 else "—")
            else:
                ratio = ours / base
                cells.append(f"{ratio:.2f}×" if ratio >= 0.1 else f"{ratio:.2g}×")
        cells.append(verdict(target, row_values, unit))
        lines.append("| " + " | ".join(cells) + " |")
    print("\n".join(lines))
    if notes:
        print()
        for reason, index in notes.items():
            print(f"[{index}] {reason}")
    lost = [(workload, target, sum(samples))
            for (workload, target, metric), (_, samples) in sorted(results.items())
            if metric == "lostWakeUps" and sum(samples) > 0]
    for workload, target, count in lost:
        label = dict(SYSTEMS)[target]
        print(f"\n**LOST WAKE-UPS: {label} `{workload}`: {count:.0f} round trip(s) never woke the loop "
              "(recovered after 1 s by adding a timer; those iterations are in the samples).**")
    for label, workload, base_workload in FRAMING:
        cells = []
        for target_name, system in SYSTEMS:
            framed = value(results, workload, target_name, "wallClock", 50)
            raw = value(results, base_workload, target_name, "wallClock", 50)
            if framed is not None and raw:
                cells.append(f"{system} {framed / raw:.2f}×")
        if cells:
            print(f"\n{label}: " + ", ".join(cells))
    print()
    print("Medians (p50) unless the row says p99; time rows are per operation except the 100 ms spread.")
    print("Ratios are RunLoopKit's value divided by the baseline's: below 1.00× RunLoopKit is faster/smaller.")


if __name__ == "__main__":
    main()
