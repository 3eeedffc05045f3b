import Glibc
import RunLoopKit
import RunLoopTesting

/// A thread with its own run loop, running until ``stop()``: one per demo actor, which is the point
/// of the demo — every participant is a loop of its own, as in a real deployment.
///
/// ``sync(_:)`` runs a closure on that thread and waits for it; it is how the demo's script (on the
/// main thread) reaches objects that live on the loop. Those objects never leave their thread: the
/// closures only travel inside `LoopBound` boxes, and run where the objects live.
final class HostedLoop: @unchecked Sendable {
    let name: String
    /// The label of the script's blocks, which the timeline leaves out: they are the demo watching,
    /// not the chat working.
    static let probeLabel = "demo.script"
    /// Written once by the thread before ``init`` returns (the latch orders it), read-only after.
    private(set) var loop: RunLoop!
    private let started = Latch()
    private let finished = Latch()

    init(name: String) {
        self.name = name
        startThread { [self] in
            let loop = RunLoop.current
            // Keeps the default mode non-empty, so `run()` sleeps instead of returning at once.
            loop.add(RunLoopTimer(after: .seconds(86_400), repeating: .seconds(86_400), label: "keep-alive") { _ in }, forMode: .common)
            self.loop = loop
            started.open()
            try? loop.run()
            finished.open()
        }
        started.wait()
    }

    /// Runs `body` on the loop's thread and returns its result; the loop must be running.
    func sync<T>(_ body: @escaping () throws -> T) throws -> T {
        let result = ResultBox<T>()
        let work = LoopBound(body, loop: loop)
        let done = Latch()
        loop.perform(inModes: [.common], label: Self.probeLabel) {
            result.set(Result { try work.value() })
            done.open()
        }
        done.wait()
        return try result.take().get()
    }

    /// Runs `body` on the loop's thread without waiting.
    func async(_ body: @escaping () -> Void) {
        let work = LoopBound(body, loop: loop)
        loop.perform(inModes: [.common], label: Self.probeLabel) { work.value() }
    }

    /// Ends the loop (and any nested run) and waits for the thread to finish.
    func stop() {
        let loop = self.loop!
        loop.perform(inModes: [.common]) { loop.stopAll() }
        finished.wait()
    }
}

/// Hands a result from the loop's thread to the waiting one; the latch orders the two accesses.
private final class ResultBox<T>: @unchecked Sendable {
    private var value: Result<T, Error>?
    func set(_ result: Result<T, Error>) { value = result }
    func take() -> Result<T, Error> { value! }
}
