"""Two browser users (Chromium driven by Playwright) and one terminal client (`chat-node client`) chat
in one room of a real `chat-node serve` process, which is killed (SIGKILL, by pid) and started again on
the same ports; the pages must reconnect, resend what was queued and show what arrived while they were
away, each message once. Waits on page state only, never on fixed sleeps.

Run by Tests/ChatNodeTests/BrowserTests.swift; by hand:
    .build-python/bin/python Tests/BrowserClient/browser_chat.py --chat-node .build/debug/chat-node
Exit 0 and a last line `{"ok": true, ...}` when every check held.
"""
import argparse
import ctypes
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time

from playwright.sync_api import expect, sync_playwright


def die_with_parent():
    """Children get SIGKILL when this script dies, even by SIGKILL (the test's time limit): no node is left behind."""
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Lines:
    """A child's output lines, read on a thread so waiting never blocks on a pipe."""

    def __init__(self, stream):
        self.lines = []
        self.changed = threading.Condition()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream):
        for line in stream:
            with self.changed:
                self.lines.append(line.rstrip("\n"))
                self.changed.notify_all()

    def wait_for(self, predicate, what, timeout=15):
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                found = [line for line in self.lines if predicate(line)]
                if found:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out waiting for {what}; output so far:\n" + "\n".join(self.lines))
                self.changed.wait(left)

    def count(self, text):
        with self.changed:
            return sum(1 for line in self.lines if text in line)


class Node:
    """`chat-node serve` as a child process; the first start picks free ports, a restart reuses them."""

    def __init__(self, binary, database, log):
        self.binary, self.database, self.log = binary, database, log
        self.port = 0
        self.http_port = 0
        self.process = None
        self.extra = []  # more `serve` flags, e.g. a TLS certificate

    def start(self):
        self.process = subprocess.Popen(
            [self.binary, "serve", "--port", str(self.port), "--http-port", str(self.http_port),
             "--database", self.database, "--scrypt-cost", "4", "--log-level", "warning",
             "--messages-per-second", "20"] + self.extra,  # bursts of 100, then 20 a second: the rate check below
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.log, text=True, preexec_fn=die_with_parent)
        out = Lines(self.process.stdout)
        listening = out.wait_for(lambda line: line.startswith("listening on "), "the node's port")[0]
        page = out.wait_for(lambda line: line.startswith("page: "), "the node's page URL")[0]
        self.port = int(listening.rsplit(":", 1)[1])
        self.url = page.split(" ", 1)[1]
        self.http_port = int(self.url.rstrip("/").rsplit(":", 1)[1])

    def kill(self):
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()


class ScriptRun:
    """One run of a browser script: its command line, a work directory with the node's database and
    log, the node, and the numbered checks it passed; ends with a last line `{"ok": ...}`."""

    def __init__(self, prefix, options=None):
        """`options`, if given, adds a script's own arguments to the parser."""
        parser = argparse.ArgumentParser()
        parser.add_argument("--chat-node", required=True)
        parser.add_argument("--chromium", default="/usr/bin/chromium")
        parser.add_argument("--screenshots", default=None, help="directory for the screenshots (default: a temporary one)")
        if options:
            options(parser)
        self.arguments = parser.parse_args()
        self.started = time.monotonic()
        self.workdir = tempfile.mkdtemp(prefix=prefix)
        self.screenshots = self.arguments.screenshots or self.workdir
        os.makedirs(self.screenshots, exist_ok=True)
        self.node_log = open(os.path.join(self.workdir, "node.log"), "w")
        self.node = Node(self.arguments.chat_node, os.path.join(self.workdir, "chat.db"), self.node_log)
        self.checks = []

    def check(self, name):
        self.checks.append(name)
        print(f"ok {len(self.checks)}: {name} ({time.monotonic() - self.started:.1f} s)", flush=True)

    def screenshot(self, page, name, full_page=False):
        path = os.path.join(self.screenshots, name)
        page.screenshot(path=path, full_page=full_page)
        print(f"screenshot: {path}", flush=True)

    def passed(self):
        print(json.dumps({"ok": True, "checks": len(self.checks), "seconds": round(time.monotonic() - self.started, 1)}), flush=True)
        return 0

    def failed(self, error):
        """Reports the failure with the end of the node's log."""
        self.node_log.flush()
        print(f"FAILED: {error!r}", file=sys.stderr)
        print(open(os.path.join(self.workdir, "node.log")).read()[-3000:], file=sys.stderr)
        print(json.dumps({"ok": False, "checks": len(self.checks)}), flush=True)
        return 1


