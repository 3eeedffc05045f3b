import RunLoopChat
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

@testable import RunLoopIM

/// A server's links write once per loop pass (LinkWriteBatch): counted on a stream that keeps its
/// writes, never timed.
@Suite("A server's links write what a loop pass sent them in one write at the pass's end")
struct LinkWriteBatchTests {
    private func heartbeat(_ serial: UInt32) -> IMFrame { IMFrame(command: .heartbeat, serial: serial) }

    private func events(closed: @escaping (IMLinkCloseReason) -> Void = { _ in }) -> IMFrameLinkEvents {
        IMFrameLinkEvents(received: { _ in }, failed: { _, _ in }, closed: closed)
    }

    private func link(on stream: CountingByteStream, batch: LinkWriteBatch?) -> TCPFrameLinkOnCounting {
        TCPFrameLinkOnCounting(connection: stream, maximumBodyLength: 1024, skippableSendLength: 0, batch: batch)
    }

    /// A batch on `loop` and one opened link in it, on a counting stream.
    private func batchedLink(
        on loop: RunLoop, closed: @escaping (IMLinkCloseReason) -> Void = { _ in }
    ) -> (LinkWriteBatch, CountingByteStream, TCPFrameLinkOnCounting) {
        let batch = LinkWriteBatch(loop: loop, modes: [.common])
        let stream = CountingByteStream(loop: loop)
        let link = link(on: stream, batch: batch)
        link.open(events(closed: closed))
        return (batch, stream, link)
    }

    @Test("frames sent one at a time and in batches in one pass reach the stream in one write, in order, once the pass's work is done")
    func onePassOneWrite() async throws {
        try await onManualClockLoop { loop, _ in
            let (batch, stream, link) = batchedLink(on: loop)
            // Links hold their batch weakly; its owner (a server) keeps it, as the test does here.
            defer { withExtendedLifetime(batch) {} }
            try link.send(heartbeat(1))
            try link.send([heartbeat(2), heartbeat(3)])
            try link.send(heartbeat(4))
            #expect(stream.writes.isEmpty, "nothing is written inside the pass")
            #expect(link.bufferedOutputBytes == 4 * FrameHeader.size, "gathered bytes count as unread output")
            try loop.run(.default, timeout: .zero)
            #expect(stream.writes.count == 1)
            #expect(try stream.writtenFrames().first?.map(\.serial) == [1, 2, 3, 4])
            #expect(link.bufferedOutputBytes == 0)
            try link.send(heartbeat(5))
            try loop.run(.default, timeout: .zero)
            #expect(try stream.writtenFrames().map { $0.map(\.serial) } == [[1, 2, 3, 4], [5]], "the next pass writes again")
        }
    }

    @Test("without a batch (a client's link), each send is its own write at once")
    func noBatchWritesAtOnce() async throws {
        try await onManualClockLoop { loop, _ in
            let stream = CountingByteStream(loop: loop)
            let link = link(on: stream, batch: nil)
            link.open(events())
            try link.send(heartbeat(1))
            try link.send([heartbeat(2), heartbeat(3)])
            #expect(try stream.writtenFrames().map { $0.map(\.serial) } == [[1], [2, 3]])
        }
    }

    @Test("several links of one batch write once each in the same pass")
    func severalLinks() async throws {
        try await onManualClockLoop { loop, _ in
            let batch = LinkWriteBatch(loop: loop, modes: [.common])
            let streams = (0..<3).map { _ in CountingByteStream(loop: loop) }
            let links = streams.map { link(on: $0, batch: batch) }
            for link in links { link.open(events()) }
            for serial in UInt32(1)...4 {
                for link in links { try link.send(heartbeat(serial)) }
            }
            #expect(batch.waitingLinks == 3, "each link enlisted once")
            try loop.run(.default, timeout: .zero)
            #expect(batch.waitingLinks == 0)
            for stream in streams {
                #expect(try stream.writtenFrames().map { $0.map(\.serial) } == [[1, 2, 3, 4]])
            }
        }
    }

    /// Issue 22: an idle server's passes each write a link or two; a list made for each was an
    /// allocation per pass.
    @Test("the lists of waiting links keep their room from pass to pass, but not a crowd's")
    func listRoomKeptButNotACrowds() async throws {
        try await onManualClockLoop { loop, _ in
            let batch = LinkWriteBatch(loop: loop, modes: [.common])
            func pass(writing count: Int) throws -> [CountingByteStream] {
                let streams = (0..<count).map { _ in CountingByteStream(loop: loop) }
                let links = streams.map { link(on: $0, batch: batch) }
                for link in links { link.open(events()) }
                for link in links { try link.send(heartbeat(1)) }
                try loop.run(.default, timeout: .zero)
                return streams
            }
            // The two lists take turns (a write may enlist a link again while the other is written):
            // each has its room after two passes, and later passes reuse it.
            _ = try pass(writing: 2)
            _ = try pass(writing: 2)
            let room = batch.listRoom
            #expect(room >= 4, "both lists keep their room")
            let again = try pass(writing: 2)
            #expect(batch.listRoom == room, "the next pass reuses it")
            #expect(again.allSatisfy { $0.writes.count == 1 })
            let crowd = try pass(writing: LinkWriteBatch.keptRoom * 2)
            #expect(crowd.allSatisfy { $0.writes.count == 1 })
            #expect(batch.listRoom <= 2 * LinkWriteBatch.keptRoom, "a crowd's room is given back")
        }
    }

