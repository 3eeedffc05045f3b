import Glibc
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

@testable import RunLoopIM

/// Issue 22: a server session takes its link's events as methods, through one unowned reference in
/// the link (`IMFrameLinkEvents(owner:)`), instead of six closures and a box holding it weakly.
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

    @Test("the events do not keep their owner")
    func ownerNotKept() {
        var owner: RecordingOwner? = RecordingOwner()
        weak let watched = owner
        let events = IMFrameLinkEvents(owner: owner!)
        owner = nil
        #expect(watched == nil)
        withExtendedLifetime(events) {}
    }

    @Test("an owner whose last holder lets it go inside one of its methods lives until that method returns")
    func ownerLivesThroughItsCall() {
        let holder = OwnerHolder()
        let events = IMFrameLinkEvents(owner: holder.owner!)
        // The owner drops the holder's reference, its only one, and looks at itself afterwards: were the
        // call made on the unretained reference, its deinit would already have run.
        events.closed(.peerClosed)
        #expect(holder.deinitRanInsideTheCall == false)
        #expect(holder.deinitRan, "let go once the call returned")
        withExtendedLifetime(events) {}
    }

    @Test("a server session ended by its link's close lives until its server has reported the end")
    func sessionLivesThroughItsEnd() async throws {
        let aliveAtItsEnd = try await onLoopThread {
            let server = IMServer(store: InMemoryIMStore(), settings: .withoutLoginLimits)
            let peer = MemoryLinkPeer()
            server.adopt(peer.serverEnd)
            #expect(peer.logIn("ann")?.code == .ok)
            weak let session = server.sessions.first
            var aliveAtItsEnd: [Bool] = []
            // The server's tables are the session's only holders: it leaves them before this is called.
            server.onSessionEnd = { _, _, _ in aliveAtItsEnd.append(session != nil) }
            peer.pair.apply(.reset)
            peer.settle()
            #expect(session == nil, "freed once its end was reported")
            return aliveAtItsEnd
        }
        #expect(aliveAtItsEnd == [true])
    }

    @Test("the events keep their closures: they are called after the caller let go of them")
    func closuresKept() {
        var log: [String] = []
        let events = IMFrameLinkEvents(received: { log.append("received \($0.serial)") }, failed: { _, _ in }, closed: { _ in log.append("closed") })
        events.received(IMFrame(command: .heartbeat, serial: 4))
        events.closed(.peerClosed)
        #expect(log == ["received 4", "closed"])
    }

    @Test("a session its server let go is released though its link lives on: it aborts the link, whose later input goes nowhere")
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
            #expect(!peer.isOpen, "the session aborted the link as it went: its events hold it unowned")
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

/// Holds an owner that lets go of itself inside ``IMFrameLinkDelegate/linkClosed(_:)``, and records
/// whether it was freed inside that call or only after it.
private final class OwnerHolder {
    var owner: SelfReleasingOwner?
    var deinitRan = false
    var deinitRanInsideTheCall: Bool?

    init() { owner = SelfReleasingOwner(holder: self) }
}

private final class SelfReleasingOwner: IMFrameLinkDelegate {
    private unowned let holder: OwnerHolder

    init(holder: OwnerHolder) { self.holder = holder }

    deinit { holder.deinitRan = true }

    func linkReceived(_ frame: IMFrame) {}
    func linkFailed(_ error: IMFrameError, serial: UInt32) {}
    func linkClosed(_ reason: IMLinkCloseReason) {
        // Nothing of `self` is read after the release: what it looks at is held here.
        let holder = holder
        holder.owner = nil
        holder.deinitRanInsideTheCall = holder.deinitRan
    }
}
