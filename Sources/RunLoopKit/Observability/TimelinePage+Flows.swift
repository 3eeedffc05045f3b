extension TimelinePage {
    /// The part of the page's script that draws the flows' arrows (``FlowArrow``, embedded as
    /// `data.arrows`: lane and mark of each end) and, for the path a click picked, highlights them
    /// and lists its steps: which loop did what when, and how long each hop took — over the wire to
    /// an arrival, or inside one loop between two of its steps (the node storing a message).
    /// Function declarations only, which the drawing script calls.
    static let flowScript = #"""
        let selectedPath = null;

        function markOf(lane, index) { return data.lanes[lane].marks[index]; }

        // Each arrow's ends: x at its marks' times, y at their lanes' mark triangles.
        function drawArrows(group, x, markY) {
          const defs = el("defs", {});
          for (const [id, color] of [["arrowhead", "#7f8c8d"], ["arrowhead-on", "#c0392b"]]) {
            const head = el("marker", { id, viewBox: "0 0 8 8", refX: 8, refY: 4, markerWidth: 8, markerHeight: 8,
              markerUnits: "userSpaceOnUse", orient: "auto" });
            head.appendChild(el("path", { d: "M0,0 L8,4 L0,8 Z", fill: color }));
            defs.appendChild(head);
          }
          group.appendChild(defs);
          for (const [fromLane, fromMark, toLane, toMark] of data.arrows) {
            const from = markOf(fromLane, fromMark), to = markOf(toLane, toMark);
            if (Math.max(from[0], to[0]) < view.start || Math.min(from[0], to[0]) > view.end) continue;
            const on = from[4] === selectedPath;
            const line = el("line", { x1: x(from[0]), y1: markY(fromLane), x2: x(to[0]), y2: markY(toLane),
              stroke: on ? "#c0392b" : "#7f8c8d", "stroke-width": on ? 2.5 : 1, "stroke-opacity": on ? 1 : 0.45,
              "marker-end": on ? "url(#arrowhead-on)" : "url(#arrowhead)", class: on ? "flow on-path" : "flow",
              "data-from": fromLane + ":" + fromMark, "data-to": toLane + ":" + toMark });
            const took = duration(Math.max(0, to[0] - from[0]));
            group.appendChild(hit(titled(line, data.lanes[fromLane].name + " " + from[2] + " → " + data.lanes[toLane].name +
              " " + to[2] + " — took " + took), { what: from[2] + " → " + to[2], path: from[4], took }));
          }
        }

        // The picked path's steps in time order, each with how long it came after the step before it
        // on the path: its arrow's departure for an arrival, else the path's last step on its lane.
        function pathSteps(path) {
          const steps = [];
          data.lanes.forEach((lane, laneIndex) => lane.marks.forEach((mark, markIndex) => {
            if (mark[4] === path) steps.push({ lane: laneIndex, mark: markIndex, at: mark[0], label: mark[2] });
          }));
          steps.sort((a, b) => a.at - b.at);
          const cameFrom = new Map(data.arrows.map(([fl, fm, tl, tm]) => [tl + ":" + tm, fl + ":" + fm]));
          const byKey = new Map(steps.map((step, index) => [step.lane + ":" + step.mark, index]));
          return steps.map((step, index) => {
            const arrow = cameFrom.get(step.lane + ":" + step.mark);
            let before = arrow !== undefined ? byKey.get(arrow) : undefined, how = "over the wire";
            if (before === undefined) {
              how = "in " + data.lanes[step.lane].name;
              for (let earlier = index - 1; earlier >= 0; earlier--) if (steps[earlier].lane === step.lane) { before = earlier; break; }
            }
            return { ...step, before, how };
          });
        }

        function showPath(path) {
          const list = document.createElement("ol");
          list.id = "path-steps";
          const steps = pathSteps(path);
          steps.forEach((step) => {
            const item = document.createElement("li");
            item.className = "hop";
            let text = data.lanes[step.lane].name + ": " + step.label + " at " + at(step.at);
            if (step.before !== undefined) {
              const previous = steps[step.before];
              text += " — " + duration(Math.max(0, step.at - previous.at)) + " after " + previous.label + " (" + step.how + ")";
            }
            item.textContent = text;
            list.appendChild(item);
          });
          const heading = document.createElement("h3");
          heading.textContent = "Its path: " + steps.length + " steps, " +
            (steps.length ? duration(steps[steps.length - 1].at - steps[0].at) : "0") + " end to end";
          details.append(heading, list);
        }
        """#
}
