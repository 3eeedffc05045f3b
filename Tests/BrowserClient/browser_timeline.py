"""The demo's timeline (`chat-node demo`'s chat-node-demo.html) as a person sees it, in Chromium driven by
Playwright: judged by layout (getBoundingClientRect, elementFromPoint), not only by the DOM's text.

- The lanes are named by participant, each with its summary (wake-ups per second, busy %, longest callout).
- The protocol events are labelled and in view: connected, heartbeat, ping timeout, reconnect, the node's
  outage and carol's silent link as spans; zoomed in around a message, SEND, SEND_ACK and DELIVER.
- Hovers say when and how long; a click fills the details panel; the wheel and the buttons zoom, a drag pans.
- One message's way is drawn as arrows between lanes (alice → the node → bob and back), each end at its
  mark's x and its lane's y; a click on its SEND highlights the whole path and lists its steps with each
  hop's latency. No hover, label or callout names a socket by its descriptor number.
- The chart fills the window's height; nothing is wider than the window.
- The same run is beside it as Chrome-trace JSON with named threads, non-negative durations, and flow
  events ("s"/"f" with one id) that pair up along the message's hops.

A screenshot of the whole run and of a zoomed-in message go to --screenshots (`screenshot: PATH` lines).
Run by Tests/ChatNodeTests/BrowserTimelineTests.swift; by hand:
    .build-python/bin/python Tests/BrowserClient/browser_timeline.py --chat-node .build/debug/chat-node
Exit 0 and a last line `{"ok": true, ...}` when every check held.
"""
import json
import os
import re
import subprocess
import sys

from playwright.sync_api import expect, sync_playwright

from browser_chat import ScriptRun, die_with_parent

# A source named by its socket ("tcp read 45") instead of by whom it serves.
DESCRIPTOR = re.compile(r"\b(?:read|write|netlink|fd|socket) \d+\b")

LANES = ["the node", "the node, restarted", "alice's loop", "bob's loop", "carol's loop", "carol's link"]

# Each label text drawn on screen: where, and whether a person would see it (in the window, on top).
LABELS = """(selector) => [...document.querySelectorAll(selector)].map((element) => {
  const r = element.getBoundingClientRect();
  // Labels let clicks through to their bars (pointer-events: none), which hides them from the hit test:
  // whether something is drawn over a label is asked with the label hit-testable for that moment.
  const saved = element.style.pointerEvents;
  element.style.pointerEvents = "auto";
  const onTop = document.elementFromPoint(r.left + Math.min(r.width / 2, 8), r.top + r.height / 2);
  element.style.pointerEvents = saved;
  return {
    text: element.firstChild.nodeValue, width: r.width, height: r.height,
    seen: r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= innerWidth && r.top >= 0 && r.bottom <= innerHeight
      && (onTop === element || element.contains(onTop)),
  };
})"""


def seen(page, selector):
    """The texts of `selector` a person sees."""
    return {label["text"] for label in page.evaluate(LABELS, selector) if label["seen"]}


