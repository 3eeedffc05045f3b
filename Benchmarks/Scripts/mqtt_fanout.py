#!/usr/bin/env python3
"""The MQTT side of the fan-out benchmark (issue 10): the workload of `fanout-bench` on a mosquitto
broker that Scripts/fanout.sh started on 127.0.0.1.

    mqtt_fanout.py --port P --pid PID [--subscribers 50] [--messages 5000] [--window 100]
                   [--payload 64] [--timeout 90] [--clients paho|c|raw] [--processes K] [--log FILE]

--clients paho (default): N paho-mqtt 2.2.0 subscribers (MQTT 3.1.1, clean session) on one topic at
QoS 1, driven by one select loop in this process, and one QoS 1 publisher in a second process (this
script again, role `publisher`) that publishes M messages with at most W waiting for PUBACK. Each
payload starts with the send time (CLOCK_MONOTONIC ns, 20 digits, as `fanout-bench` writes it), so a
subscriber's receive time minus it is the delivery latency. The broker sends each subscriber its copy
at QoS 1 and the subscriber answers PUBACK: the same acknowledged fan-out as the chat node's DELIVER
and DELIVER_ACK.

--clients c: the same fan-out with Debian's C clients, N `mosquitto_sub -q 1 -C M` processes and one
`mosquitto_pub -q 1 -M W -l` (M lines of one fixed payload): throughput, server CPU and RSS only, since
those clients cannot time each message. It needs the broker's log (`log_type subscribe`) to see that
every subscriber is in before publishing.

--clients raw: rooms of thousands (issue 22), where N processes or paho's pace would be the limit:
the subscribers speak MQTT 3.1.1 on plain sockets (CONNECT, SUBSCRIBE at QoS 1, PUBACK per PUBLISH),
N / K to each of K worker processes (`--processes K`, this script again, role `worker`), each on one
epoll loop that answers everything one read brought with one write; the publisher is `mosquitto_pub`
as with `--clients c`. Throughput, server CPU and RSS; no latency.

Prints `fanout.<figure> <value>` lines, the same figures as `fanout-bench`, for Scripts/fanout_table.py.
Loopback only; every wait is bounded, and it kills the client processes it started.
"""
import argparse
import os
import resource
import selectors
import socket
import subprocess
import sys
import tempfile
import time

TOPIC = "bench/fanout"
DIGITS = 20


def emit(figure, value):
    print(f"fanout.{figure} {value}", flush=True)


def rss_bytes(pid):
    """VmRSS of process `pid`, in bytes (/proc/PID/status)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def cpu_ns(pid):
    """User + system CPU of process `pid` (all threads), ns, from /proc/PID/stat (clock ticks)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def runqueue_wait_ns(pid):
    """Time the main thread of `pid` spent runnable but waiting for a CPU (/proc/PID/schedstat)."""
    with open(f"/proc/{pid}/schedstat") as stat:
        return int(stat.read().split()[1])


def own_cpu_ns(who=resource.RUSAGE_SELF):
    usage = resource.getrusage(who)
    return int((usage.ru_utime + usage.ru_stime) * 1e9)


def payload(sent_at, size):
    return (str(sent_at).zfill(DIGITS) + "x" * max(0, size - DIGITS)).encode()


def percentile(sorted_values, p):
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, len(sorted_values) * p // 100)] / 1e3


def new_client(client_id, mqtt):
    return mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id,
                       protocol=mqtt.MQTTv311, clean_session=True)


def connect(client, port):
    """Connects, with TCP_NODELAY as RunLoopNet sets it on every connection (paho leaves Nagle on;
    a PUBACK held back by Nagle waits for the peer's delayed ACK, up to 40 ms here)."""
    client.connect("127.0.0.1", port, keepalive=60)
    client.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def drain(client, mqtt):
    """Reads every packet the socket holds. paho's loop_read() reads one packet per call when nothing
    of its own is in flight (a QoS 1 subscriber), which would cost one select() per message; its
    per-packet reader is called until the socket is empty instead. Returns False if the connection
    failed."""
    while True:
        rc = client._packet_read()
        if rc == mqtt.MQTT_ERR_AGAIN:
            return True
        if rc != mqtt.MQTT_ERR_SUCCESS:
            client._loop_rc_handle(rc)
            return False


