import Foundation
import Testing

@Suite("Chat node's page as a person sees it")
struct BrowserPageTests {
    /// Where the page's screenshots are kept (docs/images has one of each, copied from here).
    static let artifacts = BrowserEnvironment.repository.appendingPathComponent(".build/test-artifacts/browser-page").path

    @Test(
        "in Chromium at 1280×800 and 400 px wide: the conversation scrolls inside its pane with the composer in view and a \"new messages\" marker for a reader who scrolled up; the rooms fold into a drawer, nothing wider than the window; no badge before login, \"account created\" at the first login only, no \"reconnected\" after a wrong password; \"bob joined lobby\" and \"carol left lobby\" in the room's pane with its member count live; a graceful node stop closes with 1001 and reads \"the node is restarting\"; the reconnect wait is capped at 10 s and a click on the badge retries at once",
        .browserAvailable, .timeLimit(.minutes(3))
    )
    func whatAPersonSees() async throws {
        print("screenshots in \(Self.artifacts)")
        try await BrowserEnvironment.shared.expectPasses("browser_page.py", screenshots: Self.artifacts)
    }

    @Test(
        "a large room (a node with --large-room-members 2): \"3 members · presence not shown\" under the room's name, \"large\" in the room list and a note by the online list, for the member who made it large and, once the room list says so, for one who heard nothing; a LEAVE back to the size switches it back live; it all fits at 1280×800 and 400 px",
        .browserAvailable, .timeLimit(.minutes(3))
    )
    func largeRoom() async throws {
        try await BrowserEnvironment.shared.expectPasses("browser_large_room.py", screenshots: Self.artifacts)
    }
}
