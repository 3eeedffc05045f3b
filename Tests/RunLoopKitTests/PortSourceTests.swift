import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

/// Port sources (CFRunLoop's version 1) on real descriptors.
@Suite struct PortSourceTests {
    @Test func readableSocketIsPerformedOnTheLoopThreadWithItsData() async throws {
        let (received, result, onLoopThread) = try await onLoopThread {
            let loop = RunLoop.current
            let pair = SocketPair()
            var received = ""
            var onLoopThread = false
            let source = try RunLoopPortSource(fileDescriptor: pair.right) { source, events in
                #expect(events == .readable)
                received += readAvailable(source.fileDescriptor)
                onLoopThread = loop.isCurrentThread
            }
            try loop.add(source, forMode: .default)
            pair.send("hello")
            let result = try loop.run(.default, timeout: .seconds(2), returnAfterSourceHandled: true)
            source.invalidate()
            return (received, result, onLoopThread)
        }
        #expect(received == "hello")
        #expect(result == .handledSource)
        #expect(onLoopThread)
    }

    @Test func readinessIsLevelTriggeredUntilConsumed() async throws {
        let chunks = try await onManualClockLoop { loop, _ in
            let pair = SocketPair()
            var chunks: [String] = []
            let source = try RunLoopPortSource(fileDescriptor: pair.right) { source, _ in
                chunks.append(readAvailable(source.fileDescriptor, limit: 2))
            }
            try loop.add(source, forMode: .default)
            pair.send("abcdef")
            try loop.run(.default, timeout: .milliseconds(10))
            source.invalidate()
            return chunks
        }
        #expect(chunks == ["ab", "cd", "ef"])
    }

    @Test func allReadyPortsArePerformedInOneIterationInOrder() async throws {
        let events = try await onManualClockLoop { loop, _ in
            let trace = Trace()
            let first = SocketPair()
            let second = SocketPair()
            let mode = RunLoop.Mode("M")
            // Added in the opposite order to their `order`: dispatch follows `order`.
            let b = try RunLoopPortSource(fileDescriptor: second.right, order: 2) { source, _ in
                _ = readAvailable(source.fileDescriptor)
                trace.append("P:b")
            }
            let a = try RunLoopPortSource(fileDescriptor: first.right, order: 1) { source, _ in
                _ = readAvailable(source.fileDescriptor)
                trace.append("P:a")
            }
            try loop.add(b, forMode: mode)
            try loop.add(a, forMode: mode)
            loop.add(trace.observer(), forMode: mode)
            first.send("1")
            second.send("2")
            try loop.run(mode, timeout: .milliseconds(10))
            a.invalidate()
            b.invalidate()
            return trace.events
        }
        #expect(events == tokens("E BT BS BW AW P:a P:b BT BS BW AW X"))
    }

    @Test func returnAfterSourceHandledLeavesOtherReadyPortsForTheNextRun() async throws {
        let (results, order) = try await onManualClockLoop { loop, _ in
            let pair1 = SocketPair()
            let pair2 = SocketPair()
            var order: [String] = []
            let a = try RunLoopPortSource(fileDescriptor: pair1.right, order: 1) { source, _ in
                _ = readAvailable(source.fileDescriptor)
                order.append("a")
            }
            let b = try RunLoopPortSource(fileDescriptor: pair2.right, order: 2) { source, _ in
                _ = readAvailable(source.fileDescriptor)
                order.append("b")
            }
            try loop.add(a, forMode: .default)
            try loop.add(b, forMode: .default)
            pair1.send("x")
            pair2.send("y")
            var results: [RunLoop.RunResult] = []
            for _ in 0..<3 { results.append(try loop.run(.default, timeout: .zero, returnAfterSourceHandled: true)) }
            a.invalidate()
            b.invalidate()
            return (results, order)
        }
        #expect(order == ["a", "b"])
        #expect(results == [.handledSource, .handledSource, .timedOut])
    }

    @Test func readinessInAnotherModeIsKeptUntilThatModeRuns() async throws {
        let (inOther, afterwards) = try await onManualClockLoop { loop, _ in
            let pair = SocketPair()
            var performed = 0
            let source = try RunLoopPortSource(fileDescriptor: pair.right) { source, _ in
                _ = readAvailable(source.fileDescriptor)
                performed += 1
            }
            try loop.add(source, forMode: "A")
            loop.add(RunLoopTimer(after: .milliseconds(50)) { _ in }, forMode: "B")
            pair.send("data")
            try loop.run("B", timeout: .milliseconds(100))
            let inOther = performed
            try loop.run("A", timeout: .zero)
            source.invalidate()
            return (inOther, performed)
        }
        #expect(inOther == 0)
        #expect(afterwards == 1)
    }

