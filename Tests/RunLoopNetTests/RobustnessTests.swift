import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

@testable import RunLoopNet

/// Misbehaving peers, SIGPIPE, memory, and modes.
@Suite struct RobustnessTests {
    @Test func badPeersCloseOnlyTheirOwnConnections() async throws {
        struct Outcome: Sendable {
            var serverReasons: [CloseReason] = []
            var goodReplies: [String] = []
            var goodReason: CloseReason?
        }
        let outcome = try await onLoopThread {
            let loop = RunLoop.current
            var outcome = Outcome()
            // A line protocol: echo each line, at most 32 bytes.
            let listener = TCPListener()
            defer { listener.close() }
            listener.onAccept = { _, connection in
                func next(_ connection: TCPConnection) {
                    connection.read(upTo: bytes("\n"), maximumLength: 32) { connection, line in
                        try? connection.write(line)
                        next(connection)
                    }
                }
                next(connection)
                connection.onClose = { _, why in outcome.serverReasons.append(why) }
            }
            try listener.listen()

            let good = TCPConnection()
            var sent = 0
            func sendLine(_ connection: TCPConnection) {
                sent += 1
                try? connection.write(bytes("line \(sent)\n"))
            }
            good.onConnect = sendLine
            good.read(upTo: bytes("\n")) { _, line in outcome.goodReplies.append(text(line)) }
            good.onData = { _, chunk in outcome.goodReplies.append(text(chunk)) }
            good.onClose = { _, why in outcome.goodReason = why }
            good.connect(to: "127.0.0.1", port: listener.port)
            try spin(loop) { outcome.goodReplies.count == 1 }

            // Garbage without a newline, a reset, and a connect-and-vanish, all at once.
            let garbage = TCPConnection()
            garbage.onConnect = { try? $0.write([UInt8](repeating: 0xFF, count: 200)) }
            garbage.connect(to: "127.0.0.1", port: listener.port)
            let resetter = TCPConnection()
            resetter.onConnect = { connection in
                try? connection.write(bytes("partial line"))
                connection.close(immediately: true)
            }
            resetter.connect(to: "127.0.0.1", port: listener.port)
            let vanisher = TCPConnection()
            vanisher.onConnect = { $0.close() }
            vanisher.connect(to: "127.0.0.1", port: listener.port)
            try spin(loop) { outcome.serverReasons.count == 3 }

            // The well-behaved client is still served.
            sendLine(good)
            try spin(loop) { outcome.goodReplies.joined().contains("line 2\n") }
            good.close()
            try spin(loop) { outcome.goodReason != nil && outcome.serverReasons.count == 4 }
            return outcome
        }
        let bad = outcome.serverReasons.prefix(3)
        #expect(bad.contains(.failed(.delimiterNotFound(limit: 32))))
        #expect(bad.contains(.failed(.connectionReset)))
        #expect(bad.contains(.peerClosed))
        #expect(outcome.goodReplies.joined() == "line 1\nline 2\n")
        #expect(outcome.goodReason == .closed)
        #expect(outcome.serverReasons.last == .peerClosed)
    }

    @Test func writingToAClosedPeerNeverRaisesSIGPIPE() async throws {
        let (pipes, reason, writesTried) = try await onLoopThread {
            let loop = RunLoop.current
            // While this source exists a SIGPIPE is counted here instead of killing the process.
            var pipes = 0
            let sigpipe = try RunLoopSignalSource(signal: SIGPIPE) { _, count in pipes += count }
            try loop.add(sigpipe, forMode: .default)
            defer { sigpipe.invalidate() }
            let listener = TCPListener()
            defer { listener.close() }
            listener.onAccept = { _, connection in
                // A graceful close lingers, discarding what the client keeps sending, until the linger
                // timeout: keep that short so the client soon writes to a socket that is really gone.
                connection.lingerTimeout = .milliseconds(20)
                connection.close()
            }
            try listener.listen()
            var reason: CloseReason?
            var writesTried = 0
            let client = TCPConnection()
            client.allowsHalfClosure = true
            client.onClose = { _, why in reason = why }
            client.connect(to: "127.0.0.1", port: listener.port)
            // The peer has closed; keep writing until the kernel reports the broken connection.
            let writer = RunLoopTimer(after: .milliseconds(1), repeating: .milliseconds(2)) { timer in
                guard client.state == .connected, client.isInputClosed else { return }
                writesTried += 1
                do throws(NetError) { try client.write(bytes("are you there?")) } catch { timer.invalidate() }
            }
            loop.add(writer, forMode: .default)
            try spin(loop) { reason != nil }
            writer.invalidate()
            // Give a stray signal the chance to be seen.
            try loop.run(.default, timeout: .milliseconds(20))
            return (pipes, reason, writesTried)
        }
        #expect(pipes == 0)
        #expect(reason == .failed(.connectionReset))
        #expect(writesTried >= 2)
    }

