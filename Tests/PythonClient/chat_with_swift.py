#!/usr/bin/env python3
"""A scripted conversation between the Python client "py" and a Swift client "swift".

    chat_with_swift.py HOST PORT [--user py] [--password pw] [--peer swift] [--room lobby] [--timeout 20] [-v]

The Swift side (Tests/RunLoopIMTests/PythonClientTests.swift) is already logged in and in the room.
The script:

1. logs in (asking for PRESENCE_BATCH unless --no-presence-batches), joins the room (which must
   then have at least 2 members: the peer is in it),
2. stays idle for 1.5 s with a 0.5 s heartbeat: at least one HEARTBEAT must be answered,
3. waits for a direct message from the peer, answers it with "re: <text>",
4. sends a room message, then waits for the peer's room message,
5. reads the room's history one message per page, and the direct conversation's history,
   and checks both hold what was said, newest first, each message once,
6. lists the rooms and logs out.

Exit status 0 when every step went as scripted; 1 with "FAIL: ..." on stderr for any deviation;
2 for bad arguments. The whole run is bounded by --timeout seconds. The last line on stdout is a
JSON summary, for the Swift test's failure messages.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import imclient  # noqa: E402


class Deviation(Exception):
    pass


def check(condition: bool, what: str) -> None:
    if not condition:
        raise Deviation(what)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--user", default="py")
    parser.add_argument("--password", default="pw")
    parser.add_argument("--peer", default="swift")
    parser.add_argument("--room", default="lobby")
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--no-presence-batches", action="store_true",
                        help="do not ask for PRESENCE_BATCH: log in as a client older than it")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every frame to stderr")
    args = parser.parse_args()

    start = time.monotonic()
    deadline = start + args.timeout

    def remaining() -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise imclient.Timeout(f"the conversation did not finish within {args.timeout:.0f} s")
        return left

    # A backstop in case something blocks outside the client's select loop.
    def hard_timeout(_signal, _frame):
        raise imclient.Timeout(f"hard timeout after {args.timeout:.0f} + 5 s")

    signal.signal(signal.SIGALRM, hard_timeout)
    signal.alarm(int(args.timeout) + 5)

    step = "connect"

    def log(text: str) -> None:
        if args.verbose:
            print(f"[{time.monotonic() - start:6.3f}] {text}", file=sys.stderr, flush=True)

    client = imclient.IMClient(args.host, args.port, args.user, args.password, keepalive_seconds=2,
                               heartbeat_interval=0.5, answer_timeout=5.0, log=log,
                               presence_batches=not args.no_presence_batches)
    summary: dict = {"user": args.user}
    try:
        client.connect(timeout=min(5.0, remaining()))

        step = "login"
        response = client.login()
        check(response.user == args.user, f"LOGIN_ACK names user {response.user!r}, expected {args.user!r}")
        check(response.session_id != "", "LOGIN_ACK has no session_id")
        check(response.server_time_ms > 0, "LOGIN_ACK has no server_time_ms")
        limits = response.limits
        check(0 < limits.max_send_body < limits.max_frame_body and limits.delivery_window_messages > 0,
              f"LOGIN_ACK announces no usable limits: {limits}")
        try:
            client.send("x" * limits.max_send_body, room=args.room)
            check(False, "a message over max_send_body was sent")
        except imclient.MessageTooLarge:
            pass  # refused before sending (section 7), the session untouched

        step = "join"
        info = client.join(args.room)
        check(info.name == args.room and info.joined, f"JOIN_ACK {info}")
        check(info.members >= 2, f"room {args.room} has {info.members} member(s); {args.peer} should be in it")

        step = "heartbeat"
        client.idle(min(1.5, remaining()))
        check(client.stats.heartbeat_acks >= 1,
              f"no HEARTBEAT answered after 1.5 s idle ({client.stats.heartbeats_sent} sent)")

        step = "receive direct message"
        direct = client.wait_for_message(lambda m: m.sender == args.peer and m.user == args.user, remaining())
        log(f"direct message from {direct.sender}: {direct.text!r} seq {direct.seq}")
        check(direct.seq > 0 and direct.sent_at_ms > 0 and direct.room == "", f"DELIVER fields: {direct}")

        step = "answer direct message"
        reply_text = f"re: {direct.text}"
        reply = client.send(reply_text, user=args.peer)
        check(reply.seq > direct.seq, f"reply seq {reply.seq} not after the message's {direct.seq}")

        step = "send room message"
        room_text = f"{args.user} says hi to {args.room}"
        room_ack = client.send(room_text, room=args.room)

        step = "receive room message"
        room_message = client.wait_for_message(lambda m: m.sender == args.peer and m.room == args.room, remaining())
        log(f"room message from {room_message.sender}: {room_message.text!r} seq {room_message.seq}")
        check(room_message.seq > room_ack.seq, "the peer's room message came before ours was stored")

        step = "room history"
        room_history = client.full_history(room=args.room, page_size=1)
        seqs = [m.seq for m in room_history]
        check(seqs == sorted(seqs, reverse=True) and len(set(seqs)) == len(seqs), f"room history order: {seqs}")
        texts = [(getattr(m, "from"), m.text) for m in room_history]
        check(texts.count((args.user, room_text)) == 1, f"our room message once in the room's history: {texts}")
        check(texts.count((args.peer, room_message.text)) == 1, f"the peer's room message once in history: {texts}")

        step = "direct history"
        direct_history = client.full_history(user=args.peer)
        pairs = [(getattr(m, "from"), m.user, m.text) for m in direct_history]
        check(pairs[:2] == [(args.user, args.peer, reply_text), (args.peer, args.user, direct.text)],
              f"direct history, newest first: {pairs}")

        step = "list rooms"
        rooms = {room.name: room for room in client.all_rooms()}
        check(args.room in rooms and rooms[args.room].joined, f"ROOM_LIST: {list(rooms.values())}")

        step = "exactly once"
        # Everything shown was shown once (the client de-duplicates); nothing else arrived.
        check(not client.inbox, f"unexpected messages: {client.inbox}")

        step = "logout"
        client.logout(timeout=min(5.0, remaining()))

        summary.update(ok=True, received=[direct.text, room_message.text], sent=[reply_text, room_text],
                       heartbeats=client.stats.heartbeats_sent, heartbeat_acks=client.stats.heartbeat_acks,
                       delivers=client.stats.delivers, duplicates=client.stats.duplicates,
                       presence=client.presence, ignored_commands=client.stats.ignored_commands,
                       presence_frames=client.stats.presence_frames, presence_batches=client.stats.presence_batches,
                       receives_presence_batches=client.receives_presence_batches,
                       large_room_members=client.large_room_members, large_rooms=sorted(
                           name for name in client.room_members if client.is_large(name)),
                       seconds=round(time.monotonic() - start, 3))
        print(json.dumps(summary), flush=True)
        return 0
    except Deviation as error:
        failure = f"FAIL at {step}: {error}"
    except (imclient.ProtocolError, imclient.ServerError, imclient.RequestFailed, imclient.Timeout,
            imclient.ConnectionClosed, OSError) as error:
        failure = f"FAIL at {step}: {type(error).__name__}: {error}"
    finally:
        signal.alarm(0)
        client.close()
    print(failure, file=sys.stderr, flush=True)
    summary.update(ok=False, failure=failure, stats=vars(client.stats))
    print(json.dumps(summary, default=str), flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
