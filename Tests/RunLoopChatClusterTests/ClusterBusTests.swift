import RunLoopChatCluster
import RunLoopIMCore
import RunLoopKit
import RunLoopRedis
import RunLoopTesting
import Testing

/// The bus against a real redis-server, one per test: two nodes in one loop, and the faults a node
/// must live through.
@Suite("Cluster bus")
struct ClusterBusTests {
    @Test("two nodes exchange events, in order per conversation across the streams; a node hears nothing of its own")
    func twoNodesExchangeEvents() async throws {
        let server = try RedisServer.start()
        let (bSequences, bOthers, aEvents, aOrigins, shardsUsed) = try await onLoopThread {
            let a = try BusNode(busConfiguration(server, node: "a"))
            let b = try BusNode(busConfiguration(server, node: "b"))
            let rooms = (0..<6).map { "room\($0)" }
            var fromA: [ClusterEvent] = []
            for number in 1...20 { for room in rooms { fromA.append(roomMessage(UInt64(number), in: room)) } }
            let others: [ClusterEvent] = [.membership(user: "bob", room: "room0", joined: true, seq: 1), .presence(user: "bob", online: true)]
            try a.publishAndWait(fromA + others)
            try RunLoop.current.runUntil(timeout: .seconds(10)) { b.events.count == fromA.count + others.count }
            // b answers in every conversation; a, having read on past its own entries, hears only b.
            try b.publishAndWait(rooms.map { roomMessage(21, in: $0, from: "bob") })
            try RunLoop.current.runUntil(timeout: .seconds(10)) { a.events.count == rooms.count }
            let shardsUsed = Set(fromA.map { a.bus.shard(of: $0) }).count
            return (b.sequences, b.events.filter { if case .message = $0 { false } else { true } }, a.events, a.origins, shardsUsed)
        }
        #expect(shardsUsed > 1)
        #expect(bSequences.count == 6)
        for sequence in bSequences.values { #expect(sequence == Array(1...20)) }
        // Different streams: no order between the two.
        #expect(Set(bOthers) == [.membership(user: "bob", room: "room0", joined: true, seq: 1), .presence(user: "bob", online: true)])
        #expect(aEvents.count == 6)
        #expect(aOrigins == ["b"])
    }

    @Test("a node configured to deliver its own events hears them; a new reader does not replay older entries")
    func ownEventsWhenAsked() async throws {
        let server = try RedisServer.start()
        let heard = try await onLoopThread {
            let before = try BusNode(busConfiguration(server, node: "a"))
            try before.publishAndWait([roomMessage(1, in: "lobby")])
            let node = try BusNode(busConfiguration(server, node: "a", deliversOwnEvents: true))
            try node.publishAndWait([roomMessage(2, in: "lobby")])
            try RunLoop.current.runUntil(timeout: .seconds(10)) { !node.events.isEmpty }
            return node.sequences
        }
        #expect(heard == [.room("lobby"): [2]])
    }

    @Test("entries trimmed by MAXLEN before the reader got to them: it reports it fell behind and reads on")
    func trimmedWhileBehind() async throws {
        let server = try RedisServer.start()
        let (fellBehind, heard) = try await onLoopThread {
            let probe = try RedisProbe.trimmingEarly(server)
            try probe.run(["XADD", "test:stream:0", "*", "k", "p", "n", "z", "u", "old", "s", "1"])
            let node = try BusNode(busConfiguration(server, node: "a", streamCount: 1, maxLength: 4))
            // The reader is blocked in XREAD: a transaction adds 50 entries (trimming as it goes) before
            // Redis serves the blocked read, so the read finds its position far out of the window.
            try probe.run(["MULTI"])
            for user in 0..<50 { try probe.run(["XADD", "test:stream:0", "MAXLEN", "~", "4", "*", "k", "p", "n", "z", "u", "u\(user)", "s", "1"]) }
            try probe.run(["EXEC"])
            try RunLoop.current.runUntil(timeout: .seconds(10)) { !node.fellBehind.isEmpty }
            // It reads on: the next event comes through.
            try probe.run(["XADD", "test:stream:0", "*", "k", "p", "n", "z", "u", "after", "s", "0"])
            try RunLoop.current.runUntil(timeout: .seconds(10)) { node.events.last == .presence(user: "after", online: false) }
            return (node.fellBehind, node.events)
        }
        #expect(fellBehind == [[0]])
        #expect(heard.count < 12)
        #expect(heard.first != .presence(user: "u0", online: true))
        #expect(!heard.contains(.presence(user: "old", online: true)))
    }

    @Test("Redis killed and started again empty: both sides reconnect, the reader reports every stream behind, events flow again")
    func redisRestartsEmpty() async throws {
        let server = try RedisServer.start()
        let (fellBehind, heard) = try await onLoopThread {
            let a = try BusNode(busConfiguration(server, node: "a"))
            let b = try BusNode(busConfiguration(server, node: "b"))
            try b.publishAndWait([roomMessage(1, in: "lobby")])
            try RunLoop.current.runUntil(timeout: .seconds(10)) { a.events.count == 1 }
            server.kill()
            try RunLoop.current.runUntil(timeout: .seconds(10)) { !a.bus.isReading && !b.bus.isPublishing }
            try server.restart()
            try a.waitUntilUp()
            try b.waitUntilUp()
            try b.publishAndWait([roomMessage(2, in: "lobby")])
            try RunLoop.current.runUntil(timeout: .seconds(10)) { a.events.count == 2 }
            return (a.fellBehind, a.sequences)
        }
        #expect(fellBehind == [[0, 1, 2, 3]])
        #expect(heard == [.room("lobby"): [1, 2]])
    }

    @Test("a bus started while Redis is down connects once it is up, and reports every stream behind")
    func redisDownAtStart() async throws {
        let server = try RedisServer.start()
        server.kill()
        let (fellBehind, heard) = try await onLoopThread {
            let bus = ClusterBus(configuration: busConfiguration(server, node: "a", deliversOwnEvents: true))
            defer { bus.close() }
            var fellBehind: [[Int]] = []
            var heard: [ClusterEvent] = []
            bus.onReport = { report in
                switch report {
                case .event(let event, _): heard.append(event)
                case .fellBehind(let shards): fellBehind.append(shards)
                }
            }
            bus.start()
            var refused: ClusterBusError?
            bus.publish(roomMessage(1, in: "lobby")) { refused = $0.error }
            try RunLoop.current.runUntil(timeout: .seconds(10)) { refused != nil }
            try server.restart()
            try RunLoop.current.runUntil(timeout: .seconds(10)) { bus.isReading && bus.isPublishing }
            bus.publish(roomMessage(2, in: "lobby"))
            try RunLoop.current.runUntil(timeout: .seconds(10)) { !heard.isEmpty }
            return (fellBehind, heard)
        }
        #expect(fellBehind == [[0, 1, 2, 3]])
        #expect(heard == [roomMessage(2, in: "lobby")])
    }

    @Test("CLIENT KILL of the reader: it reconnects and resumes from its last entry, nothing lost, not behind")
    func readerKilled() async throws {
        let server = try RedisServer.start()
        let (fellBehind, heard, reconnected) = try await onLoopThread {
            let probe = try RedisProbe(server)
            let a = try BusNode(busConfiguration(server, node: "a"))
            let b = try BusNode(busConfiguration(server, node: "b"))
            try b.publishAndWait((1...5).map { roomMessage($0, in: "lobby") })
            try RunLoop.current.runUntil(timeout: .seconds(10)) { a.events.count == 5 }
            let killed = try probe.blockedReader(of: "a")
            try probe.run(["CLIENT", "KILL", "ID", killed ?? "none"])
            try b.publishAndWait((6...10).map { roomMessage($0, in: "lobby") })
            try RunLoop.current.runUntil(timeout: .seconds(10)) { a.events.count == 10 }
            let reader = try probe.blockedReader(of: "a")
            return (a.fellBehind, a.sequences, killed != nil && reader != nil && reader != killed)
        }
        #expect(reconnected)
        #expect(fellBehind.isEmpty)
        #expect(heard == [.room("lobby"): Array(1...10)])
    }

    @Test("entries trimmed while the reader was disconnected: the reconnect cannot prove its position and reports it behind")
    func trimmedWhileDisconnected() async throws {
        let server = try RedisServer.start()
        let (fellBehind, heard) = try await onLoopThread {
            let probe = try RedisProbe.trimmingEarly(server)
            let a = try BusNode(busConfiguration(server, node: "a", streamCount: 1, maxLength: 4, reconnectDelay: .milliseconds(300)))
            let b = try BusNode(busConfiguration(server, node: "b", streamCount: 1, maxLength: 4))
            try b.publishAndWait([roomMessage(1, in: "lobby")])
            try RunLoop.current.runUntil(timeout: .seconds(10)) { a.events.count == 1 }
            try probe.run(["CLIENT", "KILL", "ID", probe.blockedReader(of: "a") ?? "none"])
            // Meant to land while a waits to reconnect; landing later, the check after the read finds it.
            try b.publishAndWait((2...50).map { roomMessage($0, in: "lobby") })
            try RunLoop.current.runUntil(timeout: .seconds(10)) { !a.fellBehind.isEmpty && a.bus.isReading }
            try b.publishAndWait([roomMessage(51, in: "lobby")])
            try RunLoop.current.runUntil(timeout: .seconds(10)) { a.sequences[.room("lobby")]?.last == 51 }
            return (a.fellBehind, a.sequences[.room("lobby")] ?? [])
        }
        #expect(fellBehind == [[0]])
        #expect(heard.first == 1)
        #expect(heard.count < 20)
    }

    @Test("Redis asleep for less than the reader waits: nothing is lost, nothing reconnects")
    func shortStall() async throws {
        let server = try RedisServer.start()
        let (fellBehind, heard, connections) = try await onLoopThread {
            let probe = try RedisProbe(server)
            let a = try BusNode(busConfiguration(server, node: "a", blockTimeout: .milliseconds(500)))
            let b = try BusNode(busConfiguration(server, node: "b", blockTimeout: .milliseconds(500)))
            let before = try probe.info("total_connections_received")
            let sleeper = try RedisProbe(server)
            sleeper.start(["DEBUG", "SLEEP", "0.2"])
            try b.publishAndWait((1...3).map { roomMessage($0, in: "lobby") })
            try RunLoop.current.runUntil(timeout: .seconds(10)) { a.events.count == 3 }
            let after = try probe.info("total_connections_received")
            return (a.fellBehind, a.sequences, [before, after])
        }
        #expect(fellBehind.isEmpty)
        #expect(heard == [.room("lobby"): [1, 2, 3]])
        // Only the sleeper's own connection came in between.
        #expect(connections[0].flatMap { Int($0) }.map { $0 + 1 } == connections[1].flatMap { Int($0) })
    }

    @Test("Redis asleep for longer than a read may take: the reader reconnects, proves its position, loses nothing")
    func longStall() async throws {
        let server = try RedisServer.start()
        let (fellBehind, heard) = try await onLoopThread {
            let a = try BusNode(busConfiguration(server, node: "a", replyGrace: .milliseconds(150)))
            let b = try BusNode(busConfiguration(server, node: "b"))
            let probe = try RedisProbe(server)
            let before = try probe.info("total_connections_received")
            probe.start(["DEBUG", "SLEEP", "0.6"])
            try b.publishAndWait((1...3).map { roomMessage($0, in: "lobby") })
            try RunLoop.current.runUntil(timeout: .seconds(10)) { a.events.count == 3 }
            let after = try probe.info("total_connections_received")
            #expect(Int(after ?? "") ?? 0 > Int(before ?? "") ?? .max)
            return (a.fellBehind, a.sequences)
        }
        #expect(fellBehind.isEmpty)
        #expect(heard == [.room("lobby"): [1, 2, 3]])
    }

    @Test("publishing while Redis is down fails at once with a typed error; a paused Redis times publishes out and caps those waiting")
    func publishFailsFast() async throws {
        let server = try RedisServer.start()
        let (stalled, down, completedInsideCall) = try await onLoopThread {
            let node = try BusNode(busConfiguration(server, node: "a", publishTimeout: .milliseconds(100), maxPendingPublishes: 2))
            // Answered before the publishes go out, so they surely meet the pause (a DEBUG SLEEP sent
            // on another connection could reach Redis after them).
            try RedisProbe(server).run(["CLIENT", "PAUSE", "400", "WRITE"])
            var stalled: [Result<Void, ClusterBusError>] = []
            for number in 1...3 { node.bus.publish(roomMessage(UInt64(number), in: "lobby")) { stalled.append($0) } }
            try RunLoop.current.runUntil(timeout: .seconds(10)) { stalled.count == 3 }

            server.kill()
            try RunLoop.current.runUntil(timeout: .seconds(10)) { !node.bus.isPublishing }
            var down: Result<Void, ClusterBusError>?
            node.bus.publish(roomMessage(4, in: "lobby")) { down = $0 }
            let completedInsideCall = down != nil
            try RunLoop.current.runUntil(timeout: .seconds(10)) { down != nil }
            return (stalled.map(\.error), down?.error, completedInsideCall)
        }
        #expect(stalled == [.tooManyPending(limit: 2), .redis(.timedOut(.command)), .redis(.timedOut(.command))])
        #expect(down == .notConnected)
        #expect(!completedInsideCall)
    }
}

extension Result where Success == Void, Failure == ClusterBusError {
    var error: ClusterBusError? {
        if case .failure(let error) = self { error } else { nil }
    }
}