    @Test("a graceful close writes what the pass gathered first; an abort drops it; a closed link refuses frames")
    func closeAndAbort() async throws {
        try await onManualClockLoop { loop, _ in
            let (batch, closing, closed) = batchedLink(on: loop)
            try closed.send(heartbeat(1))
            closed.close(for: .serverShutdown)
            #expect(try closing.writtenFrames().map { $0.map(\.serial) } == [[1]] && closing.closes == [false])
            #expect(throws: IMLinkFailure.outputClosed) { try closed.send(heartbeat(2)) }

            let aborting = CountingByteStream(loop: loop)
            let aborted = link(on: aborting, batch: batch)
            aborted.open(events())
            try aborted.send(heartbeat(3))
            aborted.abort()
            try loop.run(.default, timeout: .zero)
            #expect(aborting.writes.isEmpty && aborting.closes == [true])
            #expect(closing.writes.count == 1, "nothing written twice")
        }
    }

    /// The loop drops the batch's write when its thread ends first; the link lists in the batch must
    /// not keep the batch alive in turn (a cycle LeakSanitizer found when a link held it strongly).
    @Test("a link with frames gathered when its loop's thread ends is freed, and so is its batch")
    func gatheredWhenTheThreadEnds() async throws {
        final class Weak: @unchecked Sendable {
            weak var link: AnyObject?
            weak var batch: LinkWriteBatch?
        }
        let weak = Weak()
        try await onLoopThread {
            let loop = RunLoop.current
            let batch = LinkWriteBatch(loop: loop, modes: [.common])
            let link = link(on: CountingByteStream(loop: loop), batch: batch)
            link.open(events())
            try link.send(heartbeat(1))
            #expect(batch.waitingLinks == 1)
            (weak.link, weak.batch) = (link, batch)
            // Returning ends the thread with the write still queued.
        }
        #expect(weak.link == nil, "the link outlived its loop")
        #expect(weak.batch == nil, "the batch outlived its loop")
    }

    @Test("a write the stream refuses at the pass's end closes the link at once and reports the failure")
    func refusedWrite() async throws {
        try await onManualClockLoop { loop, _ in
            var reasons: [IMLinkCloseReason] = []
            let (batch, stream, link) = batchedLink(on: loop) { reasons.append($0) }
            defer { withExtendedLifetime(batch) {} }
            try link.send(heartbeat(1))
            stream.refusal = .writeBufferFull(limit: 10)
            try loop.run(.default, timeout: .zero)
            #expect(reasons == [.failed(.outputFull(limit: 10))])
            #expect(stream.closes == [true])
            #expect(throws: IMLinkFailure.outputClosed) { try link.send(heartbeat(2)) }
        }
    }

    @Test("a server answers SENDs read together with one write to the sender (its SEND_ACKs) and one to the recipient (its DELIVERs)")
    func serverFanOutWritesOncePerLinkPerPass() async throws {
        try await onManualClockLoop { loop, _ in
            let server = serverWithoutPresence()
            let alice = try loggedIn("alice", to: server, on: loop)
            let bob = try loggedIn("bob", to: server, on: loop)
            try loop.run(.default, timeout: .zero)
            let (aliceBefore, bobBefore) = (alice.writes.count, bob.writes.count)
            let sends = (1...5).map { DeferredStoreTests.send("m\($0)", to: "bob", serial: UInt32($0) + 1) }
            alice.feed(sends)
            let delivered = try loop.runUntil(timeout: .seconds(5)) {
                (try? bob.writtenFrames().joined().filter { $0.command == .deliver }.count) == 5
                    && (try? alice.writtenFrames().joined().filter { $0.command == .sendAck }.count) == 5
            }
            try #require(delivered)
            #expect(alice.writes.count == aliceBefore + 1, "five SEND_ACKs, one write")
            #expect(bob.writes.count == bobBefore + 1, "five DELIVERs, one write")
            #expect(try bob.writtenFrames().last?.map { $0.command } == Array(repeating: .deliver, count: 5))
        }
    }

    private func serverWithoutPresence() -> IMServer {
        var settings = IMServer.Settings()
        settings.broadcastsPresence = false
        return IMServer(store: InMemoryIMStore(), settings: settings)
    }

