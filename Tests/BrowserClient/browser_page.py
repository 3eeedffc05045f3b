"""What a person sees on the chat node's page, in Chromium driven by Playwright, against a real `chat-node
serve`: judged by layout (getBoundingClientRect, scroll metrics), not only by the DOM's text.

- A long conversation scrolls inside its pane, the composer stays in the window, the view follows the
  newest message, and a reader who scrolled up is not moved: a "new messages" marker takes them down.
- At 400 px wide the layout stacks (rooms in a drawer), nothing is wider than the window, the composer
  and its send button are in view.
- Before any login no connection badge; the login form speaks a user's language; the first login says
  "account created", once; a wrong password then the right one does not say "reconnected".
- A graceful node stop (SIGTERM) closes the WebSocket with 1001 and the page says "the node is
  restarting; reconnecting in N s", never "connection lost: closed 1006"; the online list is greyed
  while disconnected.
- A close after the node's ERROR shows the node's reason, not the close code.
- The reconnect wait is capped at 10 s, and a click on the badge retries at once.
- A member joining or leaving a room shows as a line in its pane ("bob joined lobby"), its count live.

Screenshots at 1280x800 and at 400 px wide go to --screenshots (the lines `screenshot: PATH` name them).
Run by Tests/ChatNodeTests/BrowserPageTests.swift; by hand:
    .build-python/bin/python Tests/BrowserClient/browser_page.py --chat-node .build/debug/chat-node
Exit 0 and a last line `{"ok": true, ...}` when every check held.
"""
import re
import sys

from playwright.sync_api import expect, sync_playwright

from browser_chat import ScriptRun, log_in, room_message

# Every WebSocket close code the page sees, in order (the page's own socket, wrapped before it loads).
RECORD_CLOSES = """
window.closeCodes = [];
const NativeWebSocket = window.WebSocket;
window.WebSocket = class extends NativeWebSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener("close", (event) => window.closeCodes.push(event.code));
  }
};
"""

# Every text the notice line showed, from the first login on.
RECORD_NOTICES = """() => {
  window.noticesSeen = [];
  const element = document.getElementById("notice");
  new MutationObserver(() => window.noticesSeen.push(element.textContent))
    .observe(element, { childList: true, characterData: true, subtree: true });
}"""

# Where things are on the screen, as a person would see them.
LAYOUT = """() => {
  const box = (element) => {
    const r = element.getBoundingClientRect();
    return { top: r.top, bottom: r.bottom, left: r.left, right: r.right, width: r.width, height: r.height };
  };
  const pane = document.getElementById("messages");
  const messages = [...pane.querySelectorAll("ul:not([hidden]) li.msg")];
  return {
    viewport: { width: innerWidth, height: innerHeight },
    document: { width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight },
    pane: { ...box(pane), scrollHeight: pane.scrollHeight, clientHeight: pane.clientHeight, scrollTop: pane.scrollTop },
    composer: box(document.getElementById("composer")),
    text: box(document.getElementById("text")),
    send: box(document.getElementById("send")),
    nav: box(document.getElementById("sidebar")),
    last: messages.length ? box(messages[messages.length - 1]) : null,
    narrowestText: Math.min(...messages.map((m) => m.querySelector(".text").getBoundingClientRect().width)),
  };
}"""


def in_window(box, layout):
    """Wholly inside the window and not empty: a person sees all of it."""
    view = layout["viewport"]
    return (box["width"] > 0 and box["height"] > 0 and box["left"] >= 0 and box["top"] >= 0
            and box["right"] <= view["width"] and box["bottom"] <= view["height"])


def in_pane(box, layout):
    pane = layout["pane"]
    return box["top"] >= pane["top"] - 1 and box["bottom"] <= pane["bottom"] + 1


def check_conversation_fits(layout, what):
    """The message pane scrolls, the page does not; the composer and the newest message are in view."""
    pane = layout["pane"]
    assert pane["scrollHeight"] > pane["clientHeight"], f"{what}: the pane does not scroll: {pane}"
    assert layout["document"]["height"] <= layout["viewport"]["height"], f"{what}: the page itself scrolls: {layout}"
    for name in ("composer", "text", "send"):
        assert in_window(layout[name], layout), f"{what}: the {name} is not in the window: {layout}"
    assert in_pane(layout["last"], layout), f"{what}: the newest message is not in view: {layout}"


