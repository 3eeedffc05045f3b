import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopIM

/// Issue 22: nothing refers to a server session weakly. One weak reference gives an object a side table
/// for the rest of its life — 48 bytes of heap per idle connection, and a cache line read on each of
/// its heartbeats — so the link's events and the deadlines' table hold sessions unowned, and the login
/// gate and the store's answers strongly.
@Suite("No side table for a server session")
struct SessionSideTableTests {
    @Test("the check sees a side table: an object once referred to weakly has one, an object never so none")
    func checkSeesASideTable() {
        let plain = Probe()
        let watched = Probe()
        weak let weakly = watched
        #expect(!hasSideTable(plain))
        #expect(hasSideTable(watched) && weakly != nil)
    }

    @Test("sessions that log in, heartbeat past their deadlines, send, are delivered to, acknowledge and abandon have none")
    func sessionsHaveNone() async throws {
        let sideTables = try await onManualClockLoop { loop, _ in
            let server = IMServer(store: InMemoryIMStore(), settings: .withoutLoginLimits)
            let ann = MemoryLinkPeer()
            let bob = MemoryLinkPeer()
            server.adopt(ann.serverEnd)
            server.adopt(bob.serverEnd)
            #expect(ann.logIn("ann")?.code == .ok && bob.logIn("bob")?.code == .ok)
            var message = IMChatMessage()
            message.id = "m1"
            message.user = "bob"
            message.text = "hello"
            ann.send(IMFrame(command: .send, serial: 2, message: message))
            #expect(ann.received(.sendAck).last?.code == .ok)
            #expect(bob.acknowledgeDeliveries() == 1)
            var abandon = IMAbandonRequest()
            abandon.ids = ["never-sent"]
            ann.send(IMFrame(command: .abandon, serial: 3, message: abandon))
            #expect(ann.received(.abandonAck).count == 1)
            // Three keepalives' worth of heartbeats: each renewal surfaces in the deadlines' queue and
            // is put back, so their table has named both sessions again and again.
            for round in 1...9 {
                let start = loop.now
                try loop.runUntil(timeout: .seconds(20)) { loop.now - start >= .seconds(10) }
                ann.send(IMFrame(command: .heartbeat, serial: UInt32(10 + round)))
                bob.send(IMFrame(command: .heartbeat, serial: UInt32(10 + round)))
            }
            #expect(ann.received(.heartbeatAck).count == 9 && ann.isOpen && bob.isOpen)
            #expect(server.sessions.count == 2)
            return server.sessions.map(hasSideTable)
        }
        #expect(sideTables == [false, false])
    }

    @Test("a session its server let go without ending it gives back its place in the deadlines' table and aborts its link")
    func sessionLetGoGivesBackWhatHeldIt() async throws {
        let (heldBefore, heldAfter, linkOpenAfter) = try await onLoopThread {
            var server: IMServer? = IMServer(store: InMemoryIMStore(), settings: .withoutLoginLimits)
            let peer = MemoryLinkPeer()
            server?.adopt(peer.serverEnd)
            #expect(peer.logIn("ann")?.code == .ok)
            let deadlines = try #require(server?.sessionDeadlines(for: peer.serverEnd.modes))
            let heldBefore = deadlines.heldPlaceCount
            server = nil
            peer.settle()
            return (heldBefore, deadlines.heldPlaceCount, peer.isOpen)
        }
        #expect(heldBefore == 1)
        #expect(heldAfter == 0, "no place names the freed session")
        #expect(!linkOpenAfter, "its link reports nothing more to it")
    }
}

private final class Probe {}

/// Whether `object` has a side table: Swift's inline reference count, the word after the isa, holds a
/// pointer to one with its two top bits set (`UseSlowRC` and `SideTableMark`, stdlib's RefCount.h, on
/// 64-bit platforms).
private func hasSideTable(_ object: AnyObject) -> Bool {
    let bits = Unmanaged.passUnretained(object).toOpaque().load(fromByteOffset: 8, as: UInt64.self)
    return bits >> 62 == 0b11
}