    @Test func writableInterestReportsWritable() async throws {
        let events = try await onManualClockLoop { loop, _ in
            let pair = SocketPair()
            var seen: PortEvents = []
            let source = try RunLoopPortSource(fileDescriptor: pair.left, interest: .writable) { source, events in
                seen = events
                source.invalidate()
            }
            try loop.add(source, forMode: .default)
            try loop.run(.default, timeout: .milliseconds(10))
            return seen
        }
        #expect(events == .writable)
    }

    @Test func peerCloseIsDeliveredAsEndOfFile() async throws {
        let sawEndOfFile = try await onManualClockLoop { loop, _ in
            var fds: [Int32] = [0, 0]
            _ = socketpair(AF_UNIX, Int32(Glibc.SOCK_STREAM.rawValue), 0, &fds)
            var sawEndOfFile = false
            let source = try RunLoopPortSource(fileDescriptor: fds[1], closesDescriptorOnInvalidate: true) { source, _ in
                var byte: UInt8 = 0
                if read(source.fileDescriptor, &byte, 1) == 0 {
                    sawEndOfFile = true
                    source.invalidate()
                }
            }
            try loop.add(source, forMode: .default)
            close(fds[0])
            let result = try loop.run(.default, timeout: .seconds(1))
            return sawEndOfFile && result == .finished
        }
        #expect(sawEndOfFile)
    }

    @Test func badDescriptorsAreTypedErrors() async throws {
        let (closed, regular, closedSinceCreation, neverOpened) = try await onLoopThread {
            let neverOpened = reservedDescriptorNumber(slot: 3)
            let closed = caught { () throws(RunLoopError) in _ = try RunLoopPortSource(fileDescriptor: neverOpened) { _, _ in } }
            let path = "/tmp/runloopkit-port-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            let file = open(path, O_CREAT | O_RDWR, 0o600)
            defer { close(file); unlink(path) }
            let regular = caught { () throws(RunLoopError) in _ = try RunLoopPortSource(fileDescriptor: file) { _, _ in } }
            var fds: [Int32] = [0, 0]
            _ = pipe(&fds)
            let high = dup2(fds[0], reservedDescriptorNumber(slot: 2))
            close(fds[0])
            close(fds[1])
            let source = try RunLoopPortSource(fileDescriptor: high) { _, _ in }
            close(high)
            let later = caught { () throws(RunLoopError) in try RunLoop.current.add(source, forMode: .default) }
            return (closed, regular, later, neverOpened)
        }
        #expect(closed == .invalidDescriptor(neverOpened))
        #expect(regular == .unsupportedDescriptor(regular.flatMap { if case .unsupportedDescriptor(let fd) = $0 { fd } else { nil } } ?? -1))
        #expect(closedSinceCreation.map { if case .invalidDescriptor = $0 { true } else { false } } == true)
    }

    @Test func closesDescriptorOnInvalidateOnlyAfterTheLoopStopsWatching() async throws {
        let (openWhileScheduled, openAfterInvalidate) = try await onLoopThread {
            // Judged by identity, not by the number (reusable at once) nor the peer (see fileIdentity).
            var fds: [Int32] = [0, 0]
            _ = socketpair(AF_UNIX, Int32(Glibc.SOCK_STREAM.rawValue), 0, &fds)
            defer { close(fds[0]) }
            let identity = fileIdentity(fds[1])
            let source = try RunLoopPortSource(fileDescriptor: fds[1], closesDescriptorOnInvalidate: true) { _, _ in }
            try RunLoop.current.add(source, forMode: .default)
            let before = identity != nil && fileIdentity(fds[1]) == identity
            source.invalidate()
            return (before, fileIdentity(fds[1]) == identity)
        }
        #expect(openWhileScheduled)
        #expect(!openAfterInvalidate)
    }

