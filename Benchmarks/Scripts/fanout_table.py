#!/usr/bin/env python3
"""The fan-out table (issue 10): reads the `fanout.<figure> <value>` lines that `fanout-bench` and
Scripts/mqtt_fanout.py print, one file per system, the chat node's first, and prints one markdown
table with the ratio chat-node ÷ each mosquitto run; then every system's counts, checked: all
M × N deliveries arrived, each subscriber got all M messages, and all M were acknowledged to the
publisher (so nothing acknowledged was lost). Exits 1 if any count is wrong or a system reported
nothing.

    fanout_table.py [--counts-only] chat-node.txt mosquitto-paho.txt [mosquitto-c.txt]
"""
import os
import sys


def load(path):
    figures = {}
    with open(path) as lines:
        for line in lines:
            if line.startswith("fanout."):
                key, _, value = line[len("fanout."):].rstrip("\n").partition(" ")
                try:
                    figures[key] = float(value)
                except ValueError:
                    figures[key] = value
    return figures


def cpu_share(f, key):
    """CPU time in the window as a share of one core."""
    if key not in f or not f.get("window_s"):
        return None
    return f[key] / 1e3 / f["window_s"] * 100


# (label, how to get the value from one system's figures, decimals, unit)
ROWS = [
    ("deliveries received / expected", lambda f: f"{int(f['deliveries']):,} / {int(f['deliveries_expected']):,}" if "deliveries" in f else None, None, ""),
    ("**deliveries per second** (M × N / wall)", lambda f: f.get("deliveries_per_s"), 0, ""),
    ("messages published per second (M / wall)", lambda f: f.get("messages_per_s"), 0, ""),
    ("wall: first send → last delivery", lambda f: f.get("wall_s"), 2, " s"),
    ("**delivery latency p50**", lambda f: f["latency_p50_us"] / 1e3 if "latency_p50_us" in f else None, 1, " ms"),
    ("**delivery latency p99**", lambda f: f["latency_p99_us"] / 1e3 if "latency_p99_us" in f else None, 1, " ms"),
    ("delivery latency max", lambda f: f["latency_max_us"] / 1e3 if "latency_max_us" in f else None, 1, " ms"),
    ("server RSS idle (before the first client)", lambda f: f["rss_idle_kib"] / 1024 if "rss_idle_kib" in f else None, 1, " MiB"),
    ("server RSS, all clients online", lambda f: f["rss_online_kib"] / 1024 if "rss_online_kib" in f else None, 1, " MiB"),
    ("**server RSS per connected client**", lambda f: f.get("rss_per_client_kib"), 1, " KiB"),
    ("server RSS with the publisher alone online", lambda f: f["rss_one_client_kib"] / 1024 if "rss_one_client_kib" in f else None, 1, " MiB"),
    ("server RSS per subscriber beyond the first client", lambda f: f.get("rss_per_subscriber_kib"), 1, " KiB"),
    ("server RSS after the fan-out", lambda f: f["rss_after_kib"] / 1024 if "rss_after_kib" in f else None, 1, " MiB"),
    ("server CPU during the fan-out", lambda f: f.get("server_cpu_ms"), 0, " ms"),
    ("server CPU, share of one core", lambda f: cpu_share(f, "server_cpu_ms"), 0, " %"),
    ("**server CPU per delivery**", lambda f: f.get("server_cpu_per_delivery_us"), 2, " µs"),
    ("deliveries/s the server's CPU alone would allow (10⁶ / CPU per delivery)", lambda f: 1e6 / f["server_cpu_per_delivery_us"] if f.get("server_cpu_per_delivery_us") else None, 0, ""),
    ("server main thread waiting for a CPU (run queue)", lambda f: f.get("server_runqueue_wait_ms"), 0, " ms"),
    ("client-side CPU during the fan-out (all client processes)", lambda f: f.get("client_cpu_ms"), 0, " ms"),
    ("client-side CPU, share of one core", lambda f: cpu_share(f, "client_cpu_ms"), 0, " %"),
    ("clients online before sending (ramp)", lambda f: f.get("ramp_s"), 2, " s"),
    ("logins refused for now during the ramp, each retried", lambda f: f.get("login_retries"), 0, ""),
]


def cell(value, decimals, unit):
    if value is None:
        return "n/a"
    if isinstance(value, str):
        return value
    return f"{value:,.{decimals}f}{unit}"


def ratio(mine, theirs):
    if not isinstance(mine, float) or not isinstance(theirs, float) or theirs == 0:
        return ""
    return f"{mine / theirs:.2f}x"


def count_problems(f):
    """What is wrong with one system's counts (empty: every delivery arrived and was acknowledged)."""
    if "deliveries" not in f:
        return ["it reported no counts (the run failed before its report)"]
    n, m = int(f["subscribers"]), int(f["messages"])
    problems = []
    if int(f["deliveries"]) != n * m:
        problems.append(f"{int(f['deliveries']):,} deliveries, not N × M = {n * m:,}")
    if int(f.get("subscribers_complete", -1)) != n:
        problems.append(f"{int(f.get('subscribers_complete', 0))} of {n} subscribers got all {m:,} messages")
    if int(f.get("published", -1)) != m or f.get("publish_failed", 0):
        problems.append(f"{int(f.get('published', 0)):,} of {m:,} messages acknowledged, {int(f.get('publish_failed', 0))} failed")
    if f.get("unreadable", 0):
        problems.append(f"{int(f['unreadable'])} deliveries not from the publisher")
    return problems


def check_counts(systems, paths):
    """Prints one line of counts per system; returns whether all are right."""
    print("\ncounts:")
    right = True
    for figures, path in zip(systems, paths):
        name = figures.get("system", os.path.basename(path))
        problems = count_problems(figures)
        if problems:
            right = False
            print(f"  {name}: WRONG: " + "; ".join(problems))
        else:
            n, m = int(figures["subscribers"]), int(figures["messages"])
            print(f"  {name}: {n * m:,} of {n * m:,} deliveries, all {m:,} messages to each of {n} subscribers, "
                  f"{m:,} of {m:,} acknowledged to the publisher: nothing acknowledged was lost")
    return right


def main(paths, counts_only):
    systems = [load(path) for path in paths]
    if not counts_only:
        print_table(systems)
    return 0 if check_counts(systems, paths) else 1


def print_table(systems):
    chat, others = systems[0], systems[1:]
    first = chat
    print(f"N = {int(first.get('subscribers', 0))} subscribers + 1 publisher, M = {int(first.get('messages', 0)):,} messages, "
          f"window W = {int(first.get('window', 0))}, payload {int(first.get('payload_bytes', 0))} bytes\n")
    header = ["figure", chat.get("system", "chat-node")]
    for other in others:
        header += [other.get("system", "mosquitto"), "chat-node ÷ it"]
    print("| " + " | ".join(header) + " |")
    print("| --- |" + " ---: |" * (len(header) - 1))
    for label, get, decimals, unit in ROWS:
        mine = get(chat)
        row = [label, cell(mine, decimals, unit)]
        for other in others:
            theirs = get(other)
            row += [cell(theirs, decimals, unit), ratio(mine, theirs) if decimals is not None else ""]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    arguments = sys.argv[1:]
    counts_only = arguments[:1] == ["--counts-only"]
    paths = arguments[1:] if counts_only else arguments
    if len(paths) < 2:
        sys.exit(__doc__)
    sys.exit(main(paths, counts_only))
