"""The chat node's page over HTTPS in Chromium, which trusts a throw-away test CA and nothing more than
its own roots: a real `chat-node serve --tls-cert/--tls-key` with a certificate that CA signed for
127.0.0.1, and a second node with one it signed for another host name.

How Chromium is made to trust the CA: an NSS database (Chromium's certificate store on Linux, read from
`$HOME/.pki/nssdb`) in a temporary HOME, with the CA added by `certutil` (Debian's libnss3-tools) as
trusted to identify web sites. Not `ignore_https_errors` nor `--ignore-certificate-errors-spki-list`:
both switch checks off (the SPKI list waives every error of a chain that has the pinned key, a wrong
host name included), and the wrong-name check below must see the browser refuse.

- The page loads over https, `window.isSecureContext` holds, and Chromium itself rates it secure (its
  DevTools security state, with the test CA as issuer); the page's WebSocket is `wss://`.
- Two users log in over wss, join a room, and a message goes from one page to the other, acknowledged.
- With the wrong-name certificate the page does not load (net::ERR_CERT_COMMON_NAME_INVALID), and a
  `wss://` socket to that node from the secure page never opens.

The CA and both certificates are made by the caller (Tests/ChatNodeTests/BrowserHTTPSTests.swift, with
RunLoopTesting's TestPKI) and passed in; by hand, with a CA and two certificates it signed (one for
127.0.0.1, one for another name):
    .build-python/bin/python Tests/BrowserClient/browser_https.py --chat-node .build/debug/chat-node \\
        --ca CA.pem --cert SERVER.pem --key SERVER.key --wrong-cert WRONG.pem --wrong-key WRONG.key
Exit 0 and a last line `{"ok": true, ...}` when every check held.
"""
import os
import subprocess
import sys
import time

from playwright.sync_api import Error, expect, sync_playwright

from browser_chat import Node, ScriptRun, log_in, room_message, say

# What a socket to `url` came to: "open", or "closed CODE" if it never opened.
SOCKET_OUTCOME = """url => new Promise((resolve) => {
  const ws = new WebSocket(url);
  ws.onopen = () => { resolve("open"); ws.close(); };
  ws.onclose = (event) => resolve(`closed ${event.code}`);
})"""


def tls_options(parser):
    parser.add_argument("--ca", required=True, help="the test CA's certificate (PEM), the only one added to the browser's trust")
    parser.add_argument("--cert", required=True, help="the node's certificate, for 127.0.0.1, signed by the CA")
    parser.add_argument("--key", required=True)
    parser.add_argument("--wrong-cert", required=True, help="a certificate the CA signed for another host name")
    parser.add_argument("--wrong-key", required=True)


def home_trusting(ca, workdir):
    """A HOME whose NSS database trusts `ca` to identify web sites ("C,,": a CA for TLS servers only)."""
    home = os.path.join(workdir, "home")
    database = "sql:" + os.path.join(home, ".pki", "nssdb")
    os.makedirs(os.path.join(home, ".pki", "nssdb"))
    subprocess.run(["certutil", "-N", "-d", database, "--empty-password"], check=True, capture_output=True)
    subprocess.run(["certutil", "-A", "-d", database, "-n", "RunLoopKit test CA", "-t", "C,,", "-i", ca],
                   check=True, capture_output=True)
    return home


def common_name(certificate):
    """The subject's CN, as Chromium names a certificate's issuer."""
    subject = subprocess.run(["openssl", "x509", "-in", certificate, "-noout", "-subject", "-nameopt", "RFC2253"],
                             check=True, capture_output=True, text=True).stdout
    return subject.strip().split("CN=", 1)[1].split(",", 1)[0]


def latest_security_state(page, states):
    """Chromium's last rating of the page, once its DevTools events have reached us (they arrive while
    Playwright waits on the page)."""
    deadline = time.monotonic() + 10
    while not states and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert states, "Chromium reported no security state"
    return states[-1]


def tls_node(run, name, certificate, key):
    node = Node(run.arguments.chat_node, os.path.join(run.workdir, f"{name}.db"), run.node_log)
    node.extra = ["--tls-cert", certificate, "--tls-key", key]
    return node


def main():
    run = ScriptRun("chat-node-https-", options=tls_options)
    arguments, check, screenshot = run.arguments, run.check, run.screenshot
    node = tls_node(run, "chat", arguments.cert, arguments.key)
    wrong = tls_node(run, "wrong", arguments.wrong_cert, arguments.wrong_key)
    try:
        home = home_trusting(arguments.ca, run.workdir)
        node.start()
        assert node.url.startswith("https://127.0.0.1:"), node.url
        check(f"node up with TLS: IM on {node.port}, page {node.url}; an NSS database trusting the test CA in {home}")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=arguments.chromium, args=["--no-sandbox"], env={**os.environ, "HOME": home})
            expect.set_options(timeout=10_000)
            ann = browser.new_context().new_page()
            sockets = []
            ann.on("websocket", lambda socket: sockets.append(socket.url))
            security = ann.context.new_cdp_session(ann)
            states = []
            security.on("Security.visibleSecurityStateChanged", lambda event: states.append(event["visibleSecurityState"]))
            security.send("Security.enable")
            log_in(ann, node.url, "ann")
            protocol, secure_context = ann.evaluate("[location.protocol, window.isSecureContext]")
            assert (protocol, secure_context) == ("https:", True), (protocol, secure_context)
            assert sockets and all(url.startswith("wss://127.0.0.1:") for url in sockets), sockets
            state = latest_security_state(ann, states)
            assert state["securityState"] == "secure", states
            certificate = state["certificateSecurityState"]
            assert certificate["issuer"] == common_name(arguments.ca), certificate
            check(f"the page over {protocol} (secure context), its socket {sockets[-1]}; Chromium rates it "
                  f"secure: {certificate['protocol']}, issuer {certificate['issuer']!r}")

            bob = browser.new_context().new_page()
            log_in(bob, node.url, "bob")
            for page in (ann, bob):
                page.fill("#room-name", "lobby")
                page.click("#join")
                expect(page.locator("#title")).to_have_text("# lobby")
            say(ann, "hello over wss")
            expect(room_message(bob, "ann", "hello over wss")).to_have_count(1)
            expect(room_message(ann, "ann", "hello over wss")).to_have_attribute("data-state", "acked")
            say(bob, "and back")
            expect(room_message(ann, "bob", "and back")).to_have_count(1)
            check("ann and bob logged in over wss://, joined lobby, and chatted both ways, acknowledged")
            screenshot(ann, "chat-page-https.png")

            wrong.start()
            refused = browser.new_context().new_page()
            try:
                refused.goto(wrong.url)
                raise AssertionError(f"the page loaded from {wrong.url} under a certificate for another name")
            except Error as error:
                assert "net::ERR_CERT_COMMON_NAME_INVALID" in error.message, error.message
            outcome = ann.evaluate(SOCKET_OUTCOME, f"wss://127.0.0.1:{wrong.http_port}/ws")
            assert outcome == "closed 1006", outcome
            check(f"a certificate for another host name: the page does not load (ERR_CERT_COMMON_NAME_INVALID), "
                  f"a wss:// socket to it never opens ({outcome})")
            browser.close()
        return run.passed()
    except Exception as error:  # report, with the nodes' log, and fail
        return run.failed(error)
    finally:
        node.stop()
        wrong.stop()


if __name__ == "__main__":
    sys.exit(main())
