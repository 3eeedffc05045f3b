import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopNet
import RunLoopTesting
import Testing

@testable import RunLoopIMTesting

/// What one end of a pair reported (loop thread only).
private final class EndLog {
    var opened = 0
    var frames: [IMFrame] = []
    var reads = 0
    var failures: [IMFrameError] = []
    var closes: [IMLinkCloseReason] = []

    var events: IMFrameLinkEvents {
        IMFrameLinkEvents(
            opened: { self.opened += 1 },
            received: { self.frames.append($0) },
            readEnded: { self.reads += 1 },
            failed: { error, _ in self.failures.append(error) },
            closed: { self.closes.append($0) })
    }
}

private func note(_ serial: UInt32, _ text: String = "x") -> IMFrame {
    var message = IMChatMessage()
    message.text = text
    return IMFrame(command: .deliver, serial: serial, message: message)
}

/// Both ends of a fresh pair opened with logs.
private func openPair(_ loop: RunLoop) -> (MemoryLinkPair, client: EndLog, server: EndLog) {
    let pair = MemoryLinkPair(loop: loop)
    let client = EndLog(), server = EndLog()
    pair.server.open(server.events)
    pair.client.open(client.events)
    return (pair, client, server)
}

@Suite("In-memory link pair and its fault script (manual clock)")
struct MemoryFrameLinkTests {
    @Test(
        "delivery is asynchronous and ordered: nothing inside the sender's call, everything on a later pass, in order; opened comes a pass after open"
    )
    func asynchronousOrderedDelivery() async throws {
        try await onManualClockLoop { loop, _ in
            let (pair, client, server) = openPair(loop)
            #expect(client.opened == 0, "connecting takes a pass")
            try pair.client.send(note(1))
            try pair.client.send([note(2), note(3)])
            #expect(server.frames.isEmpty, "never inside the sender's call")
            try #require(try pair.settle())
            #expect(client.opened == 1)
            #expect(server.frames.map(\.serial) == [1, 2, 3])
            #expect(server.reads >= 1 && pair.client.sentFrames == 3)
            try pair.server.send(note(9))
            try pair.settle()
            #expect(client.frames.map(\.serial) == [9])
        }
    }

    @Test("delay: each frame arrives that long after it was sent, on the manual clock")
    func delay() async throws {
        try await onManualClockLoop(autoAdvances: false) { loop, clock in
            let (pair, _, server) = openPair(loop)
            pair.apply(.delay(.milliseconds(100)))
            let sentAt = loop.now
            try pair.client.send(note(1))
            try loop.run(.default, timeout: .zero)
            clock.advance(by: .milliseconds(99))
            try loop.run(.default, timeout: .zero)
            #expect(server.frames.isEmpty, "not before its delay")
            #expect(pair.client.bufferedOutputBytes > 0, "in flight counts as the sender's buffered output")
            clock.advance(by: .milliseconds(1))
            try loop.run(.default, timeout: .zero)
            #expect(server.frames.map(\.serial) == [1])
            #expect(loop.now - sentAt == .milliseconds(100))
            #expect(pair.client.bufferedOutputBytes == 0)
        }
    }

    @Test("stall holds one direction (the other flows, nothing counts as unread) until resume delivers it in order")
    func stallAndResume() async throws {
        try await onManualClockLoop { loop, _ in
            let (pair, client, server) = openPair(loop)
            try pair.settle()
            pair.apply(.stall(.toServer))
            try pair.client.send(note(1))
            try pair.client.send(note(2))
            try pair.server.send(note(7))
            try pair.settle()
            #expect(server.frames.isEmpty && client.frames.map(\.serial) == [7])
            #expect(!pair.server.hasUnreadInput, "stalled bytes have not arrived")
            #expect(pair.client.bufferedOutputBytes == 2 * (FrameHeader.size + note(1).body.count))
            pair.apply(.resume(.toServer))
            #expect(pair.server.hasUnreadInput, "due and not yet read")
            try pair.settle()
            #expect(server.frames.map(\.serial) == [1, 2])
        }
    }

    @Test("drop: the link vanishes silently — sends succeed, nothing arrives either way, no end is told")
    func drop() async throws {
        try await onManualClockLoop { loop, _ in
            let (pair, client, server) = openPair(loop)
            try pair.settle()
            try pair.client.send(note(1))
            pair.apply(.drop)
            try pair.client.send(note(2))
            try pair.server.send(note(3))
            try loop.run(.default, timeout: .seconds(60))
            #expect(server.frames.isEmpty && client.frames.isEmpty)
            #expect(server.closes.isEmpty && client.closes.isEmpty)
            #expect(pair.isDropped && pair.client.isOpen && pair.server.isOpen)
        }
    }

