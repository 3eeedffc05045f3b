import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopIM
@testable import RunLoopIMCore

/// Issue 22: after a crowd logs in and leaves, the server's per-user tables give their room back
/// (a Swift dictionary never shrinks by itself), so the node's memory comes back down.
@Suite("Table shrinking")
struct TableShrinkingTests {
    @Test("a dictionary emptied to a quarter of its room is rebuilt small, with every entry left")
    func dictionary() {
        var table: [Int: String] = [:]
        for key in 0..<10_000 { table[key] = "\(key)" }
        for key in 10..<10_000 { table[key] = nil }
        let before = table.capacity
        table.shrinkIfSparse()
        #expect(before >= 10_000)
        #expect(table.capacity < 64)
        #expect(table == Dictionary(uniqueKeysWithValues: (0..<10).map { ($0, "\($0)") }))
    }

    @Test("a dictionary still a quarter full or more keeps its room")
    func notSparse() {
        var table: [Int: Int] = [:]
        for key in 0..<1_000 { table[key] = key }
        for key in 400..<1_000 { table[key] = nil }
        let before = table.capacity
        table.shrinkIfSparse()
        #expect(table.capacity == before)
    }

    @Test("the presence ledger keeps no room for a crowd that has gone")
    func ledger() {
        var ledger = PresenceLedger()
        let crowd = (0..<5_000).map { "u\($0)" }
        for user in crowd { _ = ledger.note(user) }
        _ = ledger.settle { _ in true }
        #expect(ledger.announced.capacity >= 5_000)
        for user in crowd { _ = ledger.note(user) }
        _ = ledger.settle { _ in false }
        #expect(ledger.announced.isEmpty && ledger.announced.capacity < 64)
    }

    @Test("the server's tables of sessions and users keep no room for 300 sessions that have gone")
    func server() async throws {
        try await onLoopThread {
            let server = IMServer(store: InMemoryIMStore(), settings: .withoutLoginLimits)
            let peers = (0..<300).map { _ in MemoryLinkPeer() }
            for (index, peer) in peers.enumerated() {
                server.adopt(peer.serverEnd)
                peer.logIn("u\(index)", settling: false)
            }
            try #require(try spin(server.loop) { server.byUser.count == 300 })
            #expect(server.byUser.capacity >= 300 && server.open.capacity >= 300)
            for peer in peers { peer.send(IMFrame(command: .logout, serial: 2), settling: false) }
            try #require(try spin(server.loop) { server.open.isEmpty })
            #expect(server.byUser.capacity < 64 && server.open.capacity < 64)
            #expect(server.loginGate.unauthenticated.capacity < 64)
        }
    }
}
