import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopNet

/// What an idle accepted connection carries: the listener's settings shared, not copied, and no box
/// of rarely used state until something needs it — without changing what the connection does.
@Suite struct ConnectionFootprintTests {
    @Test("a connection fits a 272-byte heap chunk: its hold on itself a flag, its callback deferral in the rare state (issue 22)")
    func connectionFitsItsChunk() {
        // glibc hands out chunks in 16-byte steps with an 8-byte header: at most 264 bytes asked take a
        // 272-byte chunk, one more a 288-byte one.
        #expect(instanceSize(of: TCPConnection.self) <= 264)
    }

    @Test("accepted connections share the listener's limits until one of them changes its own")
    func acceptedConnectionsShareSettingsUntilOneChanges() async throws {
        struct Seen: Sendable {
            var before: [TCPBufferLimits] = []
            var after: [TCPBufferLimits] = []
            var latecomer: TCPBufferLimits?
        }
        let seen = try await onLoopThread {
            let loop = RunLoop.current
            let listener = TCPListener()
            defer { listener.close() }
            var accepted: [TCPConnection] = []
            listener.onAccept = { _, connection in accepted.append(connection) }
            try listener.listen(host: "127.0.0.1", port: 0)
            var clients = [TCPConnection(), TCPConnection()]
            for client in clients { client.connect(to: "127.0.0.1", port: listener.port) }
            try spin(loop) { accepted.count == 2 }
            var seen = Seen()
            seen.before = accepted.map(\.limits)
            accepted[0].limits.inputLimit = 4_096
            seen.after = accepted.map(\.limits)
            // A change on the listener reaches only connections accepted after it.
            listener.connectionLimits.readChunkSize = 1_024
            clients.append(TCPConnection())
            clients[2].connect(to: "127.0.0.1", port: listener.port)
            try spin(loop) { accepted.count == 3 }
            seen.latecomer = accepted[2].limits
            seen.after = accepted.prefix(2).map(\.limits)
            for connection in accepted + clients { connection.close(immediately: true) }
            return seen
        }
        let defaults = TCPBufferLimits()
        #expect(seen.before == [defaults, defaults])
        var changed = defaults
        changed.inputLimit = 4_096
        #expect(seen.after == [changed, defaults])
        var latecomer = defaults
        latecomer.readChunkSize = 1_024
        #expect(seen.latecomer == latecomer)
    }

    @Test("an accepted connection that echoes makes no box of rare state; a timeout or callback set makes it")
    func rareStateIsMadeOnlyWhenUsed() async throws {
        struct Seen: Sendable {
            var echoed = ""
            var boxAfterEcho = true
            var boxAfterClearingACallback = true
            var timeoutsWithoutBox: (write: Duration?, linger: Duration?) = (nil, nil)
            var boxAfterSettingTimeout = false
            var writeTimeoutSet: Duration?
            var lingerTimeoutKept: Duration?
        }
        let seen = try await onLoopThread {
            let loop = RunLoop.current
            let listener = try echoListener()
            defer { listener.close() }
            var server: TCPConnection?
            let echo = listener.onAccept
            listener.onAccept = { listener, connection in
                echo?(listener, connection)
                server = connection
            }
            var seen = Seen()
            let client = TCPConnection()
            client.onConnect = { try? $0.write(bytes("ping")) }
            client.onData = { _, chunk in seen.echoed += text(chunk) }
            client.connect(to: "127.0.0.1", port: listener.port)
            try spin(loop) { seen.echoed == "ping" }
            let accepted = try #require(server)
            seen.boxAfterEcho = accepted.rareState != nil
            accepted.onWritabilityChanged = nil
            seen.boxAfterClearingACallback = accepted.rareState != nil
            seen.timeoutsWithoutBox = (accepted.writeTimeout, accepted.lingerTimeout)
            accepted.writeTimeout = .seconds(5)
            seen.boxAfterSettingTimeout = accepted.rareState != nil
            seen.writeTimeoutSet = accepted.writeTimeout
            seen.lingerTimeoutKept = accepted.lingerTimeout
            client.close(immediately: true)
            accepted.close(immediately: true)
            return seen
        }
        #expect(seen.echoed == "ping")
        #expect(!seen.boxAfterEcho)
        #expect(!seen.boxAfterClearingACallback)
        #expect(seen.timeoutsWithoutBox.write == .seconds(60))
        #expect(seen.timeoutsWithoutBox.linger == .seconds(10))
        #expect(seen.boxAfterSettingTimeout)
        #expect(seen.writeTimeoutSet == .seconds(5))
        #expect(seen.lingerTimeoutKept == .seconds(10))
    }
}

/// The bytes an instance of `type` asks of the allocator: the class metadata's instance size (Swift's
/// stable ABI, docs/ABI/TypeMetadata.rst: after the isa, superclass, flags and instance address point
/// words on a platform without Objective-C interoperability).
private func instanceSize(of type: AnyClass) -> Int {
    let metadata = unsafeBitCast(type, to: UnsafeRawPointer.self)
    return Int(metadata.load(fromByteOffset: 24, as: UInt32.self))
}
