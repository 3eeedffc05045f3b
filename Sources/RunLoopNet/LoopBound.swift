/// Carries a loop-confined object through a `@Sendable` closure (``RunLoop/perform(inModes:_:)``, a
/// resolver's completion) back to its own loop's thread, where alone it is touched.
struct LoopBound<Value: AnyObject>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