def main():
    run = ScriptRun("chat-node-page-")
    arguments, node, check, screenshot = run.arguments, run.node, run.check, run.screenshot
    try:
        node.start()
        check(f"node up: IM on {node.port}, page {node.url}")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=arguments.chromium, args=["--no-sandbox"])
            expect.set_options(timeout=10_000)
            window = {"width": 1280, "height": 800}
            bob = browser.new_context(viewport=window).new_page()
            log_in(bob, node.url, "bob")

            ann = browser.new_context(viewport=window).new_page()
            ann.add_init_script(RECORD_CLOSES)
            ann.goto(node.url)
            expect(ann.locator("#conn")).to_be_hidden()
            form = ann.locator("#login-form").inner_text()
            assert "--no-registration" not in form and "chat-node" not in form, form
            phone = browser.new_context(viewport={"width": 400, "height": 700}).new_page()
            phone.goto(node.url)
            fits = phone.evaluate("""() => {
              const r = document.getElementById("login").getBoundingClientRect();
              return document.documentElement.scrollWidth <= innerWidth && r.left >= 0 && r.right <= innerWidth
                && r.bottom <= innerHeight;
            }""")
            assert fits, "the login form does not fit a 400 px window"
            phone.context.close()
            check("before any login: no connection badge, and a login form without operator words that fits 400 px")

            # ann's first login makes her account; a wrong password is then refused and the right one
            # is a first login, not a reconnect.
            log_in(ann, node.url, "ann")
            expect(ann.locator("#notice")).to_have_text("account created")
            ann.click("#logout")
            expect(ann.locator("#login-form")).to_be_visible()
            ann.fill("#user", "ann")
            ann.fill("#password", "wrong")
            ann.click("#login")
            expect(ann.locator("#conn")).to_have_attribute("data-state", "refused")
            ann.fill("#password", "pw")
            ann.click("#login")
            expect(ann.locator("#conn")).to_have_attribute("data-state", "online")
            expect(ann.locator("#notice")).to_have_text("")
            ann.evaluate(RECORD_NOTICES)
            check("a first login says \"account created\"; a wrong password then the right one: online, no \"reconnected\", no \"account created\"")

            for page in (ann, bob):
                page.fill("#room-name", "lobby")
                page.click("#join")
                expect(page.locator("#title")).to_have_text("# lobby")
            # Joins and leaves reach the room's others as they happen: a line in the pane, the count live.
            lobby = ann.locator('#rooms li[data-room="lobby"]')
            expect(ann.locator("#messages li.event").filter(has_text="bob joined lobby (2 members)")).to_be_visible()
            expect(lobby).to_have_text("# lobby (2)")
            check("\"bob joined lobby\" shown in ann's pane, the room's count live")
            lines = [f"line {number} from bob" for number in range(1, 61)]
            lines[30] = "a long word " + "x" * 300
            bob.evaluate("texts => { for (const text of texts) submitMessage(text); }", lines)
            expect(ann.locator('li.msg[data-from="bob"]')).to_have_count(60)
            expect(room_message(ann, "bob", "line 60 from bob")).to_be_in_viewport()
            check_conversation_fits(ann.evaluate(LAYOUT), "1280x800")
            check("60 messages at 1280x800: the pane scrolls, the page does not, composer and newest message in view")

            # A reader scrolled up is left there; the marker takes them down to what came meanwhile.
            ann.evaluate('document.getElementById("messages").scrollTop = 0')
            bob.fill("#text", "while ann reads the start")
            bob.press("#text", "Enter")
            expect(room_message(ann, "bob", "while ann reads the start")).to_have_count(1)
            expect(ann.locator("#new-messages")).to_be_visible()
            assert ann.evaluate('document.getElementById("messages").scrollTop') == 0, "the reader was moved"
            expect(room_message(ann, "bob", "while ann reads the start")).not_to_be_in_viewport()
            ann.click("#new-messages")
            expect(room_message(ann, "bob", "while ann reads the start")).to_be_in_viewport()
            expect(ann.locator("#new-messages")).to_be_hidden()
            check("scrolled up: not moved by a new message, a \"new messages\" marker shown; a click on it shows the newest")
            ann.fill("#text", "back at the end, bob")
            ann.press("#text", "Enter")
            expect(room_message(ann, "ann", "back at the end, bob")).to_have_attribute("data-state", "acked")
            screenshot(ann, "chat-page-1280x800.png")

            ann.set_viewport_size({"width": 400, "height": 800})
            layout = ann.evaluate(LAYOUT)
            assert layout["document"]["width"] <= 400, f"the page is wider than the window: {layout}"
            assert layout["nav"]["right"] <= 0, f"the rooms are beside the conversation at 400 px: {layout}"
            assert layout["narrowestText"] >= 150, f"a message's text is squeezed: {layout}"
            check_conversation_fits(layout, "400 px")
            ann.click("#menu")
            expect(ann.locator('#rooms li[data-room="lobby"]')).to_be_in_viewport()
            layout = ann.evaluate(LAYOUT)
            assert in_window(layout["nav"], layout), f"the opened drawer is not in the window: {layout}"
            ann.click('#rooms li[data-room="lobby"]')
            expect(ann.locator("#chat")).not_to_have_class(re.compile("drawer-open"))
            check("400 px wide: the rooms in a drawer, nothing wider than the window, composer and send button in view")
            screenshot(ann, "chat-page-400.png")
            ann.set_viewport_size(window)

            # After the screenshots: carol, once out of the room, is no contact whose leaving ann hears of.
            carol = browser.new_context(viewport=window).new_page()
            log_in(carol, node.url, "carol")
            carol.fill("#room-name", "lobby")
            carol.click("#join")
            expect(ann.locator("#messages li.event").filter(has_text="carol joined lobby (3 members)")).to_be_visible()
            expect(lobby).to_have_text("# lobby (3)")
            carol.click("#leave")
            expect(ann.locator("#messages li.event").filter(has_text="carol left lobby (2 members)")).to_be_visible()
            expect(lobby).to_have_text("# lobby (2)")
            carol.context.close()
            check("\"carol joined lobby\", then \"carol left lobby\" shown in the room, its count live")

            expect(ann.locator("#online li").filter(has_text="bob")).to_have_count(1)
            node.stop()  # SIGTERM: the graceful stop
            expect(ann.locator("#conn")).to_have_attribute("data-state", "reconnecting")
            expect(ann.locator("#notice")).to_have_text(re.compile(r"^the node is restarting; reconnecting in \d+ s$"))
            assert 1001 in ann.evaluate("window.closeCodes"), ann.evaluate("window.closeCodes")
            expect(ann.locator("#online")).to_have_class(re.compile(r"\bstale\b"))
            assert float(ann.eval_on_selector("#online", "e => getComputedStyle(e).opacity")) < 1
            node.start()
            expect(ann.locator("#conn")).to_have_attribute("data-state", "online", timeout=15_000)
            expect(ann.locator("#notice")).to_have_text("reconnected")
            expect(ann.locator("#online")).not_to_have_class(re.compile(r"\bstale\b"))
            seen = ann.evaluate("window.noticesSeen")
            assert not any("connection lost" in text or "1006" in text for text in seen), seen
            check("graceful stop: close 1001, \"the node is restarting; reconnecting in N s\" until back, online list greyed meanwhile")

            # The node closes for a reason it gives in an ERROR first: the page says the reason, not the code.
            ann.evaluate('app.ws.send(JSON.stringify({ command: "NO_SUCH_COMMAND", serial: 4242 }))')
            expect(ann.locator("#notice")).to_have_text(re.compile(r"^connection lost: (?!closed ).*NO_SUCH_COMMAND"))
            expect(ann.locator("#conn")).to_have_attribute("data-state", "online")
            check("a close that follows the node's ERROR shows the node's reason, not the close code")

            # A long outage: the wait is capped at 10 s, and a click on the badge does not wait it out.
            node.kill()
            expect(ann.locator("#conn")).to_have_attribute("data-state", "reconnecting")
            ann.evaluate("app.attempts = 20")  # as after a long outage
            ann.wait_for_function("app.attempts > 20 && app.reconnectAt !== null", timeout=15_000)
            planned, left = ann.evaluate("[app.reconnectAt, app.reconnectAt - Date.now()]")
            assert 0 < left <= 10_000, f"the next attempt in {left} ms"
            expect(ann.locator("#conn")).to_have_text(re.compile(r"^reconnecting in (\d|10)\.\d s$"))
            node.start()
            ann.click("#conn")
            expect(ann.locator("#conn")).to_have_attribute("data-state", "online")
            assert ann.evaluate("Date.now()") < planned, "online only when the wait was over: the click did nothing"
            check("after a long outage the wait is at most 10 s, and a click on the badge reconnects at once")
            browser.close()
        return run.passed()
    except Exception as error:  # report, with the node's log, and fail
        return run.failed(error)
    finally:
        node.stop()


if __name__ == "__main__":
    sys.exit(main())
