#!/usr/bin/env python3
"""The table of Scripts/node-idle.sh --mosquitto: chat-node and mosquitto holding the same idle crowd,
side by side, with chat-node ÷ mosquitto.

    idle_table.py CHAT_NODE_FIGURES MOSQUITTO_FIGURES

Each file holds `idle.<figure> <value>` lines: count, heartbeat_s, online, connections_heartbeating,
window_disconnects, ramp_s, rss_before_kib, rss_online_kib, rss_end_kib, window_s (the server's CPU
window), server_cpu_ms (in it) and heartbeats_answered (as `cluster-bench idle` counts them: from all
online to the window's end, --settle included); the second may add window_heartbeats_answered (in the
window only). Exits 1 when a figure is missing.
"""
import sys

FIGURES = ("count", "heartbeat_s", "online", "connections_heartbeating", "window_disconnects", "ramp_s",
           "rss_before_kib", "rss_online_kib", "rss_end_kib", "window_s", "server_cpu_ms", "heartbeats_answered")


def read(path):
    figures = {}
    with open(path) as lines:
        for line in lines:
            name, _, value = line.strip().partition(" ")
            if name.startswith("idle.") and (name[5:] in FIGURES or name == "idle.window_heartbeats_answered"):
                figures.setdefault(name[5:], float(value))
    missing = [name for name in FIGURES if name not in figures]
    if missing:
        raise SystemExit(f"idle_table: {path} lacks {', '.join(missing)}")
    return figures


def derived(f):
    """RSS per connection (KiB), share of a core (%) and CPU per heartbeat (µs)."""
    per_connection = (f["rss_online_kib"] - f["rss_before_kib"]) / f["online"] if f["online"] else 0
    share = f["server_cpu_ms"] / 10 / f["window_s"]
    per_heartbeat = f["server_cpu_ms"] * 1000 / f["heartbeats_answered"] if f["heartbeats_answered"] else 0
    return per_connection, share, per_heartbeat


def ratio(a, b):
    return f"{a / b:.2f}×" if b else "n/a"


def row(label, node, broker, node_over_broker=""):
    print(f"| {label} | {node} | {broker} | {node_over_broker} |")


def counts(f):
    return f"{int(f['online']):,} / {int(f['connections_heartbeating']):,} / {int(f['window_disconnects'])}"


def rss_path(f):
    return f"{f['rss_before_kib'] / 1024:.1f} → {f['rss_online_kib'] / 1024:.1f} → {f['rss_end_kib'] / 1024:.1f} MiB"


def cpu(f, share):
    return f"{f['server_cpu_ms']:,.0f} ms in {f['window_s']:.0f} s = **{share:.2f} %**"


def main():
    node, broker = read(sys.argv[1]), read(sys.argv[2])
    (node_rss, node_share, node_beat), (broker_rss, broker_share, broker_beat) = derived(node), derived(broker)
    print(f"| {int(node['count']):,} idle connections, heartbeat / keepalive {int(node['heartbeat_s'])} s "
          "| chat-node | mosquitto | chat-node ÷ mosquitto |")
    print("| --- | ---: | ---: | ---: |")
    row("online / heartbeating in the window / disconnects", counts(node), counts(broker))
    row("logins (chat-node) / CONNECTs (mosquitto) took", f"{node['ramp_s']:.0f} s", f"{broker['ramp_s']:.0f} s")
    row("RSS before → all online → window's end", rss_path(node), rss_path(broker))
    row("**RSS per connection**", f"**{node_rss:.2f} KiB**", f"**{broker_rss:.2f} KiB**", ratio(node_rss, broker_rss))
    row("**server CPU in the window**, share of a core", cpu(node, node_share), cpu(broker, broker_share),
        ratio(node_share, broker_share))
    row("heartbeats answered, all online → window's end (settle included)", f"{int(node['heartbeats_answered']):,}",
        f"{int(broker['heartbeats_answered']):,}")
    row("**server CPU per heartbeat** (window's CPU ÷ those)", f"**{node_beat:.1f} µs**", f"**{broker_beat:.1f} µs**",
        ratio(node_beat, broker_beat))
    in_window = broker.get("window_heartbeats_answered")
    if in_window:
        row("heartbeats answered in the window only / window's CPU ÷ those", "not counted",
            f"{int(in_window):,} / {broker['server_cpu_ms'] * 1000 / in_window:.1f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
