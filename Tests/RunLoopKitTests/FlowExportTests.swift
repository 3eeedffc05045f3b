import Foundation
import RunLoopKit
import RunLoopTesting
import Testing

/// One message's way across three loops, marked at given times (the recorders need no loop): how
/// both exports join its steps into arrows. Foundation reads them back.
@Suite struct FlowExportTests {
    private static func at(_ microseconds: UInt64) -> LoopInstant { LoopInstant(nanoseconds: microseconds * 1000) }

    /// alice's SEND of "m1" goes out at 1 ms and is lost, again at 5 ms, and reaches the node at
    /// 5.3 ms; the node acknowledges at 6 ms (alice reads it at 6.2) and delivers to bob at 6.1 (he
    /// reads it at 6.4); bob's DELIVER_ACK leaves at 6.5, stamped after the node's read of it at
    /// 6.45 (two threads' clocks race). The node also reads a SEND of "m2" that no lane sent.
    private static func lanes() -> [(name: String, recorder: ActivityRecorder)] {
        let alice = ActivityRecorder(), node = ActivityRecorder(), bob = ActivityRecorder()
        alice.mark("connected", at: at(0))
        alice.mark("SEND", flow: .departure("m1", hop: "SEND alice"), at: at(1000))
        alice.mark("SEND", flow: .departure("m1", hop: "SEND alice"), at: at(5000))
        node.mark("SEND", flow: .arrival("m1", hop: "SEND alice"), at: at(5300))
        node.mark("SEND_ACK", flow: .departure("m1", hop: "SEND_ACK alice"), at: at(6000))
        alice.mark("SEND_ACK", flow: .arrival("m1", hop: "SEND_ACK alice"), at: at(6200))
        node.mark("DELIVER", flow: .departure("m1", hop: "DELIVER bob"), at: at(6100))
        bob.mark("DELIVER", flow: .arrival("m1", hop: "DELIVER bob"), at: at(6400))
        node.mark("DELIVER_ACK", flow: .arrival("m1", hop: "DELIVER_ACK bob"), at: at(6450))
        bob.mark("DELIVER_ACK", flow: .departure("m1", hop: "DELIVER_ACK bob"), at: at(6500))
        node.mark("SEND", flow: .arrival("m2", hop: "SEND carol"), at: at(7000))
        return [("alice's loop", alice), ("the node", node), ("bob's loop", bob)]
    }

    @Test(
        "the Chrome trace: an \"s\" and an \"f\" with one id per hop, from the departure's lane to the arrival's — the resend, not the lost send; a departure stamped after its arrival still joined; an arrival nobody sent, no flow"
    )
    func chromeTraceFlowsPairUp() throws {
        let trace = try ChromeTraceReading(json: ChromeTrace.render(title: "one message", lanes: Self.lanes()))
        #expect(trace.problems.isEmpty, "\(trace.problems)")
        let alice = try #require(trace.thread(named: "alice's loop · events"))
        let node = try #require(trace.thread(named: "the node · events"))
        let bob = try #require(trace.thread(named: "bob's loop · events"))
        let flows = trace.flows.map { "\($0.name): \($0.fromThread)@\($0.fromTime) → \($0.toThread)@\($0.toTime)" }
        #expect(
            flows.sorted() == [
                "DELIVER bob: \(node)@6100.0 → \(bob)@6400.0",
                "DELIVER_ACK bob: \(bob)@6500.0 → \(node)@6450.0",
                "SEND alice: \(alice)@5000.0 → \(node)@5300.0",
                "SEND_ACK alice: \(node)@6000.0 → \(alice)@6200.0"
            ], "\(flows)")
        #expect(Set(trace.flows.map(\.id)).count == 4, "one id per arrow")
        #expect(trace.instants.filter { $0.name == "SEND" }.count == 4, "the marks themselves stay instants")
    }

    @Test("the page: each arrow as lane and mark of both ends, each mark with its path")
    func pageEmbedsArrows() throws {
        let html = TimelineHTML.render(title: "one message", lanes: Self.lanes())
        let open = try #require(html.range(of: #"<script type="application/json" id="timeline-data">"#))
        let close = try #require(html.range(of: "</script>", range: open.upperBound..<html.endIndex))
        let data = try #require(try JSONSerialization.jsonObject(with: Data(html[open.upperBound..<close.lowerBound].utf8)) as? [String: Any])
        let arrows = try #require(data["arrows"] as? [[Int]])
        // In arrival order; marks by their place in their lane (alice: connected, SEND, SEND, SEND_ACK).
        #expect(arrows == [[0, 2, 1, 0], [1, 1, 0, 3], [1, 2, 2, 0], [2, 1, 1, 3]], "\(arrows)")
        let lanes = try #require(data["lanes"] as? [[String: Any]])
        let aliceMarks = try #require(lanes[0]["marks"] as? [[Any]])
        #expect(aliceMarks[0][4] is NSNull && aliceMarks[1][4] as? String == "m1")
        #expect(html.contains("function drawArrows(") && html.contains("function showPath("))
    }
}
