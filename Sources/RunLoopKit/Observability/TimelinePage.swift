/// The page around a ``TimelineHTML`` recording: its styles and the script that draws the recording
/// (embedded as JSON) into an SVG that fills the window, redrawn on each zoom and pan.
enum TimelinePage {
    /// The page for `data` (the JSON ``TimelineHTML`` makes), or one that says nothing was recorded.
    static func html(title: String, data: String?) -> String {
        // "</" would end the script element early; "<\/" is the same JSON string.
        let embedded = (data ?? "null").replacing("</", with: "<\\/")
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title>
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <style>\(style)</style>
            </head><body>
            <header><h1>\(escape(title))</h1>
            <div id="toolbar"><button id="zoom-in" title="zoom in (or the mouse wheel)">+</button>\
            <button id="zoom-out" title="zoom out">−</button><button id="zoom-fit" title="the whole run">whole run</button>\
            <span id="view-range"></span></div>
            <p class="legend"><span class="key sleep">asleep (hover: what woke it)</span>\
            <span class="key T">timer</span><span class="key P">I/O (socket)</span><span class="key S">source</span>\
            <span class="key B">block</span><span class="key mark">event</span><span class="key span">stretch (outage, silence)</span>\
            <span class="key flow">→ a message's way between loops</span> — wheel or buttons to zoom, drag to pan, click anything for its details.</p></header>
            <main><div id="chart">\(data == nil ? "<p>Nothing was recorded.</p>" : "")</div>
            <aside id="details"><h2>Details</h2><div id="details-body">Click a mark, a span, a callout or a sleep; a message's mark for its whole path.</div></aside></main>
            <script type="application/json" id="timeline-data">\(embedded)</script>
            <script>"use strict";
            \(flowScript)
            \(script)</script>
            </body></html>

            """
    }

    private static func escape(_ text: String) -> String {
        text.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;").replacing("\"", with: "&quot;")
    }

    private static let style = """
        html,body{height:100%;margin:0}
        body{font-family:system-ui,sans-serif;color:#222;display:flex;flex-direction:column}
        header{padding:8px 16px 0}
        h1{font-size:1.2em;margin:0 0 6px}
        #toolbar button{font-size:1em;min-width:2.2em;margin-right:4px}
        #view-range{margin-left:8px;color:#555}
        .legend{margin:6px 0;font-size:.85em}
        .key{padding:1px 7px;margin-right:6px;border-radius:3px}
        .sleep{background:#e4e4e4}.T{background:#f39c12}.P{background:#2e86de;color:#fff}.S{background:#27ae60;color:#fff}
        .B{background:#8e44ad;color:#fff}.mark{background:#fff;border:1px solid #c0392b;color:#c0392b}.span{background:#f5b7b1}.flow{color:#7f8c8d}
        main{flex:1;display:flex;min-height:0;border-top:1px solid #ddd}
        #chart{flex:1;min-width:0;overflow-y:auto;cursor:grab}
        #chart.dragging{cursor:grabbing}
        #chart svg{display:block;user-select:none}
        #details{width:280px;padding:8px 12px;border-left:1px solid #ddd;overflow-y:auto;font-size:.9em}
        #details h2{font-size:1em;margin:4px 0}
        #details dt{font-weight:bold;margin-top:6px}#details dd{margin:0}
        #details h3{font-size:.95em;margin:10px 0 4px}#path-steps{padding-left:1.4em;margin:0}#path-steps li{margin-bottom:4px}
        @media (max-width:700px){main{flex-direction:column}#details{width:auto;border-left:0;border-top:1px solid #ddd;max-height:30%}}
        .lane-name{font-weight:bold;font-size:13px}.lane-summary{font-size:11px;fill:#555}
        .mark-label{font-size:11px;fill:#c0392b}.span-label{font-size:11px;fill:#7b241c;pointer-events:none}.axis{font-size:11px;fill:#666}
        .marker-label{font-size:11px;fill:#555;font-style:italic}
        .hit{cursor:pointer}
        """

    private static let script = #"""
        const data = JSON.parse(document.getElementById("timeline-data").textContent);
        const chart = document.getElementById("chart");
        const details = document.getElementById("details-body");
        const NS = "http://www.w3.org/2000/svg";
        const LEFT = 190, RIGHT = 16, AXIS = 28, MARKERS = 18;
        const colors = { T: "#f39c12", P: "#2e86de", S: "#27ae60", B: "#8e44ad", O: "#999" };
        const kinds = { T: "timer", P: "I/O source", S: "custom source", B: "block", O: "observer" };
        let view = data ? { start: 0, end: Math.max(data.end, 1) } : null;
        let drawnItems = [];

        function duration(us) {
          if (us >= 1e6) return (us / 1e6).toFixed(3) + " s";
          if (us >= 1e3) return (us / 1e3).toFixed(3) + " ms";
          return us.toFixed(3) + " µs";
        }
        function at(us) { return "+" + (us / 1e6).toFixed(6) + " s"; }
        function el(name, attributes, text) {
          const node = document.createElementNS(NS, name);
          for (const key in attributes) node.setAttribute(key, attributes[key]);
          if (text !== undefined) node.textContent = text;
          return node;
        }
        function titled(node, text) { node.appendChild(el("title", {}, text)); return node; }
        function hit(node, item) {
          node.classList.add("hit");
          node.dataset.item = drawnItems.length;
          drawnItems.push(item);
          return node;
        }
        function niceStep(span, pixels) {
          const rough = span / Math.max(1, pixels / 110);
          const power = Math.pow(10, Math.floor(Math.log10(rough)));
          for (const factor of [1, 2, 5, 10]) if (power * factor >= rough) return power * factor;
          return power * 10;
        }
        function tickLabel(us, step) {
          if (step >= 1e6) return (us / 1e6).toFixed(0) + " s";
          if (step >= 1e3) return (us / 1e6).toFixed(Math.max(0, 3 - Math.round(Math.log10(step / 1e3)))) + " s";
          return (us / 1e3).toFixed(Math.max(0, 3 - Math.round(Math.log10(step)))) + " ms";
        }

        function draw() {
          if (!data) return;
          drawnItems = [];
          const width = Math.max(480, chart.clientWidth);
          const plot = width - LEFT - RIGHT;
          const laneHeight = Math.max(96, Math.min(220, (chart.clientHeight - AXIS - MARKERS - 4) / data.lanes.length));
          const height = MARKERS + data.lanes.length * laneHeight + AXIS;
          const scale = plot / (view.end - view.start);
          const x = (us) => LEFT + (us - view.start) * scale;
          const visible = (from, to) => to >= view.start && from <= view.end;
          const svg = el("svg", { width, height, "font-family": "system-ui,sans-serif" });
          const clip = el("clipPath", { id: "plot" });
          clip.appendChild(el("rect", { x: LEFT, y: 0, width: plot, height }));
          svg.appendChild(clip);
          const plotGroup = el("g", { "clip-path": "url(#plot)" });
          const marksGroup = el("g", {});  // on top of the arrows, which are on top of the rest

          const step = niceStep(view.end - view.start, plot);
          for (let tick = Math.ceil(view.start / step) * step; tick <= view.end; tick += step) {
            plotGroup.appendChild(el("line", { x1: x(tick), x2: x(tick), y1: MARKERS, y2: height - AXIS, stroke: "#eee", "pointer-events": "none" }));
            svg.appendChild(el("text", { x: x(tick), y: height - 10, "text-anchor": "middle", class: "axis" }, tickLabel(tick, step)));
          }

          data.lanes.forEach((lane, index) => {
            const top = MARKERS + index * laneHeight;
            const markBand = 44, spanBand = 16;
            const workTop = top + markBand + spanBand + 6, workHeight = laneHeight - markBand - spanBand - 14;
            svg.appendChild(el("rect", { x: 0, y: top, width, height: laneHeight, fill: index % 2 ? "#fcfcfc" : "#f6f8fa" }));
            svg.appendChild(el("text", { x: 8, y: top + 18, class: "lane-name" }, lane.name));
            const s = lane.summary;
            const summary = [
              s.wakeUpsPerSecond.toFixed(1) + " wake-ups/s (" + s.wakeUps + ")",
              s.busyPercent.toFixed(2) + " % busy",
              s.longest ? "longest " + duration(s.longest[1]) : "no callouts",
            ];
            summary.forEach((line, row) => {
              const text = el("text", { x: 8, y: top + 36 + row * 14, class: "lane-summary" }, line);
              if (row === 2 && s.longest) titled(text, "longest callout: " + s.longest[0] + ", " + duration(s.longest[1]));
              svg.appendChild(text);
            });

            const sleepBand = workTop + workHeight * 0.35;
            for (const [from, to, woken] of lane.sleeps) {
              if (!visible(from, to) || (to - from) * scale < 0.5) continue;
              plotGroup.appendChild(hit(titled(el("rect", { x: x(from), y: sleepBand, width: Math.max(0.5, (to - from) * scale),
                height: workHeight * 0.3, fill: "#e4e4e4" }), "asleep " + duration(to - from) + " from " + at(from) +
                "\nwoken by " + (woken || "nothing (a timeout or a spurious wake-up)")),
                { what: "asleep", lane: lane.name, from, to, "woken by": woken || "nothing (a timeout or a spurious wake-up)" }));
            }

            const rowHeight = Math.max(6, workHeight / 4);
            const merged = new Map();
            for (const [from, to, kind, name, level] of lane.callouts) {
              if (!visible(from, to)) continue;
              const column = Math.floor(x(from));
              const key = level + ":" + column;
              const entry = merged.get(key);
              if (entry && (to - from) * scale < 1) { entry.count += 1; continue; }
              merged.set(entry ? key + ":" + from : key, { from, to, kind, name, level, count: 1 });
            }
            for (const c of merged.values()) {
              const y = workTop + Math.min(c.level, 3) * rowHeight;
              const left = Math.max(x(c.from), LEFT - 2);
              const w = Math.max(1, x(c.to) - left);
              const tip = c.name + " — at " + at(c.from) + ", took " + duration(c.to - c.from) +
                (c.count > 1 ? "\n(and " + (c.count - 1) + " more in this pixel: zoom in)" : "");
              plotGroup.appendChild(hit(titled(el("rect", { x: left, y, width: w, height: rowHeight - 1, fill: colors[c.kind] }), tip),
                { what: c.name, kind: kinds[c.kind], lane: lane.name, from: c.from, to: c.to, nesting: c.level, "in this pixel": c.count }));
              if (w > 60) plotGroup.appendChild(el("text", { x: left + 3, y: y + rowHeight - 3, "font-size": 10, fill: "#fff", "pointer-events": "none" }, c.name));
            }

            // Labels go where they fit, the rarest first (a ping timeout before the hundredth heartbeat).
            const labels = [];
            for (const [markIndex, [from, to, label, detail, path]] of lane.marks.entries()) {
              if (to !== null) {
                if (!visible(from, to)) continue;
                const left = Math.max(x(from), LEFT), right = Math.min(x(Math.max(to, from)), width - RIGHT);
                const y = top + markBand;
                const bar = el("rect", { x: left, y, width: Math.max(2, right - left), height: spanBand - 2, fill: "#f5b7b1", stroke: "#c0392b" });
                plotGroup.appendChild(hit(titled(bar, label + " — from " + at(from) + " for " + duration(to - from) + (detail ? "\n" + detail : "")),
                  { what: label, lane: lane.name, from, to, detail }));
                plotGroup.appendChild(el("text", { x: left + 4, y: y + spanBand - 5, class: "span-label" }, label + " (" + duration(to - from) + ")"));
                continue;
              }
              if (from < view.start || from > view.end) continue;
              const px = x(from);
              const tip = label + " — at " + at(from) + (detail ? "\n" + detail : "") + (path ? "\nclick: its whole path" : "");
              const item = { what: label, lane: lane.name, at: from, detail, path };
              const onPath = path !== null && path === selectedPath;
              marksGroup.appendChild(hit(titled(el("path", { d: `M${px - 4},${top + 4} L${px + 4},${top + 4} L${px},${top + 11} Z`,
                fill: "#c0392b", stroke: onPath ? "#222" : "none", "stroke-width": 2, class: onPath ? "mark on-path" : "mark",
                "data-mark": index + ":" + markIndex }), tip), item));
              plotGroup.appendChild(el("line", { x1: px, x2: px, y1: top + 11, y2: top + laneHeight - 6, stroke: "#c0392b", "stroke-opacity": 0.25, "pointer-events": "none" }));
              labels.push({ px, label, tip, item });
            }
            const frequency = new Map();
            for (const { label } of labels) frequency.set(label, (frequency.get(label) || 0) + 1);
            labels.sort((a, b) => frequency.get(a.label) - frequency.get(b.label) || a.px - b.px);
            const rows = [[], [], []];
            for (const { px, label, tip, item } of labels) {
              const right = px + label.length * 6.2 + 6;
              const row = rows.findIndex((taken) => taken.every(([l, r]) => right < l || px > r));
              if (row < 0) continue;
              rows[row].push([px, right]);
              marksGroup.appendChild(hit(titled(el("text", { x: px + 2, y: top + 22 + row * 11, class: "mark-label" }, label), tip), item));
            }
          });

          drawArrows(plotGroup, x, (lane) => MARKERS + lane * laneHeight + 8);
          plotGroup.appendChild(marksGroup);

          let lastLabel = -Infinity;
          for (const [time, label] of data.markers) {
            if (time < view.start || time > view.end) continue;
            const px = x(time);
            plotGroup.appendChild(el("line", { x1: px, x2: px, y1: 4, y2: height - AXIS, stroke: "#555", "stroke-dasharray": "4 3", "pointer-events": "none" }));
            if (px > lastLabel) {
              plotGroup.appendChild(hit(titled(el("text", { x: px + 3, y: 13, class: "marker-label" }, label), label + " — at " + at(time)),
                { what: label, at: time }));
              lastLabel = px + label.length * 6 + 8;
            }
          }
          svg.appendChild(plotGroup);
          chart.replaceChildren(svg);
          document.getElementById("view-range").textContent = at(view.start) + " … " + at(view.end) + " (" + duration(view.end - view.start) + " shown)";
        }

        function show(item) {
          const list = document.createElement("dl");
          const rows = Object.entries(item).filter(([, value]) => value !== null && value !== undefined);
          if (item.from !== undefined && item.to !== undefined) rows.push(["duration", duration(item.to - item.from)]);
          for (const [key, value] of rows) {
            const dt = document.createElement("dt"), dd = document.createElement("dd");
            dt.textContent = key;
            dd.textContent = ["from", "to", "at"].includes(key) ? at(value) : String(value);
            list.append(dt, dd);
          }
          details.replaceChildren(list);
          if (item.path || selectedPath !== null) {
            selectedPath = item.path || null;
            draw();
          }
          if (item.path) showPath(item.path);
        }

        function zoom(factor, around) {
          const span = view.end - view.start;
          const pivot = around === undefined ? view.start + span / 2 : around;
          const next = Math.min(Math.max(span * factor, 1), Math.max(data.end, 1) * 1.05);
          const ratio = (pivot - view.start) / span;
          view = { start: pivot - ratio * next, end: pivot - ratio * next + next };
          clamp();
          draw();
        }
        function clamp() {
          const span = view.end - view.start, total = Math.max(data.end, 1);
          if (view.start < -total * 0.02) view = { start: -total * 0.02, end: -total * 0.02 + span };
          if (view.end > total * 1.02) view = { start: total * 1.02 - span, end: total * 1.02 };
        }
        function timeAt(clientX) {
          const box = chart.getBoundingClientRect();
          const plot = Math.max(480, chart.clientWidth) - LEFT - RIGHT;
          return view.start + (clientX - box.left - LEFT) / plot * (view.end - view.start);
        }

        if (data) {
          window.timeline = {
            data,
            get view() { return { ...view }; },
            zoomTo(start, end) { view = { start, end: Math.max(end, start + 1) }; draw(); },
            fit() { view = { start: 0, end: Math.max(data.end, 1) }; draw(); },
          };
          document.getElementById("zoom-in").onclick = () => zoom(0.5);
          document.getElementById("zoom-out").onclick = () => zoom(2);
          document.getElementById("zoom-fit").onclick = () => window.timeline.fit();
          chart.addEventListener("wheel", (event) => {
            event.preventDefault();
            if (event.shiftKey) {
              const span = view.end - view.start;
              view = { start: view.start + span * Math.sign(event.deltaY) * 0.1, end: view.end + span * Math.sign(event.deltaY) * 0.1 };
              clamp();
              draw();
            } else {
              zoom(event.deltaY < 0 ? 0.8 : 1.25, timeAt(event.clientX));
            }
          }, { passive: false });
          let drag = null;
          chart.addEventListener("mousedown", (event) => { drag = { x: event.clientX, view: { ...view }, moved: false }; });
          window.addEventListener("mousemove", (event) => {
            if (!drag) return;
            const dx = event.clientX - drag.x;
            if (Math.abs(dx) < 3 && !drag.moved) return;
            drag.moved = true;
            chart.classList.add("dragging");
            const perPixel = (drag.view.end - drag.view.start) / (Math.max(480, chart.clientWidth) - LEFT - RIGHT);
            view = { start: drag.view.start - dx * perPixel, end: drag.view.end - dx * perPixel };
            clamp();
            draw();
          });
          window.addEventListener("mouseup", (event) => {
            if (drag && !drag.moved) {
              const target = event.target.closest ? event.target.closest("[data-item]") : null;
              if (target) show(drawnItems[Number(target.dataset.item)]);
            }
            drag = null;
            chart.classList.remove("dragging");
          });
          window.addEventListener("keydown", (event) => {
            if (event.key === "+" || event.key === "=") zoom(0.5);
            if (event.key === "-") zoom(2);
            if (event.key === "0") window.timeline.fit();
          });
          window.addEventListener("resize", draw);
          draw();
        }
        """#
}
