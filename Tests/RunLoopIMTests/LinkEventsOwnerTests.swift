import Glibc
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

@testable import RunLoopIM

/// Issue 22: a server session takes its link's events as methods, through one weak reference in the
/// link (`IMFrameLinkEvents(owner:)`), instead of six closures and a box holding it weakly.
@Suite("Link events of an owner")
struct LinkEventsOwnerTests {
    @Test("events made of an owner reach its methods, each as the closure of the same name would")
    func eachEventReachesItsMethod() {
        let owner = RecordingOwner()
        let events = IMFrameLinkEvents(owner: owner)
        let header = FrameHeader(bodyLength: 99, command: IMCommand.send.rawValue, serial: 7)
        events.opened()
        events.received(IMFrame(command: .heartbeat, serial: 3))
        events.readEnded()
        events.oversized(header, [1, 2], 50)
        events.failed(.frameTooLarge(length: 99, limit: 50), 7)
        events.closed(.peerClosed)
        #expect(owner.log == ["opened", "received 3", "readEnded", "oversized 7 2 50", "failed 7", "closed"])
    }

    @Test("an owner that only takes what a server needs: opened, readEnded and oversized do nothing")
    func defaultsDoNothing() {
        let owner = MinimalOwner()
        let events = IMFrameLinkEvents(owner: owner)
        events.opened()
        events.readEnded()
        events.oversized(FrameHeader(bodyLength: 9, command: IMCommand.send.rawValue, serial: 1), [], 5)
        events.received(IMFrame(command: .heartbeat, serial: 1))
        #expect(owner.received == 1)
    }

    @Test("a client's link closed before it opened neither connects nor reports; one opened connects once")
    func closedBeforeOpening() async throws {
        let (connectsAfterClose, logAfterClose, connectsWhenOpened) = try await onLoopThread {
            var connects = 0
            let owner = RecordingOwner()
            let closedFirst = ByteStreamFrameLink(connecting: TCPConnection(), maximumFrameBody: 1_024) { _ in connects += 1 }
            closedFirst.close(for: nil)
            closedFirst.open(IMFrameLinkEvents(owner: owner))
            let afterClose = connects
            // The control: the same link, opened, runs its connect (to nowhere: only the call counts).
            let opened = ByteStreamFrameLink(connecting: TCPConnection(), maximumFrameBody: 1_024) { _ in connects += 1 }
            opened.open(IMFrameLinkEvents(owner: RecordingOwner()))
            opened.abort()
            return (afterClose, owner.log, connects - afterClose)
        }
        #expect(connectsAfterClose == 0 && logAfterClose.isEmpty)
        #expect(connectsWhenOpened == 1)
    }

    @Test("the events do not keep their owner: once it is gone they go nowhere")
    func ownerHeldWeakly() {
        var owner: RecordingOwner? = RecordingOwner()
        weak let watched = owner
        let events = IMFrameLinkEvents(owner: owner!)
        owner = nil
        #expect(watched == nil)
        events.received(IMFrame(command: .heartbeat, serial: 1))
        events.closed(.peerClosed)
    }

    @Test("a session its server let go is released though its link lives on, and the link's later input goes nowhere")
    func sessionReleasedWhileItsLinkLives() async throws {
        try await onLoopThread {
            var server: IMServer? = IMServer(store: InMemoryIMStore(), settings: .withoutLoginLimits)
            let peer = MemoryLinkPeer()
            server?.adopt(peer.serverEnd)
            #expect(peer.logIn("ann")?.code == .ok)
            weak let session = server?.sessions.first
            #expect(session?.user == "ann")
            server = nil
            #expect(session == nil)
            peer.send(IMFrame(command: .heartbeat, serial: 2))
            #expect(peer.received(.heartbeatAck).isEmpty)
        }
    }
}

private final class RecordingOwner: IMFrameLinkDelegate {
    var log: [String] = []

    func linkOpened() { log.append("opened") }
    func linkReceived(_ frame: IMFrame) { log.append("received \(frame.serial)") }
    func linkReadEnded() { log.append("readEnded") }
    func linkReceivedOversized(_ header: FrameHeader, bodyPrefix: [UInt8], limit: Int) {
        log.append("oversized \(header.serial) \(bodyPrefix.count) \(limit)")
    }
    func linkFailed(_ error: IMFrameError, serial: UInt32) { log.append("failed \(serial)") }
    func linkClosed(_ reason: IMLinkCloseReason) { log.append("closed") }
}

private final class MinimalOwner: IMFrameLinkDelegate {
    var received = 0

    func linkReceived(_ frame: IMFrame) { received += 1 }
    func linkFailed(_ error: IMFrameError, serial: UInt32) {}
    func linkClosed(_ reason: IMLinkCloseReason) {}
}
