import RunLoopIM
import RunLoopIMCore
import RunLoopIMTesting
import RunLoopKit
import RunLoopTesting
import Testing

/// `AsyncIMClient`, the actor on a client's loop: streams in order, sends that return on SEND_ACK or
/// throw the failure, cancellation, calls from other threads, bounded buffers. On a manual clock over
/// memory links; each test drives its loop with `run(untilComplete:)`.
@Suite struct AsyncIMClientTests {
    @Test("messages reach a subscriber in send order; each send returns once the server stored it")
    func orderAndReceipts() async throws {
        let (texts, seqs, onLoop) = try await onManualClockLoop { loop, clock in
            try loop.run {
                let (bench, ann, ben) = benchWithAnnAndBen(loop, clock)
                let inbox = ben.messages
                try await AsyncIMClient.startAll(ann, ben)
                var seqs: [UInt64] = []
                for index in 0..<20 { seqs.append(try await ann.send("m\(index)", to: .user("ben")).seq) }
                let onLoop = loop.isCurrentThread
                let texts = await inbox.prefix(20).reduce(into: [String]()) { $0.append($1.text) }
                await AsyncIMClient.closeAll(ann, ben)
                bench.server.shutdown()
                return (texts, seqs, onLoop)
            }
        }
        #expect(texts == (0..<20).map { "m\($0)" })
        #expect(seqs == seqs.sorted() && Set(seqs).count == 20)
        #expect(onLoop)
    }

    @Test("the state stream replays the current state, follows each change and ends after closed")
    func statesEndAfterClosed() async throws {
        let states = try await onManualClockLoop { loop, clock in
            try loop.run {
                let bench = MemoryIMBench(loop: loop, clock: clock)
                let ann = AsyncIMClient.wrapping(bench.client(user("ann"), start: false))
                let observed = ann.states
                try await AsyncIMClient.startAll(ann)
                await ann.close()
                let states = await observed.reduce(into: [IMConnectionState]()) { $0.append($1) }
                bench.server.shutdown()
                return states
            }
        }
        #expect(states.first == .idle)
        #expect(states.contains(.online))
        #expect(states.last == .closed(.userClosed))
    }

    @Test("a message the client refuses throws the IMClientError; one that fails throws its IMSendFailure")
    func failedSends() async throws {
        let (refused, failed) = try await onManualClockLoop { loop, clock in
            try loop.run {
                let bench = MemoryIMBench(loop: loop, clock: clock)
                let ann = AsyncIMClient.wrapping(bench.client(user("ann"), start: false))
                let tooLarge = String(repeating: "x", count: 1 << 20)
                var refused: IMClientError?
                do { try await ann.send(tooLarge, to: .user("ben")) } catch let error as IMClientError { refused = error }
                // Never started: the message waits in the outbox until the close fails it.
                let updates = ann.deliveries
                let queued = Task(executorPreference: loop) { try await ann.send("hello", to: .user("ben")) }
                _ = await updates.first { $0.state == .queued }
                await ann.close()
                var failed: IMSendFailure?
                do { _ = try await queued.value } catch let error as IMSendFailure { failed = error }
                bench.server.shutdown()
                return (refused, failed)
            }
        }
        guard case .messageTooLarge? = refused else {
            Issue.record("expected messageTooLarge, got \(String(describing: refused))")
            return
        }
        #expect(failed == .clientClosed)
    }

    @Test("cancelling a send ends its wait at once; the message is still stored and delivered")
    func cancelledSendStillDelivers() async throws {
        let (outcome, delivered, finalState) = try await onManualClockLoop { loop, clock in
            try loop.run {
                let (bench, ann, ben) = benchWithAnnAndBen(loop, clock)
                let inbox = ben.messages
                let updates = ann.deliveries
                try await AsyncIMClient.startAll(ben)
                // Offline: the send waits in the outbox when its task is cancelled.
                let sending = Task(executorPreference: loop) { try await ann.send("still here", to: .user("ben"), id: "m1") }
                _ = await updates.first { $0.id == "m1" }
                sending.cancel()
                let outcome: String
                do {
                    _ = try await sending.value
                    outcome = "returned"
                } catch {
                    outcome = "\(type(of: error))"
                }
                try await AsyncIMClient.startAll(ann)
                let delivered = await inbox.first { _ in true }?.text
                let finalState = await updates.first { $0.id == "m1" && $0.state.isFinal }?.state
                await AsyncIMClient.closeAll(ann, ben)
                bench.server.shutdown()
                return (outcome, delivered, finalState)
            }
        }
        #expect(outcome == "CancellationError")
        #expect(delivered == "still here")
        guard case .stored? = finalState else {
            Issue.record("expected stored, got \(String(describing: finalState))")
            return
        }
    }

