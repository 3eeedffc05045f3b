"""Echo throughput against one server: CONNECTIONS clients (one process each, so Python's own speed is
not shared), each keeping WINDOW messages of SIZE bytes in flight for SECONDS and counting the bytes that
came back. Prints "MB/s TOTAL" (10^6 bytes a second, echoed bytes only, all connections together).

    python3 tls_echo_load.py PORT MODE CONNECTIONS SECONDS [CA]
MODE: raw (TCP bytes), tls (TCP bytes in TLS), ws (WebSocket binary messages), wss (the same in TLS).
A WebSocket message goes masked with the all-zero key (the mask is required, its key may be any), so
the client spends no time masking; the server unmasks as for any other key.
"""
import multiprocessing
import socket
import ssl
import struct
import sys
import time

SIZE = 60_000  # under 64 KiB: a WebSocket frame with a 16-bit length
WINDOW = 4


def connect(port, mode, ca):
    raw = socket.create_connection(("127.0.0.1", port))
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if mode in ("tls", "wss"):
        context = ssl.create_default_context(cafile=ca)
        raw = context.wrap_socket(raw, server_hostname="127.0.0.1")
    if mode in ("ws", "wss"):
        raw.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            head += raw.recv(4096)
        assert head.startswith(b"HTTP/1.1 101"), head
    return raw


def read_exactly(sock, view):
    while len(view):
        count = sock.recv_into(view)
        if count == 0:
            raise ConnectionError("closed by the server")
        view = view[count:]


def client(port, mode, seconds, ca, results):
    sock = connect(port, mode, ca)
    payload = bytes(range(256)) * (SIZE // 256) + bytes(SIZE % 256)
    if mode in ("ws", "wss"):
        message = bytes([0x82, 0x80 | 126]) + struct.pack("!H", SIZE) + bytes(4) + payload
        answer = bytearray(4 + SIZE)  # 0x82, 126, the 16-bit length, the payload
    else:
        message = payload
        answer = bytearray(SIZE)
    for _ in range(WINDOW):
        sock.sendall(message)
    echoed = 0
    deadline = time.monotonic() + seconds
    started = time.monotonic()
    while time.monotonic() < deadline:
        read_exactly(sock, memoryview(answer))
        echoed += SIZE
        sock.sendall(message)
    elapsed = time.monotonic() - started
    results.put(echoed / elapsed)
    sock.close()


def main():
    port, mode, connections, seconds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    ca = sys.argv[5] if len(sys.argv) > 5 else None
    results = multiprocessing.Queue()
    workers = [multiprocessing.Process(target=client, args=(port, mode, seconds, ca, results)) for _ in range(connections)]
    for worker in workers:
        worker.start()
    rates = [results.get(timeout=seconds + 60) for _ in workers]
    for worker in workers:
        worker.join()
    print(f"MB/s {sum(rates) / 1e6:.0f}")


if __name__ == "__main__":
    main()
