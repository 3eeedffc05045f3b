import Glibc
import RunLoopKit
import RunLoopRedis
import RunLoopTesting
import Testing

/// Commands and replies against a real redis-server (one per test, on a unix socket).
@Suite struct RedisConnectionTests {
    @Test func pingAnswersWithAStatus() async throws {
        let reply = try await onLoopWithRedis { _, server in
            let connection = try openConnection(to: server)
            defer { connection.close() }
            return try call(connection, ["PING"])
        }
        #expect(reply == .success(.status("PONG")))
    }

    @Test("keys and values keep every byte: NUL and invalid UTF-8")
    func binaryValuesRoundTrip() async throws {
        let value: [UInt8] = [0x00, 0xFF, 0xFE, 0x41, 0x00, 0xC3]
        let key: [UInt8] = [0x6B, 0x00, 0x80]
        let (set, got) = try await onLoopWithRedis { loop, server in
            let connection = try openConnection(to: server)
            defer { connection.close() }
            var set: Result<RedisReply, RedisError>?
            var got: Result<RedisReply, RedisError>?
            connection.send(bytes: [Array("SET".utf8), key, value]) { set = $0 }
            connection.send(bytes: [Array("GET".utf8), key]) { got = $0 }
            try loop.runUntil(timeout: .seconds(10)) { got != nil }
            return (set, got)
        }
        #expect(set == .success(.status("OK")))
        #expect(got == .success(.bytes(value)))
        #expect(got?.reply?.string == nil)
    }

    @Test func integersNilArraysAndErrorReplies() async throws {
        let replies = try await onLoopWithRedis { _, server in
            let connection = try openConnection(to: server)
            defer { connection.close() }
            return try [
                call(connection, ["INCRBY", "counter", "5"]),
                call(connection, ["GET", "missing"]),
                call(connection, ["RPUSH", "list", "a", "", "c"]),
                call(connection, ["MGET", "counter", "missing"]),
                call(connection, ["LRANGE", "list", "0", "-1"]),
                call(connection, ["INCR", "list"]),
                call(connection, ["NOSUCHCOMMAND"]),
                call(connection, ["GET", "counter"])
            ]
        }
        #expect(replies[0] == .success(.integer(5)))
        #expect(replies[1] == .success(.null))
        #expect(replies[2] == .success(.integer(3)))
        #expect(replies[3] == .success(.array([.bytes(Array("5".utf8)), .null])))
        #expect(replies[4] == .success(.array([.bytes(Array("a".utf8)), .bytes([]), .bytes(Array("c".utf8))])))
        #expect(replies[5].error == .server("WRONGTYPE Operation against a key holding the wrong kind of value"))
        #expect(replies[6].error?.description.contains("unknown command") == true)
        // An error reply fails only its command: the connection carries on.
        #expect(replies[7].reply?.string == "5")
    }

    @Test("an error inside an array stays in the array")
    func errorsInsideATransactionsResult() async throws {
        let exec = try await onLoopWithRedis { _, server in
            let connection = try openConnection(to: server)
            defer { connection.close() }
            try call(connection, ["MULTI"])
            try call(connection, ["SET", "text", "x"])
            try call(connection, ["INCR", "text"])
            return try call(connection, ["EXEC"])
        }
        #expect(exec == .success(.array([.status("OK"), .error("ERR value is not an integer or out of range")])))
    }

    @Test("1,000 commands sent in one loop pass all complete, in order")
    func aThousandCommandsCompleteInOrder() async throws {
        let counts = try await onLoopWithRedis { loop, server in
            let connection = try openConnection(to: server)
            defer { connection.close() }
            var counts: [Int64] = []
            for _ in 0..<1_000 {
                connection.send(["INCR", "n"]) { counts.append($0.reply?.integer ?? -1) }
            }
            try loop.runUntil(timeout: .seconds(30)) { counts.count >= 1_000 }
            return counts
        }
        #expect(counts == Array(1...1_000))
    }

