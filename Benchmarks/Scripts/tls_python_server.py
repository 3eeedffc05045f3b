"""Python's TLS (the ssl module, OpenSSL underneath) as the comparison server: an asyncio server on
127.0.0.1:0 that completes handshakes and echoes; with --plain, the same echo without TLS (the
throughput figures' baseline). Prints "listening on 127.0.0.1:PORT".
    python3 tls_python_server.py CERT KEY  |  python3 tls_python_server.py --plain"""
import asyncio
import ssl
import sys

if sys.argv[1:] == ["--plain"]:
    context = None
else:
    certificate, key = sys.argv[1], sys.argv[2]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(certificate, key)


async def echo(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, ssl.SSLError):
        pass
    writer.close()


async def main():
    server = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=context, backlog=1024)
    print(f"listening on 127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    await server.serve_forever()


asyncio.run(main())
