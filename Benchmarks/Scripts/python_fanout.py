#!/usr/bin/env python3
"""Fan-out through a chat node with clients we did not write in Swift (issue 22, "Outside clients"):
N subscribers and one publisher, each a Tests/PythonClient/imclient.py connection — the client written
from docs/PROTOCOL.md alone — against the `chat-node serve` that Scripts/fanout.sh started.

    python_fanout.py --port P --pid PID [--subscribers 50] [--messages 1000] [--timeout 120]

Each subscriber logs in (a first login makes the account), joins the room and reads in a thread of
its own (imclient is blocking and not thread-safe: one thread per connection, each alone with its
client), acknowledging every DELIVER as the protocol asks; the publisher sends M room messages, each
waiting for its SEND_ACK (a window of one: imclient's `send` is a request). A subscriber is complete
when it has shown each of the M messages once — imclient de-duplicates by (from, id) and counts what
it saw twice. Logins go one at a time: the node takes at most 4 in progress from one address.

Prints `fanout.<figure> <value>` lines, the figures Scripts/fanout_table.py reads (counts, rates, the
server's CPU), so the same check decides: all M × N delivered, all M acknowledged, or exit 1.
Loopback only; every wait is bounded by --timeout.
"""
import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Tests", "PythonClient"))
import imclient  # noqa: E402  (the path above first)
from mqtt_fanout import cpu_ns, emit  # noqa: E402  (the same figures, read and printed the same way)

ROOM = "fanout"
PASSWORD = "fanout-password"


def log_in(port, user, deadline):
    """A logged-in client, retrying a login refused for now after its retry_after_ms."""
    while True:
        client = imclient.IMClient("127.0.0.1", port, user, PASSWORD)
        client.connect()
        try:
            client.login()
            return client
        except imclient.RequestFailed as refused:
            response = refused.frame.decode(imclient.pb.LoginResponse)
            if not response.retry_after_ms or time.monotonic() >= deadline:
                raise
            time.sleep(response.retry_after_ms / 1000)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True, help="the node's process, for its CPU time")
    parser.add_argument("--subscribers", type=int, default=50)
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=120.0)
    # fanout-bench's other flags (--window), which this client has no use for.
    args, _ = parser.parse_known_args()
    n, m = args.subscribers, args.messages
    deadline = time.monotonic() + args.timeout
    emit("system", "chat-node + Python clients (imclient.py)")
    emit("subscribers", n)
    emit("messages", m)
    emit("window", 1)

    ramp_start = time.monotonic()
    subscribers = []
    for index in range(n):
        client = log_in(args.port, f"py{index}", deadline)
        client.join(ROOM)
        subscribers.append(client)
    publisher = log_in(args.port, "pypub", deadline)
    publisher.join(ROOM)
    emit("ramp_s", f"{time.monotonic() - ramp_start:.3f}")

    failures = []
    complete = [False] * n

    def read(index, client):
        try:
            client._pump(lambda: len(client.seen) >= m, max(1.0, deadline - time.monotonic()))
            complete[index] = True
        except Exception as error:  # reported in the counts: the run goes on for the others
            failures.append(f"subscriber {index}: {type(error).__name__}: {error}")

    readers = [threading.Thread(target=read, args=(i, c), daemon=True) for i, c in enumerate(subscribers)]
    cpu_before = cpu_ns(args.pid)
    client_before = time.process_time()
    start = time.monotonic()
    for reader in readers:
        reader.start()
    published = failed = 0
    payload = "x" * 64
    for index in range(m):
        try:
            publisher.send(f"{index:08d} {payload}", room=ROOM)
            published += 1
        except Exception as error:
            failed += 1
            failures.append(f"publish {index}: {type(error).__name__}: {error}")
    for reader in readers:
        reader.join(max(0.0, deadline - time.monotonic()))
    wall = time.monotonic() - start
    server_cpu = (cpu_ns(args.pid) - cpu_before) / 1e6
    client_cpu = (time.process_time() - client_before) * 1000

    # Each subscriber's messages from the publisher, each shown once (imclient keys them by (from, id)).
    own = [sum(1 for sender, _ in c.seen if sender == "pypub") for c in subscribers]
    deliveries = sum(own)
    strangers = sum(len(c.seen) for c in subscribers) - deliveries
    duplicates = sum(c.stats.duplicates for c in subscribers)
    emit("payload_bytes", len(payload) + 9)
    emit("deliveries", deliveries)
    emit("deliveries_expected", n * m)
    emit("subscribers_complete", sum(1 for i, c in enumerate(subscribers) if complete[i] and own[i] == m))
    emit("published", published)
    emit("publish_failed", failed)
    emit("unreadable", strangers)
    emit("duplicates_shown_once", duplicates)
    emit("window_s", f"{wall:.3f}")
    emit("wall_s", f"{wall:.3f}")
    emit("deliveries_per_s", f"{deliveries / wall:.0f}")
    emit("messages_per_s", f"{published / wall:.0f}")
    emit("server_cpu_ms", f"{server_cpu:.0f}")
    if deliveries:
        emit("server_cpu_per_delivery_us", f"{server_cpu * 1000 / deliveries:.2f}")
    emit("client_cpu_ms", f"{client_cpu:.0f}")
    for failure in failures[:5]:
        print(f"python_fanout: {failure}", flush=True)
    # Everyone leaves as the protocol says; a failure here is not a delivery count.
    for client in subscribers + [publisher]:
        try:
            client.logout(timeout=5.0)
        except Exception:
            client.close()
    return 0 if not failures and deliveries == n * m else 1


if __name__ == "__main__":
    sys.exit(main())
