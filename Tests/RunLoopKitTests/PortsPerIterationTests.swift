import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

/// `RunLoop.maximumPortsPerIteration`: a burst of ready ports runs in chunks, one iteration each, and
/// a lasting backlog is served in turn.
@Suite struct PortsPerIterationTests {
    @Test func aBurstBeyondTheLimitRunsInChunksWithTheLoopsOtherWorkBetween() async throws {
        let events = try await onManualClockLoop { loop, _ in
            loop.maximumPortsPerIteration = 2
            let trace = Trace()
            let mode = RunLoop.Mode("M")
            let pairs = (0..<5).map { _ in SocketPair() }
            let sources = try pairs.enumerated().map { index, pair in
                let name = String(UnicodeScalar(UInt8(ascii: "a") + UInt8(index)))
                return try RunLoopPortSource(fileDescriptor: pair.right) { source, _ in
                    _ = readAvailable(source.fileDescriptor)
                    trace.append("P:\(name)")
                }
            }
            for source in sources { try loop.add(source, forMode: mode) }
            loop.add(trace.observer(), forMode: mode)
            for pair in pairs { pair.send("x") }
            try loop.run(mode, timeout: .milliseconds(10))
            for source in sources { source.invalidate() }
            return trace.events
        }
        // Between chunks the loop polls (no BW/AW) and goes round its timers and sources again.
        #expect(events == tokens("E BT BS BW AW P:a P:b BT BS P:c P:d BT BS P:e BT BS BW AW X"))
    }

    @Test func aLastingBacklogIsServedInTurnNotByRegistrationOrder() async throws {
        let performed = try await onManualClockLoop { loop, _ in
            loop.maximumPortsPerIteration = 2
            let pairs = (0..<4).map { _ in SocketPair() }
            var performed: [String] = []
            // Never reading keeps every descriptor ready: a backlog that outlasts every iteration.
            let sources = try pairs.enumerated().map { index, pair in
                let name = String(UnicodeScalar(UInt8(ascii: "a") + UInt8(index)))
                return try RunLoopPortSource(fileDescriptor: pair.right) { _, _ in
                    performed.append(name)
                    if performed.count == 8 { loop.stop() }
                }
            }
            for source in sources { try loop.add(source, forMode: .default) }
            for pair in pairs { pair.send("x") }
            try loop.run(.default, timeout: .milliseconds(10))
            for source in sources { source.invalidate() }
            return performed
        }
        // Sorting the carried ones with the rest each time would give a b a b a b a b.
        #expect(performed == ["a", "b", "c", "d", "a", "b", "c", "d"])
    }

    @Test func carriedPortsRunBeforeLowerOrderedOnesThatBecameReadyLater() async throws {
        let performed = try await onManualClockLoop { loop, _ in
            loop.maximumPortsPerIteration = 1
            let first = SocketPair()
            let second = SocketPair()
            let late = SocketPair()
            var performed: [String] = []
            let a = try RunLoopPortSource(fileDescriptor: first.right, order: 5) { source, _ in
                _ = readAvailable(source.fileDescriptor)
                performed.append("a")
                late.send("x")
            }
            let b = try RunLoopPortSource(fileDescriptor: second.right, order: 5) { source, _ in
                _ = readAvailable(source.fileDescriptor)
                performed.append("b")
            }
            let urgent = try RunLoopPortSource(fileDescriptor: late.right, order: 1) { source, _ in
                _ = readAvailable(source.fileDescriptor)
                performed.append("urgent")
            }
            for source in [a, b, urgent] { try loop.add(source, forMode: .default) }
            first.send("x")
            second.send("x")
            try loop.run(.default, timeout: .milliseconds(10))
            for source in [a, b, urgent] { source.invalidate() }
            return performed
        }
        #expect(performed == ["a", "b", "urgent"])
    }

    @Test func theLimitHasADefaultAndIsAtLeastOne() async throws {
        let (initial, clamped) = try await onLoopThread {
            let loop = RunLoop.current
            let initial = loop.maximumPortsPerIteration
            loop.maximumPortsPerIteration = 0
            let clamped = loop.maximumPortsPerIteration
            loop.maximumPortsPerIteration = RunLoop.defaultMaximumPortsPerIteration
            return (initial, clamped)
        }
        #expect(initial == RunLoop.defaultMaximumPortsPerIteration)
        #expect(clamped == 1)
    }
}
