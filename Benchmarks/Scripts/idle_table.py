#!/usr/bin/env python3
"""The table of Scripts/node-idle.sh --floor / --mosquitto: servers holding the same idle crowd, side by
side, each divided by the base (the floor when there is one, else the last server).

    idle_table.py NAME=FIGURES [NAME=FIGURES ...]      e.g. chat-node=a.txt floor=b.txt mosquitto=c.txt

Each file holds `idle.<figure> <value>` lines: count, heartbeat_s, online, connections_heartbeating,
window_disconnects, ramp_s, rss_before_kib, rss_online_kib, rss_end_kib, window_s (the server's CPU
window), server_cpu_ms (in it); optionally server_user_ms and server_wakeups (over the window),
window_heartbeats_answered (counted in the window), and the syscall_window_s / syscalls_* counts of the
seconds after it (Scripts/idle-crowd.sh's count_syscalls). Per heartbeat divides by the heartbeats the
clients' schedule puts in the window, count × window ÷ heartbeat (each client heartbeats every
heartbeat_s seconds from its login, so the crowd's rate is steady): the same divisor for every server.
Exits 1 when a figure is missing.
"""
import sys

FIGURES = ("count", "heartbeat_s", "online", "connections_heartbeating", "window_disconnects", "ramp_s",
           "rss_before_kib", "rss_online_kib", "rss_end_kib", "window_s", "server_cpu_ms")
SYSCALLS = (("all", "all"), ("epoll_wait", "epoll_wait"), ("read", "recvfrom / read"),
            ("write", "sendto / write"), ("timer", "timerfd_settime"), ("ioctl", "ioctl"))


def read(path):
    figures = {}
    with open(path) as lines:
        for line in lines:
            name, _, value = line.strip().partition(" ")
            if name.startswith("idle."):
                try:
                    figures.setdefault(name[5:], float(value))
                except ValueError:
                    pass
    missing = [name for name in FIGURES if name not in figures]
    if missing:
        raise SystemExit(f"idle_table: {path} lacks {', '.join(missing)}")
    return figures


def rate(f):
    """Heartbeats a second the crowd sends."""
    return f["online"] / f["heartbeat_s"]


def window_heartbeats(f):
    return rate(f) * f["window_s"]


def per_heartbeat_us(f, ms):
    beats = window_heartbeats(f)
    return ms * 1000 / beats if beats else 0


def ratio(a, b):
    """a ÷ b; n/a when b is too small to divide by (the floor holds a connection in next to no RSS)."""
    return f"{a / b:.2f}×" if abs(b) > 1e-6 and abs(a / b) < 100 else "n/a"


class Table:
    def __init__(self, servers, base):
        self.servers, self.base = servers, base
        self.others = [name for name in servers if name != base]

    def header(self, title):
        names = list(self.servers)
        ratios = [f"{name} ÷ {self.base}" for name in self.others]
        print(f"| {title} | " + " | ".join(names + ratios) + " |")
        print("| --- |" + " ---: |" * (len(names) + len(ratios)))

    def row(self, label, cell, value=None):
        """One row: `cell(f)` is each server's text; `value(f)`, when given, its number for the ratios."""
        cells = [cell(f) for f in self.servers.values()]
        ratios = [ratio(value(self.servers[name]), value(self.servers[self.base])) if value else ""
                  for name in self.others]
        print(f"| {label} | " + " | ".join(cells + ratios) + " |")


def main():
    servers = {}
    for argument in sys.argv[1:]:
        name, _, path = argument.partition("=")
        servers[name] = read(path)
    if len(servers) < 2:
        raise SystemExit("usage: idle_table.py NAME=FIGURES NAME=FIGURES [...]")
    base = "floor" if "floor" in servers else list(servers)[-1]
    table = Table(servers, base)
    first = next(iter(servers.values()))
    table.header(f"{int(first['count']):,} idle connections, heartbeat / keepalive {int(first['heartbeat_s'])} s")

    def rss_per_connection(f):
        return (f["rss_online_kib"] - f["rss_before_kib"]) / f["online"] if f["online"] else 0

    def share(f):
        return f["server_cpu_ms"] / 10 / f["window_s"]

    def user(f):
        return f.get("server_user_ms", 0)

    def system(f):
        return f["server_cpu_ms"] - user(f)

    table.row("online / heartbeating in the window / disconnects", lambda f:
              f"{int(f['online']):,} / {int(f['connections_heartbeating']):,} / {int(f['window_disconnects'])}")
    table.row("logins (CONNECTs) took", lambda f: f"{f['ramp_s']:.0f} s")
    table.row("RSS before → all online → window's end", lambda f:
              f"{f['rss_before_kib'] / 1024:.1f} → {f['rss_online_kib'] / 1024:.1f} → {f['rss_end_kib'] / 1024:.1f} MiB")
    table.row("**RSS per connection**", lambda f: f"**{rss_per_connection(f):.2f} KiB**", rss_per_connection)
    table.row("**server CPU in the window**, share of a core", lambda f:
              f"{f['server_cpu_ms']:,.0f} ms in {f['window_s']:.0f} s = **{share(f):.2f} %**", share)
    table.row("of it user / system", lambda f: f"{user(f):,.0f} / {system(f):,.0f} ms")
    table.row("heartbeats in the window (count × window ÷ heartbeat) / counted by the clients", lambda f:
              f"{window_heartbeats(f):,.0f} / " + (f"{int(f['window_heartbeats_answered']):,}"
                                                   if "window_heartbeats_answered" in f else "—"))
    table.row("**server CPU per heartbeat**", lambda f: f"**{per_heartbeat_us(f, f['server_cpu_ms']):.1f} µs**",
              lambda f: per_heartbeat_us(f, f["server_cpu_ms"]))
    table.row("user per heartbeat", lambda f: f"{per_heartbeat_us(f, user(f)):.1f} µs",
              lambda f: per_heartbeat_us(f, user(f)))
    table.row("system per heartbeat", lambda f: f"{per_heartbeat_us(f, system(f)):.1f} µs",
              lambda f: per_heartbeat_us(f, system(f)))
    if all("server_wakeups" in f for f in servers.values()):
        table.row("wake-ups per heartbeat (voluntary context switches ÷ heartbeats)", lambda f:
                  f"{f['server_wakeups'] / window_heartbeats(f):.2f}", lambda f: f["server_wakeups"] / window_heartbeats(f))
    if all("syscall_window_s" in f for f in servers.values()):
        def calls(key):
            named = [name for name, _ in SYSCALLS[1:]]
            if key == "other":
                return lambda f: (f["syscalls_all"] - sum(f[f"syscalls_{name}"] for name in named)) / (
                    rate(f) * f["syscall_window_s"])
            return lambda f: f[f"syscalls_{key}"] / (rate(f) * f["syscall_window_s"])

        seconds = int(first["syscall_window_s"])
        for key, label in SYSCALLS + (("other", "any other"),):
            per = calls(key)
            table.row(f"system calls per heartbeat ({seconds} s after the window, perf): {label}",
                      lambda f, per=per: f"{per(f):.2f}", per if key in ("all", "epoll_wait") else None)
    if base == "floor":
        print()
        for name in table.others:
            print(f"**{name} ÷ floor, server CPU per heartbeat: "
                  + ratio(per_heartbeat_us(servers[name], servers[name]["server_cpu_ms"]),
                          per_heartbeat_us(servers[base], servers[base]["server_cpu_ms"])) + "**")
    return 0


if __name__ == "__main__":
    sys.exit(main())