    /// A client logged in as `user` on a counting stream of `server`'s, its login answered.
    private func loggedIn(_ user: String, to server: IMServer, on loop: RunLoop) throws -> CountingByteStream {
        let stream = CountingByteStream(loop: loop)
        server.adopt(link(on: stream, batch: server.writeBatch))
        var login = IMLoginRequest()
        login.user = user
        login.password = "pw"
        login.keepaliveSeconds = 60
        stream.feed([IMFrame(command: .login, serial: 1, message: login)])
        let online = try loop.runUntil(timeout: .seconds(5)) {
            (try? stream.writtenFrames().joined().contains { $0.command == .loginAck }) == true
        }
        try #require(online)
        return stream
    }

    @Test("a frame sent alone is written at once when nothing of the pass waits, and behind what does; a closed link refuses it")
    func sentAlone() async throws {
        try await onManualClockLoop { loop, _ in
            let (batch, stream, link) = batchedLink(on: loop)
            defer { withExtendedLifetime(batch) {} }
            try link.sendAlone(heartbeat(1))
            #expect(try stream.writtenFrames().map { $0.map(\.serial) } == [[1]], "written inside the call")
            #expect(batch.waitingLinks == 0)
            try link.send(heartbeat(2))
            try link.sendAlone(heartbeat(3))
            #expect(stream.writes.count == 1 && batch.waitingLinks == 1, "the second waits behind the frame gathered first")
            try loop.run(.default, timeout: .zero)
            #expect(try stream.writtenFrames().map { $0.map(\.serial) } == [[1], [2, 3]])
            link.close(for: nil)
            #expect(throws: IMLinkFailure.outputClosed) { try link.sendAlone(heartbeat(4)) }
        }
    }

    @Test("a server answers a HEARTBEAT inside the read that brought it; read behind a SEND, its answer follows the SEND_ACK in one write")
    func heartbeatAnsweredAtOnce() async throws {
        try await onManualClockLoop { loop, _ in
            let server = serverWithoutPresence()
            let alice = try loggedIn("alice", to: server, on: loop)
            try loop.run(.default, timeout: .zero)
            let before = alice.writes.count
            alice.feed([heartbeat(7)])
            #expect(alice.writes.count == before + 1, "written before the pass's end")
            #expect(try alice.writtenFrames().last?.map(\.command) == [.heartbeatAck])
            #expect(server.writeBatch.waitingLinks == 0)

            alice.feed([DeferredStoreTests.send("m1", to: "bob", serial: 8), heartbeat(9)])
            #expect(alice.writes.count == before + 1, "both wait for the pass's end")
            try loop.run(.default, timeout: .zero)
            #expect(alice.writes.count == before + 2)
            #expect(try alice.writtenFrames().last?.map(\.command) == [.sendAck, .heartbeatAck])
        }
    }

    /// PresenceOutbox writes an announcement frame by frame and counts on this: a contact told of
    /// several users in one announcement still gets one write. With a bound of 2 contacts a pass the
    /// announcement takes three passes (an audience of 3 each), and its notices wait for the last.
    @Test(
        "an announcement of several users reaches a contact's link in one write, in the order announced, also when cut into passes at its bound",
        arguments: [10_000, 2])
    func presenceOfSeveralUsersOneWrite(audiencePerPass: Int) async throws {
        try await onManualClockLoop(autoAdvances: false) { loop, clock in
            var settings = IMServer.Settings.withoutLoginLimits
            settings.presenceInterval = .milliseconds(100)
            settings.presenceAudiencePerPass = audiencePerPass
            let store = InMemoryIMStore()
            for user in ["watcher", "ann", "ben", "cy"] { _ = store.join(room: "lobby", user: user) }
            let server = IMServer(store: store, settings: settings)
            server.applicationHandler = ChatService()
            let watcher = CountingByteStream(loop: loop)
            server.adopt(link(on: watcher, batch: server.writeBatch))
            var login = IMLoginRequest()
            login.user = "watcher"
            login.password = "pw"
            login.keepaliveSeconds = 60
            watcher.feed([IMFrame(command: .login, serial: 1, message: login)])
            for _ in 0..<5 { _ = try loop.run(.default, timeout: .zero) }
            try #require(try watcher.writtenFrames().joined().contains { $0.command == .loginAck })
            clock.advance(by: .milliseconds(10))
            var peers: [MemoryLinkPeer] = []
            for user in ["ann", "ben", "cy"] {
                let peer = MemoryLinkPeer()
                peer.keepsFrames = false
                server.adopt(peer.serverEnd)
                peer.logIn(user)
                peers.append(peer)
            }
            let before = watcher.writes.count
            clock.advance(by: .milliseconds(100))
            for _ in 0..<6 { _ = try loop.run(.default, timeout: .zero) }
            #expect(watcher.writes.count == before + 1, "three arrivals in one interval, one write")
            let notices = try watcher.writtenFrames().last?.map { try $0.presenceNotice() }
            #expect(notices?.map(\.user) == ["ann", "ben", "cy"] && notices?.allSatisfy(\.online) == true)
            withExtendedLifetime(peers) {}
            server.shutdown()
        }
    }
}

/// The link under test: the server's own link type on a counting stream.
typealias TCPFrameLinkOnCounting = ByteStreamFrameLink<CountingByteStream>
