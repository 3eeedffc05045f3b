/// A value that may only be used on one loop's thread, carried through a `@Sendable` hop that ends on
/// that thread (`RunLoop.perform`). The compiler cannot see that the hop returns to the same thread.
///
/// For ``PasswordWorkers``, which moved here from ChatNodeKit, where the same box serves the node: both
/// give way to the one checked loop-bound box in RunLoopKit when that lands.
final class LoopThreadOnly<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