def main():
    run = ScriptRun("chat-node-timeline-")
    arguments, check, screenshot = run.arguments, run.check, run.screenshot
    try:
        timeline = os.path.join(run.workdir, "chat-node-demo.html")
        demo = subprocess.run(
            [arguments.chat_node, "demo", "--timeline", timeline], stdin=subprocess.DEVNULL, capture_output=True,
            text=True, timeout=120, preexec_fn=die_with_parent)
        assert demo.returncode == 0, demo.stdout + demo.stderr
        trace_path = os.path.join(run.workdir, "chat-node-demo.trace.json")
        assert f"timeline written to {timeline}" in demo.stdout and trace_path in demo.stdout, demo.stdout[-2000:]
        check("the demo ran and wrote its timeline and, beside it, its Chrome trace")

        trace = json.load(open(trace_path))["traceEvents"]
        threads = {event["args"]["name"] for event in trace if event.get("ph") == "M" and event["name"] == "thread_name"}
        assert set(LANES) <= threads, threads
        durations = [event["dur"] for event in trace if event.get("ph") == "X"]
        assert durations and min(durations) >= 0, "a negative duration"
        names = {event["name"] for event in trace}
        assert {"heartbeat", "SEND", "SEND_ACK", "DELIVER", "ping timeout", "node down", "link silent"} <= names, names
        check("the trace names a thread per lane, its durations are non-negative, its marks are the protocol's")

        starts = {event["id"]: event for event in trace if event.get("ph") == "s"}
        finishes = {event["id"]: event for event in trace if event.get("ph") == "f"}
        assert starts and starts.keys() == finishes.keys(), (len(starts), len(finishes))
        assert len(starts) == sum(event.get("ph") == "s" for event in trace), "a flow id used twice"
        thread_of = {event["tid"]: event["args"]["name"] for event in trace if event.get("ph") == "M" and event["name"] == "thread_name"}
        hops = {(thread_of[starts[i]["tid"]], thread_of[finishes[i]["tid"]], starts[i]["name"]) for i in starts}
        for hop in [("alice's loop · events", "the node · events", "SEND alice"), ("the node · events", "alice's loop · events", "SEND_ACK alice"),
                    ("the node · events", "bob's loop · events", "DELIVER bob"), ("bob's loop · events", "the node · events", "DELIVER_ACK bob")]:
            assert hop in hops, f"no flow {hop}: {sorted(hops)[:12]}"
        check("the trace's flow events pair up: an s and an f per id, from alice's SEND to the node, the node's DELIVER to bob, and back")

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=arguments.chromium, args=["--no-sandbox"])
            expect.set_options(timeout=10_000)
            page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
            page.goto("file://" + timeline)
            page.wait_for_selector("#chart svg")

            lanes = seen(page, "text.lane-name")
            assert set(LANES) <= lanes, f"lane names in view: {lanes}"
            summaries = [label["text"] for label in page.evaluate(LABELS, "text.lane-summary") if label["seen"]]
            for part in ("wake-ups/s", "% busy", "longest "):
                assert sum(part in text for text in summaries) >= len(LANES), f"{part!r} per lane: {summaries}"
            check("every lane named by participant, each with wake-ups per second, busy % and its longest callout")

            marks = seen(page, "text.mark-label")
            for label in ("connected", "heartbeat", "ping timeout", "reconnect 1", "reconnected", "node started", "node restarted"):
                assert label in marks, f"{label!r} not in view; labels seen: {sorted(marks)}"
            spans = seen(page, "text.span-label")
            for label in ("node down", "link silent", "offline"):
                assert any(text.startswith(label + " (") for text in spans), f"{label!r} span not in view: {spans}"
            check("the whole run: connected, heartbeat, ping timeout, reconnect, the node down and the silent link, labelled and in view")

            layout = page.evaluate("""() => {
              const chart = document.getElementById("chart").getBoundingClientRect();
              const svg = document.querySelector("#chart svg").getBoundingClientRect();
              return { innerHeight, innerWidth, chartBottom: chart.bottom, svgHeight: svg.height, chartHeight: chart.height,
                       scrollWidth: document.documentElement.scrollWidth };
            }""")
            assert layout["chartBottom"] >= layout["innerHeight"] - 2, layout
            assert layout["svgHeight"] >= layout["chartHeight"] * 0.9, f"the lanes leave the chart empty: {layout}"
            assert layout["scrollWidth"] <= layout["innerWidth"], layout
            screenshot(page, "timeline.png")
            check("the chart fills the window's height, nothing wider than the window")

            tips = page.evaluate("""() => [...document.querySelectorAll("#chart title")].map((t) => t.textContent)""")
            assert any(t.startswith("heartbeat — at +") for t in tips), tips[:5]
            assert any(t.startswith("node down — from +") and " for " in t for t in tips), "no span hover with its duration"
            assert any(" took " in t for t in tips) and any("woken by " in t for t in tips), "no callout or sleep hover"
            before = page.evaluate("timeline.view")
            # A person clicks the words on the bar: a label drawn over a bar or a callout must let the click
            # through to it (a narrow bar's label runs past its end, so no spot of it is free of text).
            label = page.locator("text.span-label").filter(has_text="node down (").first
            label_box = label.bounding_box()
            page.mouse.click(label_box["x"] + min(20, label_box["width"] / 2), label_box["y"] + label_box["height"] / 2)
            expect(page.locator("#details-body")).to_contain_text("node down")
            expect(page.locator("#details-body")).to_contain_text("duration")
            assert page.evaluate("timeline.view") == before, "a click moved the view"
            check("hovers say when and how long, what woke each sleep; a click shows the details")

            page.click("#zoom-in")
            zoomed = page.evaluate("timeline.view")
            assert abs((zoomed["end"] - zoomed["start"]) * 2 - (before["end"] - before["start"])) < 1, (before, zoomed)
            box = page.locator("#chart").bounding_box()
            page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] * 0.5)
            page.mouse.wheel(0, -300)
            page.wait_for_function(f"timeline.view.end - timeline.view.start < {zoomed['end'] - zoomed['start']}")
            wheeled = page.evaluate("timeline.view")
            page.mouse.down()
            page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] * 0.5, steps=5)
            page.mouse.up()
            panned = page.evaluate("timeline.view")
            assert panned["start"] > wheeled["start"], (wheeled, panned)
            check("the buttons and the wheel zoom, a drag pans")

            # Around alice's first SEND: the message's way out and in, down to the callouts.
            alice = next(lane for lane in page.evaluate("timeline.data.lanes") if lane["name"] == "alice's loop")
            sent = next(mark[0] for mark in alice["marks"] if mark[2] == "SEND")
            # 50 ms, or to just past the message's SEND_ACK and first DELIVER when a loaded machine took longer.
            lanes = page.evaluate("timeline.data.lanes")
            delivered = min(mark[0] for lane in lanes for mark in lane["marks"] if mark[2] == "DELIVER" and mark[0] > sent)
            acked = min(mark[0] for mark in alice["marks"] if mark[2] == "SEND_ACK" and mark[0] > sent)
            end = max(sent + 48000, delivered + 2000, acked + 2000)
            page.evaluate(f"timeline.zoomTo({sent - 2000}, {end})")
            marks = seen(page, "text.mark-label")
            assert {"SEND", "SEND_ACK", "DELIVER"} <= marks, f"zoomed in on a message: {sorted(marks)}"
            shown = page.evaluate("timeline.view")
            assert shown["end"] - shown["start"] <= end - sent + 2000.001, shown  # microseconds, in floating point
            assert "ms shown" in page.locator("#view-range").inner_text()
            check("zoomed to 50 ms around alice's first message: SEND, SEND_ACK and DELIVER labelled and in view")

            # The arrows: each end at its mark's triangle (x) on its lane (y), within a few pixels.
            arrows = page.evaluate("""() => [...document.querySelectorAll("line.flow")].map((line) => {
              const end = (key) => { const mark = document.querySelector(`path.mark[data-mark="${key}"]`);
                                     if (!mark) return null;
                                     const box = mark.getBBox();
                                     return { x: box.x, y: box.y, width: box.width, height: box.height }; };
              const [fromLane, toLane] = [line.dataset.from, line.dataset.to].map((key) => timeline.data.lanes[Number(key.split(":")[0])].name);
              return { fromLane, toLane, x1: +line.getAttribute("x1"), y1: +line.getAttribute("y1"), x2: +line.getAttribute("x2"),
                       y2: +line.getAttribute("y2"), from: end(line.dataset.from), to: end(line.dataset.to) };
            })""")
            whole = [arrow for arrow in arrows if arrow["from"] and arrow["to"]]
            # The view holds alice's SEND, its SEND_ACK and the first DELIVER of it, which may be
            # bob's or carol's, whichever loop the node wrote to first.
            pairs = {(arrow["fromLane"], arrow["toLane"]) for arrow in whole}
            assert {("alice's loop", "the node"), ("the node", "alice's loop")} <= pairs, sorted(pairs)
            assert pairs & {("the node", "bob's loop"), ("the node", "carol's loop")}, sorted(pairs)
            for arrow in whole:
                for x, y, box in ((arrow["x1"], arrow["y1"], arrow["from"]), (arrow["x2"], arrow["y2"], arrow["to"])):
                    assert abs(x - (box["x"] + box["width"] / 2)) <= 3, arrow
                    assert box["y"] - 3 <= y <= box["y"] + box["height"] + 3, arrow
            check(f"{len(whole)} arrows between lanes, each end at its mark's x and its lane's y within 3 px: alice → node → a recipient, and back")

            # A click on alice's SEND: its whole path highlighted, its steps with each hop's latency listed.
            first_send = next(index for index, mark in enumerate(alice["marks"]) if mark[2] == "SEND" and mark[0] == sent)
            alice_index = [lane["name"] for lane in lanes].index("alice's loop")
            page.locator(f'path.mark[data-mark="{alice_index}:{first_send}"]').click()
            highlighted = page.evaluate("""() => ({
              arrows: [...document.querySelectorAll("line.flow.on-path")].map((l) => timeline.data.lanes[Number(l.dataset.to.split(":")[0])].name),
              marks: document.querySelectorAll("path.mark.on-path").length,
              others: document.querySelectorAll("line.flow:not(.on-path)").length })""")
            assert {"the node", "alice's loop", "bob's loop"} <= set(highlighted["arrows"]), highlighted
            assert highlighted["marks"] >= 4, highlighted
            steps = page.locator("#path-steps li").all_inner_texts()
            for part in ("alice's loop: SEND at +", "the node: SEND at +", "(over the wire)", "the node: SEND_ACK", "(in the node)", "bob's loop: DELIVER", "alice's loop: SEND_ACK"):
                assert any(part in step for step in steps), f"{part!r} not among the steps: {steps}"
            assert all(" ms after " in step or " µs after " in step or " s after " in step for step in steps[1:]), steps
            path = next(mark[4] for mark in alice["marks"] if mark[0] == sent)
            times = [mark[0] for lane in lanes for mark in lane["marks"] if mark[4] == path]
            margin = (max(times) - min(times)) * 0.15 + 100
            page.evaluate(f"timeline.zoomTo({min(times) - margin}, {max(times) + margin})")
            assert page.locator("line.flow.on-path").count() >= 3, "the path's arrows, zoomed to the path"
            screenshot(page, "timeline-message.png")
            check(f"a click on alice's SEND highlights its path ({len(highlighted['arrows'])} arrows, {highlighted['marks']} marks) and lists {len(steps)} steps with each hop's latency")

            page.click("#zoom-fit")
            shown = page.evaluate("""() => [...document.querySelectorAll("#chart title, #chart text")].map((t) => t.textContent)""")
            names = page.evaluate("""() => timeline.data.lanes.flatMap((lane) => lane.callouts.map((c) => c[3]).concat(lane.sleeps.map((s) => s[2] || "")))""")
            bare = sorted({text for text in shown + names if DESCRIPTOR.search(text)})
            assert not bare, f"named by a descriptor: {bare[:8]}"
            for name in ("I/O alice ↔ node", "I/O node ↔ alice", "I/O node ↔ bob", "I/O carol ↔ link"):
                assert name in names, f"{name!r} not a callout's name: {sorted(set(names))[:20]}"
            check("no hover, label or callout names a bare descriptor: connections are named by who they serve (alice ↔ node, node ↔ bob)")
            browser.close()
        return run.passed()
    except Exception as error:  # report and fail
        return run.failed(error)


if __name__ == "__main__":
    sys.exit(main())