    @Test("XADD on one connection wakes an XREAD BLOCK on another")
    func xaddWakesABlockedReader() async throws {
        let (added, read) = try await onLoopWithRedis { loop, server in
            let reader = try openConnection(to: server)
            let writer = try openConnection(to: server)
            defer {
                reader.close()
                writer.close()
            }
            var read: Result<RedisReply, RedisError>?
            reader.send(["XREAD", "BLOCK", "10000", "STREAMS", "bus", "$"]) { read = $0 }
            try waitUntilBlocked(1, asking: writer)
            let added = try call(writer, ["XADD", "bus", "*", "kind", "hello"])
            try loop.runUntil(timeout: .seconds(10)) { read != nil }
            return (added, read)
        }
        let id = try #require(added.reply)
        let entry: RedisReply = .array([id, .array([.bytes(Array("kind".utf8)), .bytes(Array("hello".utf8))])])
        #expect(read == .success(.array([.array([.bytes(Array("bus".utf8)), .array([entry])])])))
    }

    @Test("DEBUG SLEEP past the command timeout: that command times out once, later ones behave")
    func aCommandTimesOutOnce() async throws {
        struct Outcome: Sendable {
            var sleep: [Result<RedisReply, RedisError>] = []
            var timedOutAfter: Duration?
            var ping: Result<RedisReply, RedisError>?
            var get: Result<RedisReply, RedisError>?
        }
        let outcome = try await onLoopWithRedis { loop, server in
            let connection = try openConnection(to: server, commandTimeout: .milliseconds(200))
            defer { connection.close() }
            var outcome = Outcome()
            let start = loop.now
            connection.send(["DEBUG", "SLEEP", "0.6"]) { result in
                outcome.sleep.append(result)
                outcome.timedOutAfter = loop.now - start
            }
            try loop.runUntil(timeout: .seconds(10)) { !outcome.sleep.isEmpty }
            // Redis answers in order: this one waits for the sleep, and the sleep's late reply is dropped.
            outcome.ping = try call(connection, ["PING"], timeout: .seconds(10))
            outcome.get = try call(connection, ["GET", "nothing"])
            return outcome
        }
        #expect(outcome.sleep == [.failure(.timedOut(.command))])
        #expect(outcome.timedOutAfter.map { $0 >= .milliseconds(200) && $0 < .milliseconds(600) } == true)
        #expect(outcome.ping == .success(.status("PONG")))
        #expect(outcome.get == .success(.null))
    }

