import Glibc
import RunLoopTesting
import Testing

@testable import RunLoopKit

/// The wait of an iteration that has a timer due already: it asks the kernel nothing when only a
/// wake-up could be pending (the flag tells), and still polls when port sources could be ready.
@Suite struct DueTimerWaitTests {
    @Test func aChainOfDueTimersFiresWithoutAskingTheKernel() async throws {
        let (fired, dispatches) = try await onLoopThread {
            let loop = RunLoop.current
            let mode = RunLoop.Mode("due")
            let box = ChainBox()
            // Unowned: the box keeps its closure, and the test keeps the box until the run returns.
            box.next = { [unowned box] _ in
                box.fired += 1
                if box.fired < 1_000 { loop.add(RunLoopTimer(after: .zero, box.next!), forMode: mode) }
            }
            loop.add(RunLoopTimer(after: .zero, box.next!), forMode: mode)
            try loop.run(mode, timeout: .seconds(30))
            return (box.fired, loop.kernelDispatches(in: mode))
        }
        #expect(fired == 1_000)
        // Each timer is due when the loop waits (added at "now", waited for a little later).
        #expect(dispatches == 0)
    }

    @Test func aDueTimerAndAReadyPortAreHandledInTheSameIteration() async throws {
        let events = try await onLoopThread {
            let loop = RunLoop.current
            let mode = RunLoop.Mode("due")
            let trace = Trace()
            var ends: [Int32] = [-1, -1]
            precondition(socketpair(AF_UNIX, Int32(Glibc.SOCK_STREAM.rawValue), 0, &ends) == 0)
            let (reader, writer) = (ends[0], ends[1])
            defer { close(reader); close(writer) }
            var byte: UInt8 = 1
            precondition(write(writer, &byte, 1) == 1)
            let port = try RunLoopPortSource(fileDescriptor: reader) { source, _ in
                var sink: UInt8 = 0
                _ = read(reader, &sink, 1)
                trace.append("P")
                source.invalidate()
            }
            try loop.add(port, forMode: mode)
            loop.add(RunLoopTimer(after: .zero) { _ in trace.append("T") }, forMode: mode)
            loop.add(trace.observer([.beforeTimers]), forMode: mode)
            try loop.run(mode, timeout: .seconds(30), returnAfterSourceHandled: true)
            return trace.events
        }
        // Skipping the poll here would leave the port for a second iteration: "BT T BT P".
        #expect(events == tokens("BT T P"))
    }

    @Test func aWakeUpPendingWhileATimerIsDueIsConsumedNotCarriedIntoTheNextSleep() async throws {
        let events = try await onLoopThread {
            let loop = RunLoop.current
            let mode = RunLoop.Mode("due")
            let trace = Trace()
            let box = ChainBox()
            loop.add(
                RunLoopObserver(activities: .beforeWaiting) { _, _ in
                    if box.fired == 0 {
                        box.fired = 1
                        loop.wakeUp()
                    }
                }, forMode: mode)
            loop.add(trace.observer([.beforeWaiting, .afterWaiting]), forMode: mode)
            loop.add(RunLoopTimer(after: .zero) { _ in trace.append("T") }, forMode: mode)
            loop.add(RunLoopTimer(after: .milliseconds(50)) { _ in trace.append("L") }, forMode: mode)
            try loop.run(mode, timeout: .seconds(30))
            return trace.events
        }
        // A wake-up left unread would end the next sleep at once: "BW AW T BW AW BW AW L".
        #expect(events == tokens("BW AW T BW AW L"))
    }

    @Test func aTimerObjectFitsA144ByteHeapChunk() {
        // 144-byte chunks (136 usable) keep a pending timer and its 16-byte heap entry under 160 bytes.
        // The stored properties are ordered for it (RunLoopTimer.swift); a field added or moved
        // carelessly shows up here first.
        let timer = RunLoopTimer(after: .seconds(1)) { _ in }
        let usable = mallocUsableSize(Unmanaged.passUnretained(timer).toOpaque())
        #if DEBUG
        let limit = 152  // debug builds add a weak reference that checks the loop claim (LoopAttachment)
        #else
        let limit = 136
        #endif
        #expect(usable <= limit)
    }
}

/// glibc's `malloc_usable_size` (in malloc.h, which the Glibc module leaves out). Swift objects of
/// ordinary alignment come from malloc.
@_silgen_name("malloc_usable_size")
private func mallocUsableSize(_ pointer: UnsafeMutableRawPointer) -> Int

private final class ChainBox: @unchecked Sendable {
    var fired = 0
    var next: ((RunLoopTimer) -> Void)?
}

extension RunLoop {
    /// How many times `mode`'s wait asked libevent (and so the kernel) anything. Call on the loop's thread.
    fileprivate func kernelDispatches(in mode: Mode) -> Int {
        lock.withLock { modes[mode]?.backend.dispatchCount ?? -1 }
    }
}
