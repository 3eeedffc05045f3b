/// Carries a value that lives on one loop's thread — a loop-confined object, a closure over such
/// state — through a `@Sendable` hop that ends on that thread (``RunLoop/perform(inModes:label:_:)``,
/// a worker's completion, a resolver's answer).
///
/// The compiler cannot see that the hop comes back to the same thread; this box says so, and
/// checks it: ``value`` may be read on the loop's thread only (a precondition). Make the box on any
/// thread; the value it holds is touched only where it lives.
///
/// ```swift
/// let bound = LoopBound(connection)               // on the connection's loop
/// worker.async {
///     let answer = work()
///     loop.perform(inModes: modes) { bound.value.finished(answer) }
/// }
/// ```
public struct LoopBound<Value>: @unchecked Sendable {
    /// The loop on whose thread alone ``value`` is read.
    public let loop: RunLoop
    private let stored: Value

    /// Boxes `value` for `loop` (by default the current thread's loop). Any thread.
    public init(_ value: Value, loop: RunLoop = .current) {
        self.loop = loop
        stored = value
    }

    /// The value. On the loop's thread only (checked with a precondition).
    public var value: Value {
        precondition(loop.isCurrentThread, "LoopBound value read off its loop's thread")
        return stored
    }
}