    @Test("the server killed mid-command: every pending command fails once, and the server comes back")
    func serverKilledFailsEveryPendingCommandOnce() async throws {
        struct Outcome: Sendable {
            var results: [Int: [Result<RedisReply, RedisError>]] = [:]
            var closes: [RedisError] = []
            var after: Result<RedisReply, RedisError>?
            var restarted: Result<RedisReply, RedisError>?
        }
        let outcome = try await onLoopWithRedis { loop, server in
            var outcome = Outcome()
            let connection = try openConnection(to: server)
            let observer = try openConnection(to: server)
            connection.onClose = { _, reason in outcome.closes.append(reason) }
            let commands = [["BLPOP", "queue", "0"], ["GET", "a"], ["PING"]]
            for (index, command) in commands.enumerated() {
                connection.send(command) { outcome.results[index, default: []].append($0) }
            }
            try waitUntilBlocked(1, asking: observer)
            server.kill()
            try loop.runUntil(timeout: .seconds(10)) { !outcome.closes.isEmpty && !observer.state.isOpen }
            outcome.after = try call(connection, ["PING"])
            try server.restart()
            let fresh = try openConnection(to: server)
            defer { fresh.close() }
            outcome.restarted = try call(fresh, ["PING"])
            return outcome
        }
        let lost = try #require(outcome.closes.first)
        guard case .connectionLost = lost else { Issue.record("closed with \(lost)"); return }
        #expect(outcome.closes.count == 1)
        #expect(outcome.results.count == 3)
        for (_, results) in outcome.results { #expect(results == [.failure(lost)]) }
        #expect(outcome.after == .failure(lost))
        #expect(outcome.restarted == .success(.status("PONG")))
    }

    @Test("CLIENT KILL fails every pending command once")
    func clientKillFailsEveryPendingCommandOnce() async throws {
        struct Outcome: Sendable {
            var results: [[Result<RedisReply, RedisError>]] = [[], []]
            var closes: [RedisError] = []
            var killed: Result<RedisReply, RedisError>?
        }
        let outcome = try await onLoopWithRedis { loop, server in
            var outcome = Outcome()
            let victim = try openConnection(to: server)
            let killer = try openConnection(to: server)
            defer { killer.close() }
            victim.onClose = { _, reason in outcome.closes.append(reason) }
            let id = try #require(try call(victim, ["CLIENT", "ID"]).reply?.integer)
            victim.send(["BLPOP", "queue", "0"]) { outcome.results[0].append($0) }
            victim.send(["GET", "a"]) { outcome.results[1].append($0) }
            try waitUntilBlocked(1, asking: killer)
            outcome.killed = try call(killer, ["CLIENT", "KILL", "ID", "\(id)"])
            try loop.runUntil(timeout: .seconds(10)) { !outcome.closes.isEmpty }
            return outcome
        }
        #expect(outcome.killed == .success(.integer(1)))
        let lost = try #require(outcome.closes.first)
        guard case .connectionLost = lost else { Issue.record("closed with \(lost)"); return }
        #expect(outcome.results == [[.failure(lost)], [.failure(lost)]])
    }

    @Test("close() from inside a reply callback fails the rest once and closes once")
    func closeInsideAReplyCallback() async throws {
        struct Outcome: Sendable {
            var ping: [Result<RedisReply, RedisError>] = []
            var rest: [[Result<RedisReply, RedisError>]] = [[], []]
            var closes: [RedisError] = []
        }
        let outcome = try await onLoopWithRedis { loop, server in
            var outcome = Outcome()
            let connection = try openConnection(to: server)
            connection.onClose = { _, reason in outcome.closes.append(reason) }
            connection.send(["PING"]) { result in
                outcome.ping.append(result)
                connection.close()
                connection.close()
            }
            connection.send(["BLPOP", "queue", "0"]) { outcome.rest[0].append($0) }
            connection.send(["GET", "a"]) { outcome.rest[1].append($0) }
            try loop.runUntil(timeout: .seconds(10)) { !outcome.closes.isEmpty }
            // Nothing more comes later.
            _ = try loop.run(.default, timeout: .milliseconds(50))
            return outcome
        }
        #expect(outcome.ping == [.success(.status("PONG"))])
        #expect(outcome.rest == [[.failure(.closed)], [.failure(.closed)]])
        #expect(outcome.closes == [.closed])
    }

    @Test("close() mid-command completes the command on a later pass, never inside close")
    func closeMidCommand() async throws {
        let (result, completedInsideClose, reason) = try await onLoopWithRedis { loop, server in
            let connection = try openConnection(to: server)
            let observer = try openConnection(to: server)
            defer { observer.close() }
            var result: Result<RedisReply, RedisError>?
            var insideClose = false
            var completedInsideClose = false
            connection.send(["BLPOP", "queue", "0"]) { outcome in
                result = outcome
                completedInsideClose = insideClose
            }
            try waitUntilBlocked(1, asking: observer)
            insideClose = true
            connection.close()
            insideClose = false
            try loop.runUntil(timeout: .seconds(10)) { result != nil }
            return (result, completedInsideClose, connection.closeReason)
        }
        #expect(result == .failure(.closed))
        #expect(!completedInsideClose)
        #expect(reason == .closed)
    }

    @Test("a socket where nothing listens: connect fails with hiredis's cause")
    func connectWhereNothingListens() async throws {
        let (noFile, refused) = try await onLoopWithRedis { loop, server in
            server.kill()  // its socket file stays, with nobody behind it
            func attempt(_ path: String) throws -> (RedisError?, Result<RedisReply, RedisError>?) {
                let connection = RedisConnection(configuration: .unixSocket(path))
                var closed: RedisError?
                var command: Result<RedisReply, RedisError>?
                connection.onClose = { _, reason in closed = reason }
                connection.connect()
                connection.send(["PING"]) { command = $0 }
                try loop.runUntil(timeout: .seconds(10)) { closed != nil && command != nil }
                return (closed, command)
            }
            return try (attempt(server.socketPath + ".absent"), attempt(server.socketPath))
        }
        #expect(noFile.0 == .connectionFailed("No such file or directory"))
        #expect(noFile.1 == .failure(.connectionFailed("No such file or directory")))
        #expect(refused.0 == .connectionFailed("Connection refused"))
        #expect(refused.1 == .failure(.connectionFailed("Connection refused")))
    }

    @Test("TCP to a numeric address where nothing listens, and a name: connect fails")
    func tcpConnectFailures() async throws {
        let (refused, named) = try await onLoopThread {
            let loop = RunLoop.current
            let port = try unusedTCPPort()
            func attempt(_ configuration: RedisConfiguration) throws -> RedisError? {
                let connection = RedisConnection(configuration: configuration)
                var closed: RedisError?
                connection.onClose = { _, reason in closed = reason }
                connection.connect()
                try loop.runUntil(timeout: .seconds(10)) { closed != nil }
                return closed
            }
            return try (attempt(RedisConfiguration(host: "127.0.0.1", port: port)), attempt(RedisConfiguration(host: "localhost")))
        }
        #expect(refused == .connectionFailed("Connection refused"))
        #expect(named?.description.contains("not a numeric address") == true)
    }

    @Test("SUBSCRIBE, MONITOR and an empty command are refused without reaching the server")
    func pushCommandsAreRefused() async throws {
        let (results, ping) = try await onLoopWithRedis { loop, server in
            let connection = try openConnection(to: server)
            defer { connection.close() }
            var results: [Result<RedisReply, RedisError>] = []
            for command in [["subscribe", "news"], ["MONITOR"], []] {
                connection.send(command) { results.append($0) }
            }
            try loop.runUntil(timeout: .seconds(10)) { results.count == 3 }
            return (results, try call(connection, ["PING"]))
        }
        #expect(results.map { $0.error.map { if case .protocolMisuse = $0 { true } else { false } } } == [true, true, true])
        #expect(ping == .success(.status("PONG")))
    }
}

extension RedisConnection.State {
    var isOpen: Bool { self == .connecting || self == .ready }
}

/// The connect timeout on a manual clock, against a TCP listener whose accept queue is full: the
/// kernel drops the SYN, so the connect stays in progress until the deadline.
@Suite struct RedisConnectTimeoutTests {
    @Test("a connect that never completes times out at the deadline; what waited fails with it")
    func connectTimesOut() async throws {
        let (reason, elapsed, command) = try await onManualClockLoop { loop, clock in
            let listener = try FullListener()
            defer { listener.close() }
            let start = clock.now
            let connection = RedisConnection(configuration: RedisConfiguration(host: "127.0.0.1", port: listener.port, connectTimeout: .seconds(5)))
            var reason: RedisError?
            var closedAt: LoopInstant?
            var command: Result<RedisReply, RedisError>?
            connection.onClose = { _, why in
                reason = why
                closedAt = loop.now
            }
            connection.connect()
            connection.send(["PING"]) { command = $0 }
            try loop.runUntil(timeout: .seconds(60)) { reason != nil && command != nil }
            return (reason, closedAt.map { $0 - start }, command)
        }
        #expect(reason == .timedOut(.connect))
        #expect(elapsed == .seconds(5))
        #expect(command == .failure(.timedOut(.connect)))
    }
}
