#!/usr/bin/env python3
"""The tables of Scripts/cluster.sh, from its results directory, and the counts of every run.

Traffic files are SYSTEM.WORKLOAD.RUN.txt with `cluster.<figure> <value>` lines (cluster-bench traffic);
idle.txt holds the script's /proc readings of the nodes (`idle.nodeK key=value …`) and every client
process's `idle.<figure> <value>` lines. Each cell is the median over the runs, each run's value after
it. Exits 1 if any count is wrong (or a run is missing its figures), saying which.
"""
import glob
import os
import statistics
import sys

SYSTEMS = [("sqlite", "1 node, SQLite"), ("cluster", "3 nodes, PostgreSQL + Redis")]
WORKLOADS = [("direct", "direct, 1 recipient on another node"), ("room", "room of 10 on the other nodes"),
             ("fanout", "room of {recipients} on all nodes")]
ROWS = [
    ("direct", "latency_p50_us", "SEND→DELIVER p50 (µs)", 0),
    ("direct", "latency_p99_us", "SEND→DELIVER p99 (µs)", 0),
    ("direct", "node_cpu_per_delivery_us", "node CPU per delivery (µs)", 0),
    ("room", "latency_p50_us", "SEND→DELIVER p50 (µs)", 0),
    ("room", "latency_p99_us", "SEND→DELIVER p99 (µs)", 0),
    ("room", "node_cpu_per_delivery_us", "node CPU per delivery (µs)", 1),
    ("fanout", "deliveries_per_s", "deliveries per second", 0),
    ("fanout", "latency_p50_us", "SEND→DELIVER p50 (µs)", 0),
    ("fanout", "latency_p99_us", "SEND→DELIVER p99 (µs)", 0),
    ("fanout", "node_cpu_per_delivery_us", "node CPU per delivery, all nodes (µs)", 1),
    ("fanout", "service_cpu_per_delivery_us", "PostgreSQL + Redis CPU per delivery (µs)", 1),
    ("fanout", "client_cpu_ms", "client process CPU in the window (ms)", 0),
    ("fanout", "ramp_s", "logins + joins before the window (s)", 1),
]


def read(path):
    figures = {}
    with open(path) as handle:
        for line in handle:
            parts = line.split(None, 1)
            if len(parts) == 2 and "." in parts[0]:
                figures[parts[0].split(".", 1)[1]] = parts[1].strip()
    return figures


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def cell(values, digits):
    values = [v for v in values if v is not None]
    if not values:
        return "—"
    fmt = "{:,.%df}" % digits
    text = fmt.format(statistics.median(values))
    return text if len(values) == 1 else text + " (" + ", ".join(fmt.format(v) for v in values) + ")"


def traffic(directory, counts_only):
    runs = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.*.*.txt"))):
        system, workload, run = os.path.basename(path)[:-4].split(".")
        runs.setdefault((system, workload), []).append((run, read(path)))
    wrong = []
    for (system, workload), items in sorted(runs.items()):
        for run, f in items:
            ok = (f.get("acknowledged") == f.get("messages") and f.get("failed") == "0"
                  and f.get("deliveries") is not None and f.get("deliveries") == f.get("deliveries_expected")
                  and f.get("recipients_complete") == f.get("recipients") and f.get("duplicates_shown") == "0"
                  and f.get("foreign") == "0")
            say = "ok   " if ok else "WRONG"
            print(f"{say} {system} {workload} run {run}: {f.get('acknowledged', '?')}/{f.get('messages', '?')} acknowledged, "
                  f"{f.get('failed', '?')} failed; {f.get('deliveries', '?')}/{f.get('deliveries_expected', '?')} deliveries, "
                  f"{f.get('recipients_complete', '?')}/{f.get('recipients', '?')} recipients shown each of theirs, "
                  f"{f.get('duplicates_shown', '?')} shown twice ({f.get('duplicates_dropped', '?')} duplicates dropped by the clients), "
                  f"{f.get('foreign', '?')} foreign; {f.get('login_retries', '?')} logins retried")
            if not ok:
                wrong.append(f"{system} {workload} run {run}")
    if counts_only or not runs:
        return wrong
    print()
    recipients = next((f.get("recipients") for (s, w), items in runs.items() if w == "fanout" for _, f in items), "?")
    names = dict(WORKLOADS)
    print("| workload | figure | " + " | ".join(name for _, name in SYSTEMS) + " |")
    print("| --- | --- | " + " | ".join("---:" for _ in SYSTEMS) + " |")
    for workload, key, label, digits in ROWS:
        cells = [cell([number(f.get(key)) for _, f in runs.get((system, workload), [])], digits) for system, _ in SYSTEMS]
        print(f"| {names[workload].format(recipients=recipients)} | {label} | " + " | ".join(cells) + " |")
    return wrong