def run_publisher(args):
    """Role `publisher`, in its own process: connect, say `ready`, wait for `go` on stdin, publish."""
    import paho.mqtt.client as mqtt

    client = new_client("publisher", mqtt)
    # Its own window bounds what is in flight; paho must not hold messages back below that.
    client.max_inflight_messages_set(args.window)
    state = {"connected": False, "acked": 0, "failed": 0, "last_ack": 0}

    def on_connect(_client, _userdata, _flags, reason, _properties):
        state["connected"] = not reason.is_failure

    def on_publish(_client, _userdata, _mid, reason, _properties):
        state["acked"] += 1
        state["last_ack"] = time.monotonic_ns()

    client.on_connect = on_connect
    client.on_publish = on_publish
    connect(client, args.port)
    selector = selectors.DefaultSelector()
    selector.register(client.socket(), selectors.EVENT_READ)
    deadline = time.monotonic() + args.ready_timeout
    while not state["connected"] and time.monotonic() < deadline:
        if selector.select(0.05) and not drain(client, mqtt):
            break
    print("ready" if state["connected"] else "failed", flush=True)
    if not state["connected"] or sys.stdin.readline().strip() != "go":
        return 1

    cpu_start = own_cpu_ns()
    first_send = time.monotonic_ns()
    sent = 0
    deadline = time.monotonic() + args.timeout
    last_misc = time.monotonic()
    while state["acked"] < args.messages and time.monotonic() < deadline:
        while sent < args.messages and sent - state["acked"] < args.window:
            info = client.publish(TOPIC, payload(time.monotonic_ns(), args.payload), qos=1)
            if info.rc != mqtt.MQTT_ERR_SUCCESS:
                state["failed"] += 1
            sent += 1
        if client.want_write():
            client.loop_write()
        if selector.select(0.1) and not drain(client, mqtt):
            break
        if time.monotonic() - last_misc > 1:
            client.loop_misc()
            last_misc = time.monotonic()
    cpu = own_cpu_ns() - cpu_start
    print(f"publisher {first_send} {state['acked']} {state['failed']} {state['last_ack']} {cpu}", flush=True)
    return 0