def room_message(page, sender, text, conv="room:lobby"):
    return page.locator(f'li.msg[data-conv="{conv}"][data-from="{sender}"]').filter(has_text=text)


def log_in(page, url, user):
    page.goto(url)
    page.fill("#user", user)
    page.fill("#password", "pw")
    page.click("#login")
    expect(page.locator("#conn")).to_have_attribute("data-state", "online")


def say(page, text):
    page.fill("#text", text)
    page.press("#text", "Enter")


def main():
    run = ScriptRun("chat-node-browser-")
    arguments, node, check = run.arguments, run.node, run.check
    terminal = None
    try:
        node.start()
        check(f"node up: IM on {node.port}, page {node.url}")
        terminal = subprocess.Popen(
            [arguments.chat_node, "client", "--user", "carol", "--port", str(node.port), "--log-level", "error",
             "--heartbeat-seconds", "5", "--drain-seconds", "2"],
            env={**os.environ, "CHAT_NODE_PASSWORD": "pw"}, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, bufsize=1, preexec_fn=die_with_parent)
        carol = Lines(terminal.stdout)

        def type_line(line):
            terminal.stdin.write(line + "\n")
            terminal.stdin.flush()

        type_line("/join lobby")
        carol.wait_for(lambda line: "* joined lobby" in line, "carol joining lobby")

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=arguments.chromium, args=["--no-sandbox"])
            expect.set_options(timeout=10_000)
            ann = browser.new_context().new_page()
            bob = browser.new_context().new_page()
            for page, user in ((ann, "ann"), (bob, "bob")):
                log_in(page, node.url, user)
                page.fill("#room-name", "lobby")
                page.click("#join")
                expect(page.locator("#title")).to_have_text("# lobby")
            check("ann and bob logged in from the page and joined lobby")

            impostor = browser.new_context().new_page()
            impostor.goto(node.url)
            impostor.fill("#user", "ann")
            impostor.fill("#password", "not ann's")
            impostor.click("#login")
            expect(impostor.locator("#conn")).to_have_attribute("data-state", "refused")
            expect(impostor.locator("#login-error")).to_have_text("unknown user or wrong password")
            expect(impostor.locator("#login-form")).to_be_visible()
            impostor.context.close()
            check("a wrong password is refused on the page, without reconnecting")

            say(ann, "hello from ann")
            expect(room_message(bob, "ann", "hello from ann")).to_have_count(1)
            expect(room_message(ann, "ann", "hello from ann")).to_have_attribute("data-state", "acked")
            carol.wait_for(lambda line: line == "[lobby] ann: hello from ann", "carol seeing ann")
            say(bob, "hi from bob")
            expect(room_message(ann, "bob", "hi from bob")).to_have_count(1)
            carol.wait_for(lambda line: line == "[lobby] bob: hi from bob", "carol seeing bob")
            type_line("hey from the terminal")
            for page in (ann, bob):
                expect(room_message(page, "carol", "hey from the terminal")).to_have_count(1)
            check("room messages flow page → page, page → terminal, terminal → pages")

            ann.fill("#dm-user", "bob")
            ann.click("#open-dm")
            say(ann, "psst bob")
            expect(room_message(bob, "ann", "psst bob", conv="user:ann")).to_have_count(1)
            expect(bob.locator('#directs li[data-user="ann"] .unread')).to_have_text("1")
            ann.click('#rooms li[data-room="lobby"]')
            check("a direct message reaches bob's page, counted unread")

            node.kill()
            for page in (ann, bob):
                expect(page.locator("#conn")).to_have_attribute("data-state", "reconnecting")
            say(ann, "sent while the node was down")
            expect(room_message(ann, "ann", "sent while the node was down")).to_have_attribute("data-state", "queued")
            type_line("typed while the node was down")
            carol.wait_for(lambda line: "queued [lobby]: typed while the node was down" in line, "carol queueing")
            check("node killed by pid: pages show reconnecting, new messages queue")

            node.start()
            for page in (ann, bob):
                expect(page.locator("#conn")).to_have_attribute("data-state", "online", timeout=20_000)
            expect(room_message(ann, "ann", "sent while the node was down")).to_have_attribute("data-state", "acked")
            expect(room_message(bob, "ann", "sent while the node was down")).to_have_count(1)
            for page in (ann, bob):
                expect(room_message(page, "carol", "typed while the node was down")).to_have_count(1)
            carol.wait_for(lambda line: line == "[lobby] ann: sent while the node was down", "carol seeing the resend")
            check("node restarted on the same ports: pages reconnected, queued messages resent and shown")

            # Each message once everywhere, through resends and the reconnect's history refresh.
            for page in (ann, bob):
                for sender, text in (("ann", "hello from ann"), ("bob", "hi from bob"), ("carol", "hey from the terminal"),
                                     ("ann", "sent while the node was down"), ("carol", "typed while the node was down")):
                    expect(room_message(page, sender, text)).to_have_count(1)
            assert carol.count("[lobby] ann: sent while the node was down") == 1
            check("no duplicates on either page or the terminal")

            # Bob's page goes away; ann writes; a fresh page for bob gets it from his inbox (offline
            # delivery) and the room's earlier messages from the node's history, in order, once each.
            bob.goto("about:blank")
            expect(ann.locator("#online li").filter(has_text="bob")).to_have_count(0)
            say(ann, "while bob was away")
            expect(room_message(ann, "ann", "while bob was away")).to_have_attribute("data-state", "acked")
            log_in(bob, node.url + "?historyPage=2", "bob")
            expect(room_message(bob, "ann", "while bob was away")).to_have_count(1)
            bob.click('#rooms li[data-room="lobby"]')
            lobby = bob.locator('li.msg[data-conv="room:lobby"]')
            expect(lobby).to_have_count(2)  # the newest page of history
            for shown in (4, 6):
                bob.click("#older")
                expect(lobby).to_have_count(shown)
            expect(bob.locator("#older")).to_be_hidden()  # the start of the conversation
            texts = bob.locator('li.msg[data-conv="room:lobby"] .text').all_text_contents()
            assert texts[0] == "hello from ann" and texts[-1] == "while bob was away", texts
            assert set(texts[3:5]) == {"sent while the node was down", "typed while the node was down"}, texts
            check("a page that was away gets what arrived meanwhile, and the room's history page by page, once each")

            # A paste far over the node's size limit: refused on the page with the limit, kept in the
            # field to be shortened, never sent; the session stays up and the next message goes out.
            paste = "y" * 70_000
            ann.fill("#text", paste)
            ann.press("#text", "Enter")
            expect(ann.locator("#composer-error")).to_have_text("too large (limit 65408 bytes)")
            assert ann.input_value("#text") == paste
            expect(ann.locator("li.msg").filter(has_text="yyyyyyyyyy")).to_have_count(0)
            say(ann, "after the paste")
            expect(ann.locator("#composer-error")).to_have_text("")
            expect(room_message(bob, "ann", "after the paste")).to_have_count(1)
            expect(ann.locator("#conn")).to_have_attribute("data-state", "online")
            check("a 70,000-character paste is refused with the limit shown; the session stays up")

            # 150 messages at once: the node takes a burst of 100 and refuses the rest as rate
            # limited; the page pauses its whole outbox and sends again in order, so carol sees them
            # in the order they were written, each once, and every one ends acknowledged on the page.
            burst = [f"burst {number}" for number in range(1, 151)]
            ann.evaluate("texts => { for (const text of texts) submitMessage(text); }", burst)
            expect(ann.locator('li.msg.own[data-state="acked"]').filter(has_text="burst ")).to_have_count(150, timeout=30_000)
            deadline = time.monotonic() + 30
            while carol.count("[lobby] ann: burst ") < 150 and time.monotonic() < deadline:
                time.sleep(0.05)
            with carol.changed:
                arrived = [line.split(": ", 1)[1] for line in carol.lines if line.startswith("[lobby] ann: burst ")]
            assert arrived == burst, arrived
            check("a burst over the node's rate limit arrives in order, each message once")

            for name, page in (("ann", ann), ("bob", bob)):
                run.screenshot(page, f"browser-chat-{name}.png", full_page=True)
            browser.close()

        terminal.stdin.close()
        terminal.wait(timeout=15)
        return run.passed()
    except Exception as error:  # report, with the node's log, and fail
        return run.failed(error)
    finally:
        if terminal and terminal.poll() is None:
            terminal.kill()
        node.stop()


if __name__ == "__main__":
    sys.exit(main())
