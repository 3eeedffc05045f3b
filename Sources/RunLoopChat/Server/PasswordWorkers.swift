import Dispatch
package import RunLoopKit

/// A fixed number of threads for password hashes: scrypt is slow on purpose and must not run on the
/// loop's thread, nor on as many threads as a flood asks for. Jobs beyond the workers wait, in order.
///
/// Loop thread only: ``run(_:then:)`` is called there and `then` runs there.
package final class PasswordWorkers {
    package let count: Int
    private let loop: RunLoop
    private var idle: [DispatchQueue]
    private var backlog: [() -> Void] = []
    /// Jobs on a worker now, and the most there ever were (for tests).
    package private(set) var busy = 0
    package private(set) var peakBusy = 0

    package init(count: Int, loop: RunLoop) {
        self.count = max(1, count)
        self.loop = loop
        idle = (0..<self.count).map { DispatchQueue(label: "chat-node.passwords.\($0)") }
    }

    /// Runs `job` on a free worker (or once one is free), then `then` with its result on the loop's thread.
    package func run<Result: Sendable>(_ job: @escaping @Sendable () -> Result, then: @escaping (Result) -> Void) {
        guard let worker = idle.popLast() else {
            backlog.append { [weak self] in self?.run(job, then: then) }
            return
        }
        busy += 1
        peakBusy = max(peakBusy, busy)
        let finish = LoopBound(
            { [weak self] (result: Result) in
                self?.free(worker)
                then(result)
            }, loop: loop)
        let loop = self.loop
        worker.async {
            let result = job()
            loop.perform(inModes: [.common]) { finish.value(result) }
        }
    }

    private func free(_ worker: DispatchQueue) {
        busy -= 1
        idle.append(worker)
        if !backlog.isEmpty { backlog.removeFirst()() }
    }
}