def idle(directory, counts_only):
    path = os.path.join(directory, "idle.txt")
    if not os.path.exists(path):
        return []
    figures, nodes, clients, services = {}, [], [], None
    with open(path) as handle:
        for line in handle:
            parts = line.split()
            if not parts or "." not in parts[0]:
                continue
            key = parts[0].split(".", 1)[1]
            if key.startswith("node") and len(parts) > 1 and "=" in parts[1]:
                nodes.append({k: int(v) for k, v in (p.split("=") for p in parts[1:])})
            elif key == "services" and len(parts) > 1:
                services = {k: int(v) for k, v in (p.split("=") for p in parts[1:])}
            elif key == "count":
                clients.append({})
            elif clients and key != "progress" and len(parts) > 1:
                clients[-1][key] = parts[1]
            elif len(parts) > 1:
                figures[key] = parts[1]
    total = int(figures.get("total", 0))
    online = sum(int(c.get("online", 0)) for c in clients)
    heartbeating = sum(int(c.get("connections_heartbeating", 0)) for c in clients)
    at_end = sum(int(c.get("online_at_end", 0)) for c in clients)
    disconnects = sum(int(c.get("window_disconnects", 0)) for c in clients)
    ok = len(clients) == int(figures.get("nodes", -1)) and heartbeating == online and at_end == online and disconnects == 0
    print(f"{'ok   ' if ok else 'WRONG'} idle: {heartbeating}/{online} online connections heartbeated and were answered "
          f"in the window, {at_end}/{online} online at its end, {disconnects} disconnects in it")
    if online < total:
        print(f"INCOMPLETE idle: only {online:,} of {total:,} connections came online within the ready timeout "
              f"({figures.get('ramp_wall_s')} s); the window measured those")
        ok = False
    if counts_only:
        return [] if ok else ["idle"]
    ticks = int(figures.get("clock_ticks_per_s", 100))
    window = max(1, int(figures.get("window_wall_s", 1)))
    per_node = int(figures.get("per_node", 1))
    online_by_node = [int(c.get("online", 0)) for c in clients]
    rss = [(n["rss_online_kib"] - n["rss_before_kib"]) * 1024 / max(1, count) for n, count in zip(nodes, online_by_node)]
    rss_end = [(n["rss_end_kib"] - n["rss_before_kib"]) * 1024 / max(1, count) for n, count in zip(nodes, online_by_node)]
    cpu = [100 * n["cpu_window_ticks"] / ticks / window for n in nodes]
    ramp_cpu = [n["cpu_ramp_ticks"] / ticks for n in nodes]
    sent = sum(int(c.get("heartbeats_sent", 0)) for c in clients)
    answered = sum(int(c.get("heartbeats_answered", 0)) for c in clients)
    notices = sum(int(c.get("ramp_presence_notices", 0)) for c in clients)
    client_cpu = sum(int(c.get("ramp_client_cpu_ms", 0)) for c in clients) / 1000
    spread = lambda values, fmt: (fmt.format(statistics.mean(values)) + " (" + fmt.format(min(values)) + "–" + fmt.format(max(values)) + ")") if values else "—"
    print()
    print(f"| idle: {figures.get('nodes')} nodes × {per_node:,} connections, heartbeat every {clients[0].get('heartbeat_s', '?') if clients else '?'} s | value (mean over nodes, min–max) |")
    print("| --- | ---: |")
    print(f"| online / wanted | {online:,} / {total:,} |")
    print(f"| ramp: first connect → all online (wall) | {figures.get('ramp_wall_s')} s |")
    print(f"| ramp: node CPU per node | {spread(ramp_cpu, '{:.1f}')} s |")
    print(f"| ramp: client processes' CPU, all | {client_cpu:.1f} s |")
    print(f"| ramp: PRESENCE notices the clients received | {notices:,} |")
    print(f"| node RSS per connection, all online | {spread(rss, '{:,.0f}')} bytes |")
    print(f"| node RSS per connection, end of window | {spread(rss_end, '{:,.0f}')} bytes |")
    print(f"| idle node CPU in the {window} s window | {spread(cpu, '{:.2f}')} % of a core |")
    print(f"| heartbeats sent / answered in the window | {sent:,} / {answered:,} |")
    if services:
        print(f"| ramp: PostgreSQL + Redis CPU | {services['cpu_ramp_ticks'] / ticks:.1f} s |")
        print(f"| PostgreSQL + Redis RSS growth per connection, all online (backends' shared pages counted in each) | "
              f"{(services['rss_online_kib'] - services['rss_before_kib']) * 1024 / max(1, online):,.0f} bytes |")
        print(f"| idle PostgreSQL + Redis CPU in the window | {100 * services['cpu_window_ticks'] / ticks / window:.2f} % of a core |")
    return [] if ok else ["idle"]


def main():
    arguments = sys.argv[1:]
    counts_only = "--counts-only" in arguments
    directory = [a for a in arguments if not a.startswith("--")][0]
    wrong = traffic(directory, counts_only) + idle(directory, counts_only)
    if wrong:
        print("WRONG counts: " + "; ".join(wrong))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
