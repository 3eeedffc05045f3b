"""Opens COUNT (at most 12,700) connections to 127.0.0.1:PORT and holds them idle: TLS ones (a full handshake each,
verified against CA) or plain TCP ones. Prints "ready" once all are open, then waits for its stdin to
close. Prints "ready N" with the number actually open: a busy machine can make a server drop some
(its handshake timeout). Used by tls-figures.sh, which reads the server's RSS around it."""
import socket
import ssl
import sys

port, count, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
context = None
if mode == "tls":
    context = ssl.create_default_context(cafile=sys.argv[4])
held = []
failed = 0
for index in range(count):
    # 50 connections per source address (127.0.1.x): the node holds at most 64 connections per
    # address that have not logged in, and these never do.
    source = (f"127.0.1.{1 + index // 50}", 0)
    try:
        sock = socket.create_connection(("127.0.0.1", port), source_address=source)
        if context is not None:
            sock = context.wrap_socket(sock, server_hostname="localhost")
        held.append(sock)
    except OSError as error:
        failed += 1
        print(f"failed: {error}", file=sys.stderr)
print(f"ready {len(held)} ({failed} failed)", flush=True)
sys.stdin.read()
