import Glibc
import RunLoopKit
import RunLoopTesting
import Testing

/// Items may remove or invalidate themselves from inside their own callouts, and descriptors closed
/// behind the loop's back neither crash it, spin it, nor block a new source on the reused number.
@Suite struct ItemCalloutTests {
    @Test func everyKindOfItemCanRemoveItselfFromItsOwnCallout() async throws {
        let (counts, result) = try await onManualClockLoop { loop, _ in
            var counts: [String: Int] = [:]
            let mode = RunLoop.Mode("M")
            let pair = SocketPair()
            let observer = RunLoopObserver(activities: .beforeTimers) { observer, _ in
                counts["observer", default: 0] += 1
                RunLoop.current.remove(observer, forMode: "M")
            }
            let source = RunLoopSource { source in
                counts["source", default: 0] += 1
                RunLoop.current.remove(source, forMode: "M")
            }
            let port = try RunLoopPortSource(fileDescriptor: pair.right) { port, _ in
                counts["port", default: 0] += 1
                RunLoop.current.remove(port, forMode: "M")
            }
            let timer = RunLoopTimer(after: .milliseconds(1), repeating: .milliseconds(1)) { timer in
                counts["timer", default: 0] += 1
                RunLoop.current.remove(timer, forMode: "M")
            }
            loop.add(observer, forMode: mode)
            loop.add(source, forMode: mode)
            try loop.add(port, forMode: mode)
            loop.add(timer, forMode: mode)
            source.signal()
            pair.send("x")
            // Everything leaves the mode, so the run finishes by itself.
            let result = try loop.run(mode, timeout: .seconds(1))
            return (counts, result)
        }
        #expect(counts == ["observer": 1, "source": 1, "port": 1, "timer": 1])
        #expect(result == .finished)
    }

    @Test func closingAWatchedDescriptorNeitherCrashesNorSpins() async throws {
        let (performed, iterations, result) = try await onManualClockLoop { loop, _ in
            var fds: [Int32] = [0, 0]
            _ = socketpair(AF_UNIX, Int32(Glibc.SOCK_STREAM.rawValue), 0, &fds)
            var performed = 0
            var iterations = 0
            let source = try RunLoopPortSource(fileDescriptor: fds[1]) { _, _ in performed += 1 }
            try loop.add(source, forMode: .default)
            loop.add(RunLoopObserver(activities: .beforeTimers) { _, _ in iterations += 1 }, forMode: .default)
            close(fds[1])  // misuse: closed while watched
            close(fds[0])
            let result = try loop.run(.default, timeout: .milliseconds(50))
            source.invalidate()
            return (performed, iterations, result)
        }
        #expect(performed == 0)
        #expect(iterations == 1)
        #expect(result == .timedOut)
    }

    @Test func aReusedDescriptorNumberIsWatchedEvenIfTheOldSourceWasNotInvalidated() async throws {
        let (received, oldIsValid) = try await onManualClockLoop { loop, _ in
            let number = reservedDescriptorNumber(slot: 1)
            var first: [Int32] = [0, 0]
            _ = pipe(&first)
            _ = dup2(first[0], number)
            close(first[0])
            let old = try RunLoopPortSource(fileDescriptor: number) { _, _ in }
            try loop.add(old, forMode: .default)
            close(number)  // misuse: closed while watched
            close(first[1])
            var second: [Int32] = [0, 0]
            _ = pipe(&second)
            _ = dup2(second[0], number)
            close(second[0])
            defer { close(number); close(second[1]) }
            var received = ""
            let new = try RunLoopPortSource(fileDescriptor: number) { source, _ in
                received = readAvailable(source.fileDescriptor)
            }
            try loop.add(new, forMode: .default)
            _ = write(second[1], "fresh", 5)
            try loop.run(.default, timeout: .milliseconds(50), returnAfterSourceHandled: true)
            new.invalidate()
            return (received, old.isValid)
        }
        #expect(received == "fresh")
        #expect(!oldIsValid)
    }
}