    @Test func closedConnectionsAndListenersAreReleased() async throws {
        let (clientGone, serverGone, listenerGone) = try await onLoopThread {
            let loop = RunLoop.current
            weak var weakClient: TCPConnection?
            weak var weakServer: TCPConnection?
            weak var weakListener: TCPListener?
            var closed = 0
            do {
                let listener = TCPListener()
                weakListener = listener
                listener.onAccept = { _, connection in
                    weakServer = connection
                    // A callback capturing its own connection: the cycle is broken at close.
                    connection.onData = { _, chunk in try? connection.write(chunk) }
                    connection.onClose = { _, _ in closed += 1 }
                }
                try listener.listen()
                let client = TCPConnection()
                weakClient = client
                client.onConnect = { try? $0.write(bytes("ping")) }
                client.read(exactly: 4) { connection, _ in connection.close() }
                client.onClose = { _, _ in closed += 1 }
                client.connect(to: "127.0.0.1", port: listener.port)
                try spin(loop) { closed == 2 }
                listener.close()
            }
            // Let the loop drop what it still holds from the last pass.
            try loop.run(.default, timeout: .milliseconds(10))
            return (weakClient == nil, weakServer == nil, weakListener == nil)
        }
        #expect(clientGone)
        #expect(serverGone)
        #expect(listenerGone)
    }

    @Test func connectionsStillOpenWhenTheLoopThreadEndsAreClosedWithAReason() async throws {
        let reasons = LockedBox<[CloseReason]>([])
        let bothClosed = Latch()
        try await onLoopThread {
            let loop = RunLoop.current
            let listener = TCPListener()
            listener.onAccept = { _, connection in
                connection.onData = { _, _ in }
                connection.onClose = { _, why in
                    reasons.update { $0.append(why) }
                    if reasons.get().count == 2 { bothClosed.open() }
                }
            }
            try listener.listen()
            let client = TCPConnection()
            client.onClose = { _, why in
                reasons.update { $0.append(why) }
                if reasons.get().count == 2 { bothClosed.open() }
            }
            client.connect(to: "127.0.0.1", port: listener.port)
            try spin(loop) { client.state == .connected && listener.connectionCount == 1 }
            // Returning ends the thread with everything still open.
        }
        bothClosed.wait()
        #expect(reasons.get() == [.failed(.loopTornDown), .failed(.loopTornDown)])
    }

    /// The same for connections with no source in the loop when it ends: one whose owner paused
    /// reading with nothing to write, and one that read its peer's half-close to the end. Neither gets
    /// a cancel callout from a source; each must still be closed with the reason, its socket let go
    /// and the connection freed.
    @Test func connectionsWithNoSourceInTheLoopAreClosedWhenItsThreadEnds() async throws {
        final class Weak: @unchecked Sendable {
            weak var connection: TCPConnection?
        }
        let reasons = LockedBox<[CloseReason]>([])
        let (paused, halfClosed) = (Weak(), Weak())
        try await onLoopThread {
            let loop = RunLoop.current
            let listener = TCPListener()
            defer { listener.close() }
            var accepted: [TCPConnection] = []
            listener.onAccept = { _, connection in
                accepted.append(connection)
                connection.allowsHalfClosure = true
                connection.onData = { _, _ in }
                connection.onClose = { _, why in reasons.update { $0.append(why) } }
            }
            try listener.listen()
            let first = TCPConnection(), second = TCPConnection()
            for client in [first, second] { client.connect(to: "127.0.0.1", port: listener.port) }
            try spin(loop) { accepted.count == 2 && first.state == .connected && second.state == .connected }
            accepted[0].pauseReading()
            second.shutdownOutput()
            try spin(loop) { !accepted[1].isReadWatched }
            #expect(!accepted[0].isReadWatched && !accepted[0].isWriteWatched)
            paused.connection = accepted[0]
            halfClosed.connection = accepted[1]
            for client in [first, second] { client.close(immediately: true) }
            // Returning ends the thread with both accepted connections open and out of the loop
            // (finish, which these reasons come from, releases the socket).
        }
        #expect(reasons.get() == [.failed(.loopTornDown), .failed(.loopTornDown)])
        #expect(paused.connection == nil && halfClosed.connection == nil, "a connection outlived its loop")
    }

