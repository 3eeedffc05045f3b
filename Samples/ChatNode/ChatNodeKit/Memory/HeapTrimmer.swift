public import Logging
public import RunLoopKit

/// Checks a ``HeapTrimPolicy`` once a second with the node's open sessions, and when it says so
/// empties the caches it was given (SQLite's page cache) and calls `malloc_trim(0)`, logging what
/// it cost (RSS tells what came back) and telling the policy whether a follow-up found anything.
///
/// Loop thread only: made, started and stopped on its loop's thread.
public final class HeapTrimmer {
    public let loop: RunLoop
    private var policy: HeapTrimPolicy
    private let sessions: () -> Int
    private let releaseCaches: () -> Void
    private let logger: Logger
    private var timer: RunLoopTimer?

    /// - Parameters:
    ///   - sessions: the count the policy watches, read on the loop's thread.
    ///   - releaseCaches: frees what caches hold before the trim, on the loop's thread.
    public init(
        policy: HeapTrimPolicy = HeapTrimPolicy(), loop: RunLoop, logger: Logger, sessions: @escaping () -> Int,
        releaseCaches: @escaping () -> Void = {}
    ) {
        self.policy = policy
        self.loop = loop
        self.logger = logger
        self.sessions = sessions
        self.releaseCaches = releaseCaches
    }

    public func start() {
        guard timer == nil else { return }
        let timer = RunLoopTimer(after: .seconds(1), repeating: .seconds(1), label: "chat-node.heap-trim") { [weak self] _ in
            self?.check()
        }
        self.timer = timer
        loop.add(timer, forMode: .common)
    }

    public func stop() {
        timer?.invalidate()
        timer = nil
    }

    private func check() {
        let count = sessions()
        guard let trim = policy.check(sessions: count, now: loop.now) else { return }
        let start = loop.now
        releaseCaches()
        let gaveBack = GlibcMalloc.trim?(0) == 1
        let micros = Int((loop.now - start) / .microseconds(1))
        switch trim {
        case .crowdLeft:
            logger.notice("\(count) sessions open, down from a crowd: freed heap given back in \(micros) µs")
        case .followUp:
            policy.followUpTrimmed(gaveBack: gaveBack)
            let outcome = gaveBack ? "freed heap given back" : "nothing freed since: no more follow-ups"
            logger.notice("\(count) sessions open, follow-up trim: \(outcome) in \(micros) µs")
        }
    }
}
