"""Opens COUNT connections to 127.0.0.1:PORT and holds them idle: TLS ones (a full handshake each,
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
for _ in range(count):
    try:
        sock = socket.create_connection(("127.0.0.1", port))
        if context is not None:
            sock = context.wrap_socket(sock, server_hostname="localhost")
        held.append(sock)
    except OSError as error:
        failed += 1
        print(f"failed: {error}", file=sys.stderr)
print(f"ready {len(held)} ({failed} failed)", flush=True)
sys.stdin.read()