    /// A listener whose accepting is paused (out of descriptors) has no source in the loop either: it
    /// must still stop when its loop's thread ends — its socket closed, so clients are refused rather
    /// than left in a backlog nobody reads, and the listener freed.
    @Test func aListenerPausedForDescriptorsStopsWhenItsThreadEnds() async throws {
        final class Weak: @unchecked Sendable {
            weak var listener: TCPListener?
        }
        let weak = Weak()
        let (socket, listedWhilePaused) = try await onLoopThread { () -> (String?, Bool) in
            let loop = RunLoop.current
            let listener = TCPListener()
            listener.acceptRetryDelay = .seconds(3600)
            listener.acceptCall = { _ in (-EMFILE, nil) }
            try listener.listen()
            let client = TCPConnection()
            defer { client.close(immediately: true) }
            client.connect(to: "127.0.0.1", port: listener.port)
            try spin(loop) { listener.acceptFailures > 0 }
            weak.listener = listener
            return (ListeningSockets.inode(listeningOn: listener.port), listener.isListedForTeardown)
            // Returning ends the thread with the listener still listening, its source out of the loop.
        }
        #expect(listedWhilePaused, "a paused listener is not listed for the loop's end")
        #expect(weak.listener == nil, "a paused listener outlived its loop")
        // The socket itself, by its inode, not its port: in the whole suite another test's listener may
        // be given the freed port number before this line runs (a connect to it was seen to succeed).
        let inode = try #require(socket, "the paused listener's socket was not found listening")
        #expect(!ListeningSockets.isOpen(inode: inode), "the paused listener's socket is still open")
    }

    /// Listing a connection for the loop's end adds nothing to the modes its owner runs: a source
    /// there would keep the mode from ever being empty again, and `run` would stop returning
    /// `finished` (Autobahn's client waited out a one-second timeout after every case).
    @Test func theTeardownWatchStaysOutOfTheOwnersModes() async throws {
        let (listed, inDefault, inOwnMode) = try await onLoopThread { () -> (Bool, Bool, Bool) in
            let loop = RunLoop.current
            let listener = TCPListener(modes: [.default])
            defer { listener.close() }
            var accepted: [TCPConnection] = []
            listener.onAccept = { _, connection in
                accepted.append(connection)
                connection.onData = { _, _ in }
            }
            try listener.listen()
            let client = TCPConnection(modes: [.default])
            defer { client.close(immediately: true) }
            client.connect(to: "127.0.0.1", port: listener.port)
            try spin(loop) { accepted.count == 1 && client.state == .connected }
            accepted[0].pauseReading()
            defer { accepted[0].close(immediately: true) }
            let source = try #require(LoopTeardownWatch.source(of: loop))
            return (
                accepted[0].isListedForTeardown, loop.contains(source, forMode: .default),
                loop.contains(source, forMode: LoopTeardownWatch.mode)
            )
        }
        #expect(listed, "a paused connection with nothing to write is listed")
        #expect(!inDefault, "the watch's source is in a mode its owner runs")
        #expect(inOwnMode)
    }

    @Test func openConnectionsKeepThemselvesAliveWithoutAnOwner() async throws {
        let echoed = try await onLoopThread {
            let loop = RunLoop.current
            let listener = try echoListener()
            defer { listener.close() }
            var echoed = ""
            do {
                // Not stored anywhere: the loop keeps it until it closes.
                let client = TCPConnection()
                client.onConnect = { try? $0.write(bytes("still here")) }
                client.onData = { connection, chunk in
                    echoed += text(chunk)
                    connection.close()
                }
                client.connect(to: "127.0.0.1", port: listener.port)
            }
            try spin(loop) { echoed == "still here" }
            return echoed
        }
        #expect(echoed == "still here")
    }

    @Test func commonModesKeepConnectionsWorkingInAModalMode() async throws {
        let (commonEchoes, defaultOnlyEchoesDuringModal, defaultOnlyEchoesAfter) = try await onLoopThread {
            let loop = RunLoop.current
            let modal = RunLoop.Mode("Modal")
            loop.addCommonMode(modal)
            let listener = try echoListener()
            defer { listener.close() }
            var commonEchoes = 0
            var defaultEchoes = 0
            let common = TCPConnection()
            common.onData = { _, _ in commonEchoes += 1 }
            common.connect(to: "127.0.0.1", port: listener.port)
            let defaultOnly = TCPConnection(modes: [.default])
            defaultOnly.onData = { _, _ in defaultEchoes += 1 }
            defaultOnly.connect(to: "127.0.0.1", port: listener.port)
            try spin(loop) { common.state == .connected && defaultOnly.state == .connected }
            // While the loop runs the modal mode, only the common-mode connection is serviced.
            try common.write(bytes("a"))
            try defaultOnly.write(bytes("b"))
            try spin(loop, mode: modal, for: .milliseconds(100)) { commonEchoes == 1 }
            let during = defaultEchoes
            try spin(loop) { defaultEchoes == 1 }
            common.close()
            defaultOnly.close()
            return (commonEchoes, during, defaultEchoes)
        }
        #expect(commonEchoes == 1)
        #expect(defaultOnlyEchoesDuringModal == 0)
        #expect(defaultOnlyEchoesAfter == 1)
    }

