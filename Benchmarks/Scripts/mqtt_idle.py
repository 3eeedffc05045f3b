#!/usr/bin/env python3
"""The MQTT side of the idle-connection benchmark (issue 22, "Memory" and "Idle CPU"): what
`cluster-bench idle` does to chat-node, done to a mosquitto broker that Scripts/node-idle.sh --mosquitto
started on 127.0.0.1.

    mqtt_idle.py --port P --pid PID [--count 19000] [--keepalive 30] [--settle 10] [--seconds 60]
                 [--ready-timeout 900] [--extra-seconds 0]

N MQTT 3.1.1 clients on plain sockets, all in this one process on one epoll loop. Each sends CONNECT
(clean session, keepalive K s) and waits for CONNACK, at most 64 waiting at a time: mosquitto listens
with a backlog of 100, and a SYN the full backlog drops is sent again only a second later. Once online,
each sends a PINGREQ every K s, the N clients' pings spread evenly over the period (client i at
i·K/N + m·K from the start), and counts its PINGRESPs — the steady heartbeat load of N idle clients,
as `cluster-bench idle` makes it for chat-node.

The broker is measured from /proc, as node-idle.sh measures the node: its RSS before the first
CONNECT, with all online (--settle s after the last CONNACK) and at the end of a --seconds window; its
CPU over that window. Pings are counted as `cluster-bench idle` counts heartbeats, from the moment all
are online to the window's end (the settle included: heartbeats_sent, heartbeats_answered,
connections_heartbeating, window_disconnects), so the two servers' CPU per heartbeat divide alike; and
over the window alone (window_heartbeats_answered), which the window's CPU divides exactly. The
broker's user CPU and wake-ups (voluntary context switches of its threads) over the window too. With
--extra-seconds E the crowd stays E s after the window's figures are printed, pinging as before, so
node-idle.sh can count the broker's system calls meanwhile.

Prints `idle.<figure> <value>` lines, with the names `cluster-bench idle` uses where the figure is
the same, then the broker's own (rss_*_kib, server_cpu_ms). Exits 0 when all were online and every
client pinged and was answered without a disconnect. Every wait is bounded.
"""
import argparse
import os
import select
import socket
import sys
import time

from mqtt_fanout import cpu_ns, mqtt_packet, mqtt_string, own_cpu_ns, rss_bytes

CONNECTS_IN_FLIGHT = 64
PINGREQ = b"\xc0\x00"
CONNACK, PINGRESP = 2, 13


