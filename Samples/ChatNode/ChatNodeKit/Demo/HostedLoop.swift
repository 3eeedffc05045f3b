import RunLoopKit

/// A thread with its own run loop, running until ``stop()``: one per demo actor, which is the point
/// of the demo — every participant is a loop of its own, as in a real deployment.
///
/// ``sync(_:)`` runs a closure on that thread and waits for it; it is how the demo's script (on the
/// main thread) reaches objects that live on the loop. Those objects never leave their thread: the
/// closures only travel inside `LoopBound` boxes, and run where the objects live.
final class HostedLoop: Sendable {
    /// The label of the script's blocks, which the timeline leaves out: they are the demo watching,
    /// not the chat working.
    static let probeLabel = "demo.script"
    private let thread: RunLoopThread

    var name: String { thread.name }
    var loop: RunLoop { thread.loop }

    init(name: String) {
        thread = RunLoopThread(name: name)
    }

    /// Runs `body` on the loop's thread and returns its result; the loop must be running.
    func sync<T>(_ body: @escaping () throws -> T) throws -> T {
        let result = ResultBox<T>()
        let work = LoopBound(body, loop: thread.loop)
        thread.performAndWait(label: Self.probeLabel) { result.set(Result { try work.value() }) }
        return try result.take().get()
    }

    /// Runs `body` on the loop's thread without waiting.
    func async(_ body: @escaping () -> Void) {
        let work = LoopBound(body, loop: loop)
        loop.perform(inModes: [.common], label: Self.probeLabel) { work.value() }
    }

    /// Ends the loop (and any nested run) and waits for the thread to finish.
    func stop() {
        thread.stop()
    }
}

/// Hands a result from the loop's thread to the waiting one; performAndWait orders the two accesses.
private final class ResultBox<T>: @unchecked Sendable {
    private var value: Result<T, any Error>?
    func set(_ result: Result<T, any Error>) { value = result }
    func take() -> Result<T, any Error> { value! }
}
