"""A large room on the chat node's page, as a person sees it, in Chromium driven by Playwright against a real
`chat-node serve --large-room-members 2` (docs/PROTOCOL.md section 8: past the size the node sends no
presence of a room's members and no joins or leaves, so their presence is unknown, not "offline").

- In a room at the size: the count under the room's name, no warning, the others in "online contacts".
- The member who makes it large sees "3 members · presence not shown" under the name, a "large" mark on
  the room in the list and, by the empty online list, that the room's members' presence is not shown.
- A member already in the room hears nothing (no MEMBERSHIP), and learns the count from the room list:
  the same warning then.
- A LEAVE back to the size is announced: the count and the warning switch back, live.
- Each text is in the window, beside nothing it overlaps, at 1280x800 and 400 px wide.

Screenshots go to --screenshots (`chat-page-large-room.png`).
Run by Tests/ChatNodeTests/BrowserPageTests.swift; by hand:
    .build-python/bin/python Tests/BrowserClient/browser_large_room.py --chat-node .build/debug/chat-node
Exit 0 and a last line `{"ok": true, ...}` when every check held.
"""
import sys

from playwright.sync_api import expect, sync_playwright

from browser_chat import ScriptRun, log_in, say

# Where the room's line, the warning by the online list and the title are, as a person would see them.
BOXES = """() => {
  const box = (id) => {
    const element = document.getElementById(id);
    const r = element.getBoundingClientRect();
    return { top: r.top, bottom: r.bottom, left: r.left, right: r.right, width: r.width, height: r.height,
      visible: element.checkVisibility() };
  };
  return { viewport: { width: innerWidth, height: innerHeight }, documentWidth: document.documentElement.scrollWidth,
    title: box("title"), info: box("room-info"), unknown: box("presence-unknown"), messages: box("messages") };
}"""


def check_boxes(page, what, warning_in_view=True):
    """The room's line is wholly in the window, under the title and above the messages; nothing is wider than the window."""
    boxes = page.evaluate(BOXES)
    view = boxes["viewport"]
    info = boxes["info"]
    assert boxes["documentWidth"] <= view["width"], f"{what}: wider than the window: {boxes}"
    assert info["visible"] and info["width"] > 0 and 0 <= info["left"] and info["right"] <= view["width"], f"{what}: {boxes}"
    assert boxes["title"]["bottom"] <= info["top"] + 1 and info["bottom"] <= boxes["messages"]["top"] + 1, f"{what}: overlaps: {boxes}"
    if warning_in_view:
        unknown = boxes["unknown"]
        assert unknown["visible"] and unknown["height"] > 0 and unknown["right"] <= view["width"], f"{what}: {boxes}"


def main():
    run = ScriptRun("chat-node-large-room-")
    arguments, node, check, screenshot = run.arguments, run.node, run.check, run.screenshot
    node.extra = ["--large-room-members", "2"]
    try:
        node.start()
        check(f"node up with a large-room size of 2: IM on {node.port}, page {node.url}")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=arguments.chromium, args=["--no-sandbox"])
            expect.set_options(timeout=10_000)
            window = {"width": 1280, "height": 800}
            pages = {}
            for user in ("ann", "bob", "carol"):
                pages[user] = browser.new_context(viewport=window).new_page()
                log_in(pages[user], node.url, user)
            ann, bob, carol = pages["ann"], pages["bob"], pages["carol"]
            assert ann.evaluate("app.largeRoomMembers") == 2, "LOGIN_ACK's limits.largeRoomMembers not read"

            for page in (ann, bob):
                page.fill("#room-name", "town")
                page.click("#join")
                expect(page.locator("#title")).to_have_text("# town")
            expect(ann.locator("#messages li.event").filter(has_text="bob joined town (2 members)")).to_be_visible()
            expect(ann.locator("#room-info")).to_have_text("2 members")
            expect(ann.locator("#presence-unknown")).to_be_hidden()
            expect(ann.locator("#online li").filter(has_text="bob")).to_have_count(1)
            check("at the size: \"2 members\" under the name, no warning, bob among ann's online contacts")

            carol.fill("#room-name", "town")
            carol.click("#join")
            expect(carol.locator("#title")).to_have_text("# town")
            expect(carol.locator("#room-info")).to_have_text("3 members · presence not shown")
            expect(carol.locator("#presence-unknown")).to_have_text("presence of # town's members not shown: a large room")
            expect(carol.locator("#presence-unknown")).to_be_visible()
            expect(carol.locator('#rooms li[data-room="town"][data-large]')).to_have_text("# town (3)")
            mark = carol.eval_on_selector('#rooms li[data-room="town"]', "e => getComputedStyle(e, '::after').content")
            assert mark == '"large"', f"the room list's mark: {mark}"
            expect(carol.locator("#online li")).to_have_count(0)
            check_boxes(carol, "1280x800")
            check("the third member: \"3 members · presence not shown\" under the name, \"large\" in the list, a note by the empty online list")

            say(bob, "welcome to town, carol")
            say(carol, "thanks! who is around?")
            expect(carol.locator('li.msg[data-from="carol"]').filter(has_text="who is around")).to_have_attribute("data-state", "acked")
            expect(carol.locator('li.msg[data-from="bob"]').filter(has_text="welcome to town")).to_be_visible()
            screenshot(carol, "chat-page-large-room.png")

            # ann was told nothing (a large room's joins are not announced) until she reads the room list.
            expect(ann.locator("#messages li.event").filter(has_text="carol joined")).to_have_count(0)
            expect(ann.locator("#room-info")).to_have_text("2 members")
            ann.click("#refresh-rooms")
            expect(ann.locator("#room-info")).to_have_text("3 members · presence not shown")
            expect(ann.locator("#presence-unknown")).to_be_visible()
            check("a member who heard nothing learns the count from the room list, and then sees the same warning")

            carol.set_viewport_size({"width": 400, "height": 700})
            check_boxes(carol, "400 px", warning_in_view=False)
            carol.click("#menu")
            expect(carol.locator("#presence-unknown")).to_be_in_viewport()
            carol.click('#rooms li[data-room="town"]')
            check("400 px wide: the room's line fits under the name; the note is in the drawer with the online list")
            carol.set_viewport_size(window)

            carol.click("#leave")
            expect(ann.locator("#messages li.event").filter(has_text="carol left town (2 members)")).to_be_visible()
            expect(ann.locator("#room-info")).to_have_text("2 members")
            expect(ann.locator("#presence-unknown")).to_be_hidden()
            expect(ann.locator('#rooms li[data-room="town"]:not([data-large])')).to_have_text("# town (2)")
            check("carol leaves: back at the size, announced, and ann's page shows the count without the warning")
            browser.close()
        return run.passed()
    except Exception as error:  # report, with the node's log, and fail
        return run.failed(error)
    finally:
        node.stop()


if __name__ == "__main__":
    sys.exit(main())