    @Test func removedSourceIsNoLongerPerformed() async throws {
        let (performed, result) = try await onManualClockLoop { loop, _ in
            let pair = SocketPair()
            var performed = 0
            let source = try RunLoopPortSource(fileDescriptor: pair.right) { _, _ in performed += 1 }
            try loop.add(source, forMode: .default)
            loop.remove(source, forMode: .default)
            pair.send("ignored")
            loop.add(RunLoopTimer(after: .milliseconds(5)) { _ in }, forMode: .default)
            let result = try loop.run(.default, timeout: .milliseconds(20))
            return (performed, result)
        }
        #expect(performed == 0)
        #expect(result == .finished)
    }

    @Test func aReadyPortRemovedByAnEarlierCalloutOfTheIterationIsNotPerformed() async throws {
        let (events, performed) = try await onManualClockLoop { loop, _ in
            let trace = Trace()
            let mode = RunLoop.Mode("M")
            let pair = SocketPair()
            let other = SocketPair()
            var performed = 0
            let port = try RunLoopPortSource(fileDescriptor: pair.right, order: 2) { source, _ in
                _ = readAvailable(source.fileDescriptor)
                performed += 1
            }
            // Alone: the timers pass runs before the ports pass of the same iteration.
            try loop.add(port, forMode: mode)
            loop.add(
                RunLoopTimer(after: .zero) { _ in
                    trace.append("T:removes")
                    loop.remove(port, forMode: mode)
                }, forMode: mode)
            pair.send("1")
            try loop.run(mode, timeout: .milliseconds(10))
            // Two ready at once: the first one's callout removes the second.
            try loop.add(port, forMode: mode)
            let first = try RunLoopPortSource(fileDescriptor: other.right, order: 1) { source, _ in
                _ = readAvailable(source.fileDescriptor)
                trace.append("P:first")
                loop.remove(port, forMode: mode)
            }
            try loop.add(first, forMode: mode)
            pair.send("2")
            other.send("3")
            try loop.run(mode, timeout: .milliseconds(10))
            first.invalidate()
            port.invalidate()
            return (trace.events, performed)
        }
        #expect(events == tokens("T:removes P:first"))
        #expect(performed == 0)
    }

    @Test func portAddedFromAnotherThreadIsWatched() async throws {
        let (received, result) = try await onLoopThread {
            let loop = RunLoop.current
            let pair = SocketPair()
            let received = LockedBox("")
            loop.add(RunLoopTimer(after: .seconds(60)) { _ in }, forMode: .default)
            let source = try RunLoopPortSource(fileDescriptor: pair.right) { source, _ in
                received.set(readAvailable(source.fileDescriptor))
                RunLoop.current.stop()
            }
            startThread {
                while !loop.isWaiting { sleep(milliseconds: 1) }
                try? loop.add(source, forMode: .default)
                pair.send("from afar")
            }
            let result = try loop.run(.default, timeout: .seconds(5))
            source.invalidate()
            return (received.get(), result)
        }
        #expect(received == "from afar")
        #expect(result == .stopped)
    }

    @Test func invalidatingFromAnotherThreadStopsWatchingBeforeClosing() async throws {
        let (closedAfterLoopIteration, performedAfter) = try await onLoopThread {
            let loop = RunLoop.current
            var fds: [Int32] = [0, 0]
            _ = socketpair(AF_UNIX, Int32(Glibc.SOCK_STREAM.rawValue), 0, &fds)
            defer { close(fds[0]) }
            let identity = fileIdentity(fds[1])
            var performed = 0
            let source = try RunLoopPortSource(fileDescriptor: fds[1], closesDescriptorOnInvalidate: true) { _, _ in
                performed += 1
            }
            try loop.add(source, forMode: .default)
            loop.add(RunLoopTimer(after: .seconds(60)) { _ in }, forMode: .default)
            let done = Latch()
            startThread {
                source.invalidate()
                done.open()
            }
            done.wait()
            // The other thread could not touch libevent; the descriptor is still open until the loop
            // thread has stopped watching it. Judged in this process's descriptor table, by identity:
            // the peer's end of file is no witness, since a child a parallel test spawns meanwhile
            // inherits the descriptor and keeps the socket open until it exits (see fileIdentity).
            let openBefore = identity != nil && fileIdentity(fds[1]) == identity
            try loop.run(.default, timeout: .zero)
            return (openBefore && fileIdentity(fds[1]) != identity, performed)
        }
        #expect(closedAfterLoopIteration)
        #expect(performedAfter == 0)
    }
}
