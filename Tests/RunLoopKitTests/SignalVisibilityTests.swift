import Glibc
import RunLoopKit
import RunLoopTesting
import Synchronization
import Testing

/// What a thread writes before ``RunLoopSource/signal()`` is visible to the perform that serves the
/// signal, also when the signal finds the source already signalled by another thread or races other
/// signallers from unsignalled.
///
/// Written for the thread sanitizer: the signallers and the loop share no lock and no wake-up, and
/// their progress is passed in relaxed atomics, which order nothing; so only the signal and the
/// loop's take can make a signaller's plain write happen-before the perform's plain read. Were a
/// signal a plain load or store of the stamp, the sanitizer would report that read as a race.
@Suite struct SignalVisibilityTests {
    @Test func everySignallersWritesAreVisibleToThePerformThatServesIt() async throws {
        let threads = 8
        let rounds = 40
        let misread = try await onLoopThread { () -> [String] in
            let loop = RunLoop.current
            let mode = RunLoop.Mode("M")
            let slots = PlainSlots(count: threads)
            var read: [Int] = []
            let source = RunLoopSource { _ in read = (0..<threads).map { slots[$0] } }
            loop.add(source, forMode: mode)
            var misread: [String] = []
            for round in 1...rounds {
                // Odd rounds: every signaller finds the source signalled (by this thread). Even rounds:
                // they race from unsignalled.
                if round % 2 == 1 { source.signal() }
                let finished = SharedCount()
                for index in 0..<threads {
                    startThread {
                        slots[index] = round
                        source.signal()
                        finished.value.add(1, ordering: .relaxed)
                    }
                }
                while finished.value.load(ordering: .relaxed) < threads { sched_yield() }
                read = []
                _ = try loop.run(mode, timeout: .zero, returnAfterSourceHandled: true)
                if read != Array(repeating: round, count: threads) { misread.append("round \(round): \(read)") }
            }
            source.invalidate()
            return misread
        }
        #expect(misread.isEmpty)
    }
}

/// Ints read and written without synchronisation of their own, so the sanitizer judges only what
/// orders the accesses around them.
private final class PlainSlots: @unchecked Sendable {
    private let base: UnsafeMutablePointer<Int>
    private let count: Int

    init(count: Int) {
        self.count = count
        base = .allocate(capacity: count)
        base.initialize(repeating: 0, count: count)
    }

    deinit { base.deallocate() }

    subscript(index: Int) -> Int {
        get { base[index] }
        set { base[index] = newValue }
    }
}

private final class SharedCount: Sendable {
    let value = Atomic<Int>(0)
}
