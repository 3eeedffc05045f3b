#!/usr/bin/env python3
"""Instructions per delivery (issue 22), for `Scripts/fanout.sh --callgrind`: each server ran under
callgrind twice, for M/10 and for M messages, with the same N subscribers; one more delivery costs
(instructions of the long run − of the short one) / (N × (M − M/10)), since start-up, logins and
shutdown are the same in both runs. Counts do not move with the machine's load, so two builds or two
servers compare on a shared machine. Checks every run's counts (Scripts/fanout_table.py) and exits 1
when one is wrong.

    fanout_callgrind.py --message-counts [fanout-bench arguments]   prints the two message counts
    fanout_callgrind.py --work DIR [fanout-bench arguments]         prints the table from DIR
    fanout_callgrind.py --syscalls DIR [fanout-bench arguments]     the same for system calls
                                                                    (Scripts/fanout.sh --syscalls)
"""
import os
import sys

from fanout_table import check_counts, load

SYSTEMS = [("chat-node", "chat-node (SQLite, release)"), ("mosquitto", "mosquitto (C clients)")]


def last_value(arguments, flag, default):
    """The last value given for `flag` (a later one overrides, as in fanout-bench)."""
    value = default
    for index, argument in enumerate(arguments[:-1]):
        if argument == flag:
            value = int(arguments[index + 1])
    return value


def message_counts(arguments):
    long_run = last_value(arguments, "--messages", 100)
    return max(1, long_run // 10), long_run


def instructions(path):
    """The total of a callgrind output file (its `totals:` or `summary:` line), or None."""
    with open(path) as lines:
        for line in lines:
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
    return None


def two_runs(arguments, figure):
    """The two runs' message counts and the deliveries between them, after a line that says how
    `figure` per delivery is made of them."""
    subscribers = last_value(arguments, "--subscribers", 50)
    short_run, long_run = message_counts(arguments)
    deliveries = subscribers * (long_run - short_run)
    print(f"N = {subscribers} subscribers + 1 publisher; runs of M = {short_run:,} and {long_run:,} messages; "
          f"{figure} per delivery = difference of the totals / {deliveries:,}\n")
    return short_run, long_run, deliveries


def counts_right(work, arguments):
    """Checks (and prints) the counts of every server's two runs."""
    short_run, long_run = message_counts(arguments)
    paths = [os.path.join(work, f"{name}-{m}.txt") for name, _ in SYSTEMS for m in (short_run, long_run)]
    return check_counts([load(path) for path in paths], paths)


def report(work, arguments):
    short_run, long_run, deliveries = two_runs(arguments, "instructions")
    print("| server | instructions, M = {0:,} | instructions, M = {1:,} | **instructions per delivery** | ÷ mosquitto |"
          .format(short_run, long_run))
    print("| --- | ---: | ---: | ---: | ---: |")
    per_delivery = {}
    rows = []
    for name, label in SYSTEMS:
        totals = [instructions(os.path.join(work, f"{name}-{m}.callgrind")) for m in (short_run, long_run)]
        if None in totals:
            rows.append((name, label, totals, None))
            continue
        per_delivery[name] = (totals[1] - totals[0]) / deliveries
        rows.append((name, label, totals, per_delivery[name]))
    for name, label, totals, each in rows:
        cells = [f"{total:,}" if total is not None else "n/a" for total in totals]
        ratio = f"{each / per_delivery['mosquitto']:.2f}x" if each and per_delivery.get("mosquitto") else ""
        print(f"| {label} | {cells[0]} | {cells[1]} | {f'{each:,.0f}' if each else 'n/a'} | {ratio} |")
    right = counts_right(work, arguments)
    return 0 if right and len(per_delivery) == len(SYSTEMS) else 1


def main(arguments):
    if arguments[:1] == ["--message-counts"]:
        print(*message_counts(arguments[1:]))
        return 0
    if arguments[:1] == ["--work"] and len(arguments) >= 2:
        return report(arguments[1], arguments[2:])
    if arguments[:1] == ["--syscalls"] and len(arguments) >= 2:
        # Imported here: it builds on this module's helpers.
        import fanout_syscalls
        return fanout_syscalls.report(arguments[1], arguments[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