def run_paho(args):
    import paho.mqtt.client as mqtt

    rss_idle = rss_bytes(args.pid)
    ramp_start = time.monotonic_ns()
    n = args.subscribers
    expected = n * args.messages
    latencies = []
    received = [0] * n
    state = {"subscribed": 0, "last": 0, "unreadable": 0, "failures": []}
    selector = selectors.DefaultSelector()
    clients = []

    def make_subscriber(index):
        client = new_client(f"sub{index}", mqtt)

        def on_connect(client, _userdata, _flags, reason, _properties):
            if reason.is_failure:
                state["failures"].append(f"sub{index} connect: {reason}")
            else:
                client.subscribe(TOPIC, qos=1)

        def on_subscribe(_client, _userdata, _mid, reasons, _properties):
            if reasons and not reasons[0].is_failure:
                state["subscribed"] += 1
            else:
                state["failures"].append(f"sub{index} subscribe refused")

        def on_message(_client, _userdata, message):
            now = time.monotonic_ns()
            try:
                sent_at = int(message.payload[:DIGITS])
            except ValueError:
                state["unreadable"] += 1
                return
            latencies.append(now - sent_at)
            received[index] += 1
            state["last"] = now

        client.on_connect = on_connect
        client.on_subscribe = on_subscribe
        client.on_message = on_message
        connect(client, args.port)
        selector.register(client.socket(), selectors.EVENT_READ, client)
        return client

    def pump(timeout):
        for key, _ in selector.select(timeout):
            client = key.data
            if not drain(client, mqtt):
                state["failures"].append(f"{client._client_id.decode()} connection lost")
                selector.unregister(key.fileobj)
                continue
            if client.want_write():  # the PUBACKs queued while reading
                client.loop_write()

    # The publisher first, alone (as fanout-bench does): the subscribers' RSS is then the marginal
    # cost of a connected client.
    publisher = subprocess.Popen([sys.executable, __file__, "publisher", *sys.argv[1:]],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        ready = publisher.stdout.readline().strip()
        time.sleep(0.3)
        rss_one = rss_bytes(args.pid)
        for index in range(n):
            clients.append(make_subscriber(index))
        deadline = time.monotonic() + args.ready_timeout
        while state["subscribed"] < n and not state["failures"] and time.monotonic() < deadline:
            pump(0.05)
        if state["subscribed"] < n or ready != "ready":
            print(f"mqtt_fanout: not ready: {state['subscribed']} of {n} subscribed, publisher {ready or 'silent'}")
            for failure in state["failures"][:10]:
                print(f"  {failure}")
            return 1
        ramp = (time.monotonic_ns() - ramp_start) / 1e9
        settle = time.monotonic() + 0.5
        while time.monotonic() < settle:
            pump(0.05)
        rss_online = rss_bytes(args.pid)

        window_start = time.monotonic_ns()
        server_cpu_start = cpu_ns(args.pid)
        server_wait_start = runqueue_wait_ns(args.pid)
        own_cpu_start = own_cpu_ns()
        publisher.stdin.write("go\n")
        publisher.stdin.flush()
        deadline = time.monotonic() + args.timeout
        last_misc = time.monotonic()
        while len(latencies) < expected and time.monotonic() < deadline:
            pump(0.1)
            if time.monotonic() - last_misc > 1:
                for client in clients:
                    client.loop_misc()
                last_misc = time.monotonic()
        window_end = time.monotonic_ns()
        server_cpu = cpu_ns(args.pid) - server_cpu_start
        server_wait = runqueue_wait_ns(args.pid) - server_wait_start
        own_cpu = own_cpu_ns() - own_cpu_start
        rss_after = rss_bytes(args.pid)
        report = ""
        try:
            report, _ = publisher.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        fields = next((line.split() for line in report.splitlines() if line.startswith("publisher ")), None)
        first_send, acked, failed, _last_ack, publisher_cpu = (int(f) for f in fields[1:]) if fields else (window_start, 0, 0, 0, 0)
    finally:
        if publisher.poll() is None:
            publisher.kill()
            publisher.wait()

    last = state["last"] if state["last"] > first_send else window_end
    wall = (last - first_send) / 1e9
    latencies.sort()
    emit("system", "mosquitto + paho-mqtt")
    emit("subscribers", n)
    emit("messages", args.messages)
    emit("window", args.window)
    emit("payload_bytes", args.payload)
    emit("ramp_s", ramp)
    emit("published", acked)
    emit("publish_failed", failed)
    emit("deliveries_expected", expected)
    emit("deliveries", len(latencies))
    emit("subscribers_complete", sum(1 for count in received if count == args.messages))
    emit("unreadable", state["unreadable"])
    emit("wall_s", wall)
    emit("deliveries_per_s", len(latencies) / max(wall, 1e-9))
    emit("messages_per_s", acked / max(wall, 1e-9))
    emit("latency_p50_us", percentile(latencies, 50))
    emit("latency_p99_us", percentile(latencies, 99))
    emit("latency_max_us", latencies[-1] / 1e3 if latencies else 0)
    emit("rss_idle_kib", rss_idle // 1024)
    emit("rss_online_kib", rss_online // 1024)
    emit("rss_per_client_kib", (rss_online - rss_idle) / 1024 / (n + 1))
    emit("rss_one_client_kib", rss_one // 1024)
    emit("rss_per_subscriber_kib", (rss_online - rss_one) / 1024 / n)
    emit("rss_after_kib", rss_after // 1024)
    emit("window_s", (window_end - window_start) / 1e9)
    emit("server_cpu_ms", server_cpu / 1e6)
    emit("server_cpu_per_delivery_us", server_cpu / 1e3 / max(1, len(latencies)))
    emit("server_runqueue_wait_ms", server_wait / 1e6)
    emit("client_cpu_ms", (own_cpu + publisher_cpu) / 1e6)
    emit("client_threads", 2)
    for failure in state["failures"][:10]:
        print(f"mqtt_fanout: {failure}")
    complete = len(latencies) == expected and acked == args.messages
    if not complete:
        print(f"mqtt_fanout: incomplete: {len(latencies)} of {expected} deliveries, {acked} of {args.messages} acknowledged")
    return 0 if complete else 1


def count_subscribed(log_path):
    """Subscriptions of the C subscribers (ids csubN) the broker has logged (`log_type subscribe`)."""
    try:
        with open(log_path, errors="replace") as log:
            return sum(1 for line in log if " csub" in line and line.rstrip().endswith(TOPIC))
    except FileNotFoundError:
        return 0


def run_c_clients(args):
    if not args.log:
        print("mqtt_fanout: --clients c needs --log (the broker's log file)")
        return 2
    rss_idle = rss_bytes(args.pid)
    ramp_start = time.monotonic_ns()
    n = args.subscribers
    host = c_client_host(args)
    children_cpu_start = own_cpu_ns(resource.RUSAGE_CHILDREN)
    subscribers = [subprocess.Popen(["mosquitto_sub", *host, "-t", TOPIC, "-q", "1", "-C", str(args.messages),
                                     "-i", f"csub{i}"], stdout=subprocess.DEVNULL)
                   for i in range(n)]
    publisher = None
    try:
        deadline = time.monotonic() + args.ready_timeout
        while count_subscribed(args.log) < n and time.monotonic() < deadline:
            time.sleep(0.02)
        if count_subscribed(args.log) < n:
            print(f"mqtt_fanout: not ready: {count_subscribed(args.log)} of {n} C subscribers subscribed")
            return 1
        ramp = (time.monotonic_ns() - ramp_start) / 1e9
        rss_online, window_start, marks, publisher = open_window(args)
        deadline = time.monotonic() + args.timeout
        finished = 0
        last = window_start
        pending = list(subscribers)
        while pending and time.monotonic() < deadline:
            still = []
            for sub in pending:
                if sub.poll() is None:
                    still.append(sub)
                else:
                    last = time.monotonic_ns()
                    finished += sub.returncode == 0
            pending = still
            time.sleep(0.001)
        window_end = time.monotonic_ns()
        server_cpu, server_wait, rss_after = window_close(args, marks, publisher)
    finally:
        stop_all(subscribers + ([publisher] if publisher else []))
    # The C clients' CPU: every child that exited (subscribers and publisher), set-up included.
    clients_cpu = own_cpu_ns(resource.RUSAGE_CHILDREN) - children_cpu_start
    emit_throughput("mosquitto + C clients", args, finished * args.messages, finished, publisher.returncode == 0,
                    ramp=ramp, wall=(last - window_start) / 1e9, window=(window_end - window_start) / 1e9,
                    rss=(rss_idle, rss_online, rss_after), server=(server_cpu, server_wait), clients_cpu=clients_cpu,
                    client_threads=n + 1)
    return 0 if finished == n and publisher.returncode == 0 else 1


def open_window(args):
    """Once every subscriber is in: settles, reads the server's RSS, opens the measured window and
    starts the C publisher. Returns (RSS online, window start, the server's CPU and wait marks, publisher)."""
    time.sleep(0.5)
    rss_online = rss_bytes(args.pid)
    lines = payload_lines(args)
    window_start = time.monotonic_ns()
    marks = (cpu_ns(args.pid), runqueue_wait_ns(args.pid))
    return rss_online, window_start, marks, start_c_publisher(args, lines)


def window_close(args, marks, publisher):
    """The server's CPU and run-queue wait since the window opened and its RSS now; then waits (a
    while) for the C publisher to exit."""
    figures = (cpu_ns(args.pid) - marks[0], runqueue_wait_ns(args.pid) - marks[1], rss_bytes(args.pid))
    try:
        publisher.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    return figures


def stop_all(processes):
    """Kills the client processes still running and reaps them all."""
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.wait()


def c_client_host(args):
    return ["-h", "127.0.0.1", "-p", str(args.port)]


def payload_lines(args):
    """The M payloads, one a line, in a file: written before the window, read by mosquitto_pub at its pace."""
    lines = tempfile.TemporaryFile()
    lines.write((payload(0, args.payload) + b"\n") * args.messages)
    lines.seek(0)
    return lines


def start_c_publisher(args, lines):
    # `-l` publishes a message per line of its input as soon as it is read, with at most -M
    # unacknowledged; `--repeat` would wait for each PUBACK before the next publish (a window of 1).
    return subprocess.Popen(["mosquitto_pub", *c_client_host(args), "-t", TOPIC, "-q", "1", "-M", str(args.window),
                             "-i", "cpub", "-l"], stdin=lines, stdout=subprocess.DEVNULL)


def emit_throughput(system, args, deliveries, finished, published, *, ramp, wall, window, rss, server, clients_cpu,
                    client_threads):
    """The figures of a run whose clients cannot time single messages (C or raw subscribers)."""
    n = args.subscribers
    rss_idle, rss_online, rss_after = rss
    server_cpu, server_wait = server
    emit("system", system)
    emit("subscribers", n)
    emit("messages", args.messages)
    emit("window", args.window)
    emit("payload_bytes", args.payload)
    emit("ramp_s", ramp)
    emit("published", args.messages if published else 0)
    emit("deliveries_expected", n * args.messages)
    emit("deliveries", deliveries)
    emit("subscribers_complete", finished)
    emit("wall_s", wall)
    emit("deliveries_per_s", deliveries / max(wall, 1e-9))
    emit("messages_per_s", (args.messages if finished else 0) / max(wall, 1e-9))
    emit("rss_idle_kib", rss_idle // 1024)
    emit("rss_online_kib", rss_online // 1024)
    # The publisher is only connected while it publishes: N clients online here, not N + 1.
    emit("rss_per_client_kib", (rss_online - rss_idle) / 1024 / n)
    emit("rss_after_kib", rss_after // 1024)
    emit("window_s", window)
    emit("server_cpu_ms", server_cpu / 1e6)
    emit("server_cpu_per_delivery_us", server_cpu / 1e3 / max(1, deliveries))
    emit("server_runqueue_wait_ms", server_wait / 1e6)
    emit("client_cpu_ms", clients_cpu / 1e6)
    emit("client_threads", client_threads)


def mqtt_packet(kind, body):
    """An MQTT packet: its first byte, the remaining length (variable-length integer), the body."""
    length, encoded = len(body), bytearray()
    while True:
        digit, length = length % 128, length // 128
        encoded.append(digit | (0x80 if length else 0))
        if not length:
            return bytes([kind]) + bytes(encoded) + body


def mqtt_string(text):
    data = text.encode()
    return len(data).to_bytes(2, "big") + data


def run_worker(args):
    """Role `worker`: subscribers first .. first + count - 1 on raw sockets; says `ready` once every
    SUBACK came, then counts PUBLISHes (answering each with PUBACK) until each subscriber has M or the
    timeout; prints `done <deliveries> <complete> <last receive ns> <cpu ns>`."""
    import select

    poller = select.epoll()
    sockets, received, pending = {}, {}, {}
    subscribed = 0
    connect_body = mqtt_string("MQTT") + bytes([4, 2, 0, 60])  # 3.1.1, clean session, keepalive 60 s
    subscribe = mqtt_packet(0x82, (1).to_bytes(2, "big") + mqtt_string(TOPIC) + bytes([1]))
    for index in range(args.first, args.first + args.count):
        sock = socket.create_connection(("127.0.0.1", args.port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(mqtt_packet(0x10, connect_body + mqtt_string(f"rsub{index}")) + subscribe)
        sock.setblocking(False)
        sockets[sock.fileno()] = sock
        received[sock.fileno()], pending[sock.fileno()] = 0, b""
        poller.register(sock.fileno(), select.EPOLLIN)
    deadline = time.monotonic() + args.ready_timeout
    expected, deliveries, last, cpu_start = args.count * args.messages, 0, 0, 0
    while time.monotonic() < deadline and (subscribed < args.count or deliveries < expected):
        for fd, _ in poller.poll(0.1):
            try:
                data = sockets[fd].recv(262144)
            except BlockingIOError:
                continue
            if not data:
                poller.unregister(fd)
                continue
            buffer, position, answers = pending[fd] + data, 0, []
            while True:
                # Fixed header: type byte, then up to four length bytes.
                length, multiplier, cursor = 0, 1, position + 1
                while cursor < len(buffer):
                    length += (buffer[cursor] & 0x7F) * multiplier
                    multiplier *= 128
                    cursor += 1
                    if not buffer[cursor - 1] & 0x80:
                        break
                else:
                    break
                if cursor + length > len(buffer):
                    break
                kind = buffer[position] >> 4
                if kind == 3:  # PUBLISH at QoS 1: topic, packet id, payload
                    topic_end = cursor + 2 + int.from_bytes(buffer[cursor:cursor + 2], "big")
                    answers.append(b"\x40\x02" + buffer[topic_end:topic_end + 2])
                    received[fd] += 1
                    deliveries += 1
                elif kind == 9:  # SUBACK
                    subscribed += 1
                    if subscribed == args.count:
                        print("ready", flush=True)
                        deadline = time.monotonic() + args.timeout
                        cpu_start = own_cpu_ns()
                position = cursor + length
            pending[fd] = buffer[position:]
            if answers:
                last = time.monotonic_ns()
                sockets[fd].sendall(b"".join(answers))
    if subscribed < args.count:
        print("failed", flush=True)
    complete = sum(1 for count in received.values() if count == args.messages)
    print(f"done {deliveries} {complete} {last} {own_cpu_ns() - cpu_start}", flush=True)
    return 0


def run_raw(args):
    """The raw subscribers in K worker processes, then mosquitto_pub (see --clients raw)."""
    rss_idle = rss_bytes(args.pid)
    ramp_start = time.monotonic_ns()
    n, k = args.subscribers, max(1, min(args.processes, args.subscribers))
    shares = [n // k + (1 if index < n % k else 0) for index in range(k)]
    common = ["--port", str(args.port), "--pid", str(args.pid), "--messages", str(args.messages),
              "--timeout", str(args.timeout), "--ready-timeout", str(args.ready_timeout)]
    workers = [subprocess.Popen([sys.executable, __file__, "worker", *common, "--first", str(sum(shares[:index])),
                                 "--count", str(share)], stdout=subprocess.PIPE, text=True)
               for index, share in enumerate(shares)]
    publisher = None
    try:
        ready = [worker.stdout.readline().strip() for worker in workers]
        if ready != ["ready"] * k:
            print(f"mqtt_fanout: not ready: {ready.count('ready')} of {k} raw subscriber processes subscribed")
            return 1
        ramp = (time.monotonic_ns() - ramp_start) / 1e9
        rss_online, window_start, marks, publisher = open_window(args)
        reports = [worker.stdout.readline().split() for worker in workers]
        window_end = time.monotonic_ns()
        server_cpu, server_wait, rss_after = window_close(args, marks, publisher)
    finally:
        stop_all(workers + ([publisher] if publisher else []))
    done = [[int(field) for field in report[1:]] if report[:1] == ["done"] else [0, 0, 0, 0] for report in reports]
    deliveries, finished = sum(d[0] for d in done), sum(d[1] for d in done)
    last = max([d[2] for d in done] + [window_start])
    # The workers' CPU during the window (each reports its own) and the publisher's (a child that exited).
    clients_cpu = sum(d[3] for d in done) + own_cpu_ns(resource.RUSAGE_CHILDREN)
    emit_throughput(f"mosquitto + raw clients ({k} processes)", args, deliveries, finished, publisher.returncode == 0,
                    ramp=ramp, wall=(last - window_start) / 1e9, window=(window_end - window_start) / 1e9,
                    rss=(rss_idle, rss_online, rss_after), server=(server_cpu, server_wait), clients_cpu=clients_cpu,
                    client_threads=k + 1)
    return 0 if finished == n and publisher.returncode == 0 else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("role", nargs="?", default="subscribers", choices=["subscribers", "publisher", "worker"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--subscribers", type=int, default=50)
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--window", type=int, default=100)
    parser.add_argument("--payload", type=int, default=64)
    parser.add_argument("--timeout", type=int, default=90)
    parser.add_argument("--ready-timeout", type=int, default=30)
    parser.add_argument("--clients", choices=["paho", "c", "raw"], default="paho")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--count", type=int, default=0)
    parser.add_argument("--log")
    args = parser.parse_args()
    args.payload = max(DIGITS, args.payload)
    if args.role == "publisher":
        return run_publisher(args)
    if args.role == "worker":
        return run_worker(args)
    return {"paho": run_paho, "c": run_c_clients, "raw": run_raw}[args.clients](args)


if __name__ == "__main__":
    sys.exit(main())