    @Test("a request needs the client online: notOnline before the login")
    func requestNeedsOnline() async throws {
        let thrown = try await onManualClockLoop { loop, clock in
            try loop.run { () async -> IMClientError? in
                let bench = MemoryIMBench(loop: loop, clock: clock)
                let ann = AsyncIMClient.wrapping(bench.client(user("ann"), start: false))
                defer { bench.server.shutdown() }
                do {
                    _ = try await ann.request(.listRooms, body: [])
                    return nil
                } catch {
                    return error as? IMClientError
                }
            }
        }
        #expect(thrown == .notOnline)
    }

    @Test("tasks on other threads send through one client at once: every send returns, each task's order kept")
    func sendsFromOtherThreads() async throws {
        let (perSender, offLoopCallers) = try await onManualClockLoop(autoAdvances: false) { loop, clock in
            try loop.run {
                let (bench, ann, ben) = benchWithAnnAndBen(loop, clock)
                let inbox = ben.messages
                try await AsyncIMClient.startAll(ann, ben)
                // Detached: the senders run on the global executor's threads, not the loop's.
                let senders = (0..<4).map { sender in
                    Task.detached {
                        let away = !loop.isCurrentThread
                        for index in 0..<10 { try await ann.send("\(sender):\(index)", to: .user("ben")) }
                        return away
                    }
                }
                var offLoop = 0
                for sender in senders {
                    if try await sender.value { offLoop += 1 }
                }
                var perSender: [String: [String]] = [:]
                for await message in inbox.prefix(40) {
                    let parts = message.text.split(separator: ":").map(String.init)
                    perSender[parts[0], default: []].append(parts[1])
                }
                await AsyncIMClient.closeAll(ann, ben)
                bench.server.shutdown()
                return (perSender, offLoop)
            }
        }
        #expect(offLoopCallers == 4)
        #expect(perSender.count == 4)
        for (_, indexes) in perSender { #expect(indexes == (0..<10).map(String.init)) }
    }

    @Test("a subscriber that does not read keeps the oldest messages up to its buffer; the rest are counted as dropped")
    func slowSubscriberDrops() async throws {
        let (kept, dropped) = try await onManualClockLoop { loop, clock in
            try loop.run {
                var buffers = IMStreamBuffers()
                buffers.messages = 3
                let (bench, ann, ben) = benchWithAnnAndBen(loop, clock, benBuffers: buffers)
                let slow = ben.messages
                try await AsyncIMClient.startAll(ann, ben)
                for index in 0..<10 { try await ann.send("m\(index)", to: .user("ben")) }
                await AsyncIMClient.closeAll(ann, ben)
                let kept = await slow.reduce(into: [String]()) { $0.append($1.text) }
                bench.server.shutdown()
                return (kept, ben.droppedEvents)
            }
        }
        #expect(kept == ["m0", "m1", "m2"])
        #expect(dropped == 7)
    }
}

func user(_ name: String) -> IMClientConfiguration {
    var configuration = IMClientConfiguration(user: name, password: "pw")
    configuration.heartbeat = .fixed(.seconds(5))
    configuration.answerTimeout = .seconds(5)
    return configuration
}

/// A memory bench on `loop` with ann and ben as async clients of it, not started.
func benchWithAnnAndBen(
    _ loop: RunLoop, _ clock: ManualClock, benBuffers: IMStreamBuffers = IMStreamBuffers()
) -> (MemoryIMBench, AsyncIMClient, AsyncIMClient) {
    let bench = MemoryIMBench(loop: loop, clock: clock)
    let ann = AsyncIMClient.wrapping(bench.client(user("ann"), start: false))
    let ben = AsyncIMClient.wrapping(bench.client(user("ben"), start: false), buffers: benBuffers)
    return (bench, ann, ben)
}