    @Test("reset: both ends fail with reset on a later pass, what was in flight is lost, sends are refused")
    func reset() async throws {
        try await onManualClockLoop { loop, _ in
            let (pair, client, server) = openPair(loop)
            try pair.settle()
            try pair.client.send(note(1))
            pair.apply(.reset)
            #expect(client.closes.isEmpty, "not inside the call")
            try pair.settle()
            #expect(client.closes == [.failed(.reset)] && server.closes == [.failed(.reset)])
            #expect(server.frames.isEmpty)
            #expect(throws: IMLinkFailure.outputClosed) { try pair.server.send(note(2)) }
        }
    }

    @Test("byte by byte: a frame goes through the encoder and the receiver's decoder one byte per read and comes out whole")
    func byteByByte() async throws {
        try await onManualClockLoop { loop, _ in
            let (pair, _, server) = openPair(loop)
            try pair.settle()
            pair.apply(.byteByByte(true))
            let frame = note(5, "reassembled")
            try pair.client.send(frame)
            try pair.settle()
            #expect(server.frames == [frame])
            #expect(server.reads == FrameHeader.size + frame.body.count, "one read per byte")
        }
    }

    @Test("output full: sends throw outputFull until cleared")
    func outputFull() async throws {
        try await onManualClockLoop { loop, _ in
            let (pair, _, server) = openPair(loop)
            pair.apply(.outputFull(.client, true))
            #expect(throws: IMLinkFailure.outputFull(limit: 0)) { try pair.client.send(note(1)) }
            pair.apply(.outputFull(.client, false))
            try pair.client.send(note(2))
            try pair.settle()
            #expect(server.frames.map(\.serial) == [2])
        }
    }

    @Test("closing: a graceful close delivers what was sent, then peerClosed; an abort is a reset; the closing end is told nothing")
    func closing() async throws {
        try await onManualClockLoop { loop, _ in
            let (graceful, gracefulClient, gracefulServer) = openPair(loop)
            try graceful.settle()
            try graceful.server.send(note(1))
            graceful.server.close(for: .loggedOut)
            try graceful.settle()
            #expect(gracefulClient.frames.map(\.serial) == [1] && gracefulClient.closes == [.peerClosed])
            #expect(gracefulServer.closes.isEmpty && graceful.server.closedFor == .loggedOut)

            let (aborted, abortedClient, _) = openPair(loop)
            try aborted.settle()
            try aborted.server.send(note(1))
            aborted.server.abort()
            try aborted.settle()
            #expect(abortedClient.frames.isEmpty && abortedClient.closes == [.failed(.reset)])
        }
    }

    @Test("the receiver's frame limit holds as over TCP (frameTooLarge), and raising it admits the frame")
    func frameLimit() async throws {
        try await onManualClockLoop { loop, _ in
            let pair = MemoryLinkPair(loop: loop, clientFrameLimit: 8)
            let client = EndLog()
            pair.client.open(client.events)
            pair.server.open(EndLog().events)
            try pair.server.send(note(1, String(repeating: "y", count: 20)))
            try pair.settle()
            #expect(client.failures.first?.statusCode == .frameTooLarge && client.frames.isEmpty)

            let raised = MemoryLinkPair(loop: loop, clientFrameLimit: 8)
            let raisedClient = EndLog()
            raised.client.open(raisedClient.events)
            raised.server.open(EndLog().events)
            raised.client.raiseInboundLimit(to: 64)
            try raised.server.send(note(1, String(repeating: "y", count: 20)))
            try raised.settle()
            #expect(raisedClient.frames.count == 1 && raisedClient.failures.isEmpty)
        }
    }

    @Test("faults on a script: applied after a delay on the loop's clock")
    func scriptedFault() async throws {
        try await onManualClockLoop { loop, _ in
            let (pair, client, _) = openPair(loop)
            let start = loop.now
            pair.apply(.reset, after: .seconds(30))
            try #require(try loop.runUntil(timeout: .seconds(60)) { !client.closes.isEmpty })
            #expect(loop.now - start == .seconds(30))
        }
    }

    @Test("discard: what is sent one way is thrown away unread (counted by the sender), the other way flows")
    func discard() async throws {
        try await onManualClockLoop { loop, _ in
            let (pair, client, server) = openPair(loop)
            pair.apply(.discard(.toClient))
            try pair.server.send([note(1), note(2)])
            try pair.client.send(note(3))
            try pair.settle()
            #expect(client.frames.isEmpty && pair.server.sentFrames == 2 && pair.server.bufferedOutputBytes == 0)
            #expect(server.frames.map(\.serial) == [3])
        }
    }

    @Test("the connector: a link its owner closes before it connected never reaches the acceptor")
    func closedBeforeConnect() async throws {
        try await onManualClockLoop { loop, _ in
            var accepted = 0
            let links = MemoryLinkConnector { _ in accepted += 1 }
            let link = links.connector(loop, [.common], 1024)
            let log = EndLog()
            link.open(log.events)
            link.close()
            try #require(try links.lastPair?.settle() == true)
            #expect(accepted == 0 && log.opened == 0 && log.closes.isEmpty)
        }
    }