def user_ns(pid):
    """User CPU of process `pid` (all threads), ns, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def wakeups(pid):
    """Voluntary context switches of each of `pid`'s threads ({tid: count}): for an idle event loop, its
    blocking sleeps."""
    counts = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/status") as status:
                counts[task] = sum(int(line.split()[1]) for line in status
                                   if line.startswith("voluntary_ctxt_switches:"))
        except FileNotFoundError:
            pass
    return counts


def wakeups_between(before, after):
    """The wake-ups of the threads in both lists (one that came or went meanwhile is left out)."""
    return sum(count - before[task] for task, count in after.items() if task in before)


def emit(figure, value):
    print(f"idle.{figure} {value}", flush=True)


class Crowd:
    """N clients, their sockets and counts; `pump` runs the loop: connect, ping on schedule, read."""

    def __init__(self, args):
        self.args = args
        n = args.count
        self.poller = select.epoll()
        self.sockets = [None] * n
        self.index = {}  # fd → client
        self.pending = {}  # fd → bytes read but not yet a whole packet
        self.online = [False] * n
        self.sent = [0] * n
        self.answered = [0] * n
        self.online_count = 0
        self.awaiting = 0
        self.next_client = 0
        self.pings_scheduled = 0
        self.disconnects = 0
        self.failures = []
        self.start = time.monotonic()

    def connect(self, client):
        keepalive = self.args.keepalive
        body = mqtt_string("MQTT") + bytes([4, 2, keepalive >> 8, keepalive & 0xFF]) + mqtt_string(f"idle{client}")
        sock = socket.create_connection(("127.0.0.1", self.args.port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(mqtt_packet(0x10, body))
        sock.setblocking(False)
        self.sockets[client] = sock
        self.index[sock.fileno()] = client
        self.pending[sock.fileno()] = b""
        self.poller.register(sock.fileno(), select.EPOLLIN)
        self.awaiting += 1

    def drop(self, fd, why):
        client = self.index.pop(fd)
        self.poller.unregister(fd)
        self.sockets[client].close()
        self.sockets[client] = None
        if self.online[client]:
            self.online[client] = False
            self.online_count -= 1
        else:
            self.awaiting -= 1
        self.disconnects += 1
        if len(self.failures) < 5:
            self.failures.append(f"client {client}: {why}")

    def read(self, fd):
        try:
            data = self.sockets[self.index[fd]].recv(4096)
        except BlockingIOError:
            return
        except OSError as error:
            self.drop(fd, error)
            return
        if not data:
            self.drop(fd, "closed by the broker")
            return
        client, buffer = self.index[fd], self.pending[fd] + data
        # CONNACK and PINGRESP are all the broker sends here, each under 128 bytes: a one-byte length.
        while len(buffer) >= 2 and len(buffer) >= 2 + buffer[1]:
            kind, body, buffer = buffer[0] >> 4, buffer[2:2 + buffer[1]], buffer[2 + buffer[1]:]
            if kind == CONNACK and body[1:2] == b"\x00" and not self.online[client]:
                self.online[client] = True
                self.online_count += 1
                self.awaiting -= 1
            elif kind == PINGRESP:
                self.answered[client] += 1
            else:
                self.drop(fd, f"unexpected packet type {kind} ({body.hex()})")
                return
        self.pending[fd] = buffer

    def ping_due(self, now):
        """Sends every ping whose time has come: the m-th ping of the whole crowd goes to client m mod
        N at start + m·K/N (a client not yet online skips its turn)."""
        n, k = self.args.count, self.args.keepalive
        due = int((now - self.start) * n / k)
        while self.pings_scheduled < due:
            client = self.pings_scheduled % n
            self.pings_scheduled += 1
            if self.online[client]:
                try:
                    self.sockets[client].send(PINGREQ)
                    self.sent[client] += 1
                except OSError as error:
                    self.drop(self.sockets[client].fileno(), error)
        return self.start + (self.pings_scheduled + 1) * k / n

    def pump(self, until, done=lambda: False):
        """Runs the loop until the monotonic time `until` or until `done()`."""
        while not done():
            now = time.monotonic()
            if now >= until:
                return
            while self.next_client < self.args.count and self.awaiting < CONNECTS_IN_FLIGHT:
                try:
                    self.connect(self.next_client)
                except OSError as error:
                    self.disconnects += 1
                    self.failures.append(f"client {self.next_client}: connect: {error}")
                    return
                self.next_client += 1
            next_ping = self.ping_due(now)
            for fd, _ in self.poller.poll(max(0.0, min(until, next_ping) - time.monotonic())):
                if fd in self.index:
                    self.read(fd)


def run(args):
    crowd = Crowd(args)
    pid = args.pid
    rss_before = rss_bytes(pid)
    crowd.pump(crowd.start + args.ready_timeout, lambda: crowd.online_count == args.count)
    emit("count", args.count)
    emit("online", crowd.online_count)
    emit("ramp_s", f"{time.monotonic() - crowd.start:.1f}")
    if crowd.online_count < args.count:
        for failure in crowd.failures:
            print(f"mqtt_idle: {failure}")
        return 1
    sent_before, answered_before, disconnects_before = list(crowd.sent), list(crowd.answered), crowd.disconnects
    crowd.pump(time.monotonic() + args.settle)
    rss_online = rss_bytes(pid)
    window_answered_before = sum(crowd.answered)
    server_cpu_before, client_cpu_before = cpu_ns(pid), own_cpu_ns()
    server_user_before, wakeups_before = user_ns(pid), wakeups(pid)
    window_start = time.monotonic()
    crowd.pump(window_start + args.seconds)
    window = time.monotonic() - window_start
    server_cpu = cpu_ns(pid) - server_cpu_before
    server_user = user_ns(pid) - server_user_before
    server_wakeups = wakeups_between(wakeups_before, wakeups(pid))
    client_cpu = own_cpu_ns() - client_cpu_before
    rss_end = rss_bytes(pid)
    sent = [now - before for now, before in zip(crowd.sent, sent_before)]
    answered = [now - before for now, before in zip(crowd.answered, answered_before)]
    heartbeating = sum(1 for s, a in zip(sent, answered) if s > 0 and a > 0)
    disconnects = crowd.disconnects - disconnects_before
    emit("window_s", f"{window:.1f}")
    emit("heartbeat_s", args.keepalive)
    emit("heartbeats_sent", sum(sent))
    emit("heartbeats_answered", sum(answered))
    emit("window_heartbeats_answered", sum(crowd.answered) - window_answered_before)
    emit("connections_heartbeating", heartbeating)
    emit("online_at_end", crowd.online_count)
    emit("window_disconnects", disconnects)
    emit("window_client_cpu_ms", client_cpu // 1_000_000)
    emit("rss_before_kib", rss_before // 1024)
    emit("rss_online_kib", rss_online // 1024)
    emit("rss_end_kib", rss_end // 1024)
    emit("server_user_ms", server_user // 1_000_000)
    emit("server_wakeups", server_wakeups)
    emit("server_cpu_ms", server_cpu // 1_000_000)
    crowd.pump(time.monotonic() + args.extra_seconds)
    for failure in crowd.failures:
        print(f"mqtt_idle: {failure}")
    return 0 if heartbeating == args.count and crowd.online_count == args.count and disconnects == 0 else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True, help="the broker's, for /proc")
    parser.add_argument("--count", type=int, default=19000)
    parser.add_argument("--keepalive", type=int, default=30)
    parser.add_argument("--settle", type=float, default=10)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--ready-timeout", type=float, default=900)
    parser.add_argument("--extra-seconds", type=float, default=0, help="the crowd stays after the window")
    return run(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
