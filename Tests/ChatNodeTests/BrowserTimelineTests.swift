import Foundation
import Testing

@Suite("The demo's timeline as a person sees it")
struct BrowserTimelineTests {
    /// Where the timeline's screenshots are kept (docs/images/timeline.png is copied from here).
    static let artifacts = BrowserEnvironment.repository.appendingPathComponent(".build/test-artifacts/browser-timeline").path

    @Test(
        "in Chromium at 1280×800: lanes named by participant with wake-ups/s, busy % and the longest callout; connected, heartbeat, ping timeout, reconnect, the node down and the silent link labelled and in view; hovers with times and durations, details on click, zoom by wheel and buttons, pan by drag; SEND, SEND_ACK, DELIVER in view around a message, arrows from alice's loop through the node to bob's at the marks, a click highlighting the path and listing each hop's latency; no bare descriptor anywhere; the Chrome trace beside it with flow events that pair up",
        .browserAvailable, .timeLimit(.minutes(3))
    )
    func whatAPersonSees() async throws {
        print("screenshots in \(Self.artifacts)")
        try await BrowserEnvironment.shared.expectPasses("browser_timeline.py", screenshots: Self.artifacts)
    }
}