    @Test(
        "each end is fed in its own modes: a client end in the default mode only gets nothing in a modal run, while its server end in the common modes does"
    )
    func endsAreFedInTheirOwnModes() async throws {
        try await onManualClockLoop { loop, _ in
            loop.addCommonMode("modal")
            let pair = MemoryLinkPair(loop: loop, modes: [.default], serverModes: [.common])
            let client = EndLog(), server = EndLog()
            pair.server.open(server.events)
            pair.client.open(client.events)
            try #require(try pair.settle())
            #expect(client.opened == 1 && pair.server.modes == [.common] && pair.client.modes == [.default])
            try pair.client.send(note(1))
            try pair.server.send(note(2))
            try loop.run("modal", timeout: .milliseconds(10))
            #expect(server.frames.map(\.serial) == [1])
            #expect(client.frames.isEmpty, "the default mode did not run")
            try loop.run(.default, timeout: .milliseconds(10))
            #expect(client.frames.map(\.serial) == [2])
        }
    }

    @Test("the connector: each new connection's server end reports the connector's remote address as it was when connecting")
    func connectorRemoteAddress() async throws {
        try await onManualClockLoop { loop, _ in
            let links = MemoryLinkConnector { _ in }
            let host = try #require(SocketAddress(ip: "10.0.0.7", port: 4242))
            _ = links.connector(loop, [.common], 1024)
            links.remoteAddress = host
            _ = links.connector(loop, [.common], 1024)
            links.remoteAddress = nil
            #expect(links.pairs.map { $0.server.remoteAddress?.description } == [nil, host.description])
            #expect(links.pairs.allSatisfy { $0.client.remoteAddress == nil })
        }
    }

    @Test("the connector: a refused connect fails that attempt with refused, the next one goes online")
    func refusedConnect() async throws {
        try await onManualClockLoop { loop, clock in
            let bench = MemoryIMBench(loop: loop, clock: clock)
            bench.links.refuseNextConnect()
            var configuration = IMClientConfiguration(user: "ann", password: "pw")
            configuration.backoff = ReconnectBackoff.Policy(initialDelay: .seconds(1), maximumDelay: .seconds(1))
            let ann = bench.client(configuration)
            try #require(try bench.runUntil { ann.state == .online })
            #expect(ann.lastFailure == .transport(.failed(.refused)))
            #expect(bench.links.pairs.count == 2)
            try bench.close()
        }
    }

    @Test(
        "IMClient over the pair: a dropped link is found by the heartbeat (answer timeout) and the client reconnects; a refused write (output full) drops the connection"
    )
    func clientSeesFaults() async throws {
        try await onManualClockLoop { loop, clock in
            let bench = MemoryIMBench(loop: loop, clock: clock)
            var configuration = IMClientConfiguration(user: "ann", password: "pw")
            configuration.heartbeat = .fixed(.seconds(10))
            configuration.answerTimeout = .seconds(5)
            configuration.backoff = ReconnectBackoff.Policy(initialDelay: .seconds(1), maximumDelay: .seconds(1))
            let ann = bench.client(configuration)
            var disconnects: [(LoopInstant, IMDisconnectReason)] = []
            ann.onDisconnect = { client, reason in disconnects.append((client.loop.now, reason)) }
            try #require(try bench.runUntil { ann.state == .online })
            let droppedAt = loop.now
            bench.links.lastPair?.apply(.drop)
            try #require(try bench.runUntil { disconnects.count == 1 })
            #expect(disconnects[0].1 == .answerTimeout(.seconds(5)))
            #expect(disconnects[0].0 - droppedAt == .seconds(15), "the beat at 10 s, unanswered for 5 s")
            try #require(try bench.runUntil { ann.state == .online })
            #expect(bench.links.pairs.count == 2)

            bench.links.lastPair?.apply(.outputFull(.client, true))
            _ = try ann.send("hi", to: .user("bob"))
            try #require(try bench.runUntil { disconnects.count == 2 })
            #expect(disconnects[1].1 == .transport(.failed(.outputFull(limit: 0))))
            try bench.close()
        }
    }

    @Test(
        "a pair abandoned with frames in flight is freed when its loop's thread ends: the delivery timer's closure does not keep the wire"
    )
    func abandonedPairIsFreedWithItsLoop() async throws {
        final class WeakWire: @unchecked Sendable {
            weak var wire: MemoryLinkWire?
        }
        let weak = try await onLoopThread { () -> WeakWire in
            let weak = WeakWire()
            let (pair, _, _) = openPair(.current)
            pair.apply(.delay(.seconds(3600)))
            _ = try RunLoop.current.runUntil(timeout: .seconds(10)) { pair.client.isOpen }
            try pair.client.send(note(1))
            #expect(!pair.isIdle, "a frame is on its way: its delivery timer is pending")
            weak.wire = pair.wire
            return weak
        }
        // onLoopThread returns after the thread was joined, so after its loop's teardown.
        #expect(weak.wire == nil, "the wire outlived its pair and its loop")
    }
}
