#!/usr/bin/env python3
"""Writes the seed corpus of the frame decoder fuzzer: valid frames of every command, built from the
header layout and the .proto by hand (so a seed never depends on the code under test), in the input
format FrameDecoderFuzz.swift reads: a limit byte, a read-size seed byte, then the stream."""
import os
import struct
import sys

def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)

def string(field, text):
    data = text.encode()
    return varint(field << 3 | 2) + varint(len(data)) + data

def uint(field, n):
    return varint(field << 3 | 0) + varint(n)

def frame(command, body=b"", serial=1, code=0, version=1):
    return struct.pack(">IHHII", len(body), version, command, serial, code) + body

chat = string(1, "6f1d2c3e-0000-4000-8000-00000000abcd") + string(2, "alice") + string(3, "bob") \
    + string(5, "héllo, a typical chat line of about a hundred bytes: 中文 and 😀 included") + uint(6, 42) + uint(7, 1_700_000_000_000)
frames = {
    "heartbeat": frame(1),
    "heartbeat-ack": frame(2, serial=7),
    "login": frame(3, string(1, "alice") + string(2, "secret") + uint(3, 30) + string(4, "RunLoopIM")),
    "login-ack": frame(4, string(1, "alice") + string(2, "s-1") + uint(3, 1_700_000_000_000)),
    "login-refused": frame(4, string(4, "wrong password"), code=4),
    "logout": frame(5),
    "send": frame(7, chat),
    "send-ack": frame(8, string(1, "m1") + uint(2, 42) + uint(3, 1_700_000_000_000)),
    "deliver-room": frame(9, string(1, "m2") + string(2, "carol") + string(4, "lobby") + string(5, "hi")),
    "deliver-ack-packed": frame(10, varint(1 << 3 | 2) + varint(3) + varint(1) + varint(2) + varint(300)),
    "abandon": frame(11, string(1, "m1") + string(1, "m2")),
    "abandon-ack": frame(12, varint(1 << 3 | 2) + varint(8) + string(1, "m1") + uint(2, 1) + uint(3, 5)),
    "error": frame(13, string(1, "server full") + uint(2, 1000), code=7),
    "unknown-command": frame(999, b"\x01\x02\x03", code=77),
}
out = sys.argv[1] if len(sys.argv) > 1 else "corpus"
os.makedirs(out, exist_ok=True)
seeds = dict(frames)
seeds["conversation"] = b"".join(frames[k] for k in ["login", "login-ack", "heartbeat", "heartbeat-ack", "send", "send-ack", "logout"])
seeds["oversized"] = frame(7, b"x" * 300)
seeds["bad-version"] = frame(1, version=2)
for index, (name, stream) in enumerate(sorted(seeds.items())):
    # Vary the limit (index % 8 picks from bodyLimits) and the read sizes across seeds.
    with open(os.path.join(out, f"seed-{name}"), "wb") as f:
        f.write(bytes([index % 8, index * 37 % 256]) + stream)
print(f"{len(seeds)} seeds in {out}")
