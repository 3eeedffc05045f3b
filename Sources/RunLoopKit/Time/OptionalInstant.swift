/// A `LoopInstant?` in 8 bytes, for deadlines that thousands of idle connections each keep: `Optional`
/// adds a byte to `LoopInstant`, which a struct pads to 16. ``LoopInstant/distantFuture`` stands for
/// none, so storing it reads back as `nil` — the same for a deadline: never.
package struct OptionalInstant: Sendable, Equatable {
    private var nanoseconds: UInt64

    /// None.
    package init() { nanoseconds = LoopInstant.distantFuture.nanoseconds }

    package init(_ instant: LoopInstant?) { nanoseconds = (instant ?? .distantFuture).nanoseconds }

    package var value: LoopInstant? {
        get { nanoseconds == LoopInstant.distantFuture.nanoseconds ? nil : LoopInstant(nanoseconds: nanoseconds) }
        set { nanoseconds = (newValue ?? .distantFuture).nanoseconds }
    }
}
