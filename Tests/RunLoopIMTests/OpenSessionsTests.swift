import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopIM

/// Issue 22: the server's open sessions are an array in which each session knows its place, instead
/// of a dictionary keyed by session.
@Suite("Open sessions")
struct OpenSessionsTests {
    @Test("a session that ends hands its place to the last one; every session's place stays its index")
    func leavingHandsThePlaceToTheLast() async throws {
        try await onLoopThread {
            let server = IMServer(store: InMemoryIMStore(), settings: .withoutLoginLimits)
            let peers = (0..<4).map { _ in MemoryLinkPeer() }
            for peer in peers { server.adopt(peer.serverEnd) }
            func placesAreIndices() -> Bool {
                server.open.all.indices.allSatisfy { server.open.all[$0].placeInOpen == UInt32($0) }
            }
            #expect(server.sessionCount == 4 && placesAreIndices())
            let second = server.sessions[1]
            let last = server.sessions[3]
            peers[1].pair.client.close()
            peers[1].settle()
            #expect(server.sessionCount == 3)
            #expect(second.placeInOpen == PlacedArray<IMServer.OpenPlace>.notPlaced)
            #expect(server.sessions[1] === last && placesAreIndices())
            // Removing a session that is not in (again) changes nothing.
            server.open.remove(second)
            #expect(server.sessionCount == 3 && placesAreIndices())
            let (first, third) = (server.sessions[0], server.sessions[2])
            peers[0].pair.client.close()
            peers[0].settle()
            #expect(server.sessionCount == 2 && first.placeInOpen == PlacedArray<IMServer.OpenPlace>.notPlaced)
            #expect(server.sessions[0] === third && server.sessions[1] === last && placesAreIndices())
        }
    }
}