    @Test func quietConnectionsLetTheLoopSleep() async throws {
        // Level-triggered readiness must not spin: an idle pair, a half-closed pair (end of input
        // pending for ever), a paused reader with unread input, and a writer blocked on a full socket.
        let (wakeUps, blockedQueue) = try await onLoopThread {
            let loop = RunLoop.current
            let small = TCPOptions(sendBufferSize: 4096, receiveBufferSize: 4096)
            var server: [TCPConnection] = []
            let listener = TCPListener(connectionOptions: small)
            defer { listener.close() }
            listener.onAccept = { _, connection in
                server.append(connection)
                connection.allowsHalfClosure = true
                connection.onData = { _, _ in }
            }
            try listener.listen()
            func open() -> TCPConnection {
                let client = TCPConnection(options: small)
                client.allowsHalfClosure = true
                client.connect(to: "127.0.0.1", port: listener.port)
                return client
            }
            let idle = open()
            let halfClosed = open()
            let pausedReader = open()
            pausedReader.pauseReading()
            let stalledReader = open()
            stalledReader.pauseReading()
            try spin(loop) { server.count == 4 && [idle, halfClosed, pausedReader, stalledReader].allSatisfy { $0.state == .connected } }
            halfClosed.shutdownOutput()
            try? server[2].write(bytes("unread"))
            try? server[3].write([UInt8](repeating: 1, count: 1 << 20))
            // Let all of that settle, then count how often the loop wakes up in 100 ms.
            try loop.run(.default, timeout: .milliseconds(20))
            var wakeUps = 0
            let observer = RunLoopObserver(activities: .afterWaiting) { _, _ in wakeUps += 1 }
            loop.add(observer, forMode: .default)
            try loop.run(.default, timeout: .milliseconds(100))
            observer.invalidate()
            let blocked = server[3].bufferedOutputBytes
            for connection in [idle, halfClosed, pausedReader, stalledReader] { connection.close(immediately: true) }
            return (wakeUps, blocked)
        }
        #expect(blockedQueue > 0, "the writer really is blocked")
        #expect(wakeUps <= 3, "the loop slept instead of spinning (\(wakeUps) wake-ups)")
    }

    @Test func optionsAreAppliedToTheSocket() async throws {
        let values = try await onLoopThread {
            let loop = RunLoop.current
            let listener = try echoListener()
            defer { listener.close() }
            let options = TCPOptions(
                noDelay: true,
                keepAlive: .init(idle: .seconds(30), interval: .seconds(5), count: 3),
                userTimeout: .milliseconds(7500))
            let client = TCPConnection(options: options)
            client.connect(to: "127.0.0.1", port: listener.port)
            try spin(loop) { client.state == .connected }
            let fd = client.fileDescriptor ?? -1
            func option(_ level: Int32, _ name: Int32) -> Int32 {
                var value: Int32 = 0
                var length = socklen_t(4)
                getsockopt(fd, level, name, &value, &length)
                return value
            }
            let tcp = Int32(IPPROTO_TCP)
            let values = [
                option(tcp, TCP_NODELAY), option(SOL_SOCKET, SO_KEEPALIVE), option(tcp, TCP_KEEPIDLE),
                option(tcp, TCP_KEEPINTVL), option(tcp, TCP_KEEPCNT), option(tcp, TCP_USER_TIMEOUT),
                fcntl(fd, F_GETFL) & O_NONBLOCK != 0 ? 1 : 0, fcntl(fd, F_GETFD) & FD_CLOEXEC
            ]
            client.close()
            return values
        }
        #expect(values == [1, 1, 30, 5, 3, 7500, 1, 1])
    }
}

/// The kernel's table of TCP sockets (`/proc/net/tcp`, `tcp6`), which names each socket by its inode:
/// unlike a port number, an inode is not handed to another socket while this one is open.
enum ListeningSockets {
    /// The inode of the socket listening on `port`, if there is one.
    static func inode(listeningOn port: UInt16) -> String? {
        let hex = String(port, radix: 16, uppercase: true)
        let wanted = ":" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        return rows().first { $0.local.hasSuffix(wanted) && $0.state == "0A" }?.inode
    }

    /// Whether any TCP socket of this machine still has `inode`.
    static func isOpen(inode: String) -> Bool {
        rows().contains { $0.inode == inode }
    }

    private static func rows() -> [(local: String, state: String, inode: String)] {
        ["/proc/net/tcp", "/proc/net/tcp6"].flatMap { path -> [(local: String, state: String, inode: String)] in
            guard let text = contents(of: path) else { return [] }
            return text.split(separator: "\n").dropFirst().compactMap { line in
                let fields = line.split(separator: " ")
                guard fields.count > 9 else { return nil }
                return (String(fields[1]), String(fields[3]), String(fields[9]))
            }
        }
    }

    private static func contents(of path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
