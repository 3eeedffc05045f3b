/// The single loop a timer or observer belongs to (CFRunLoop allows one loop per timer and observer,
/// in any number of its modes). Its lock also guards the item's state before it is first scheduled.
final class LoopAttachment: @unchecked Sendable {
    private let lock = Lock()
    private weak var owner: RunLoop?

    var loop: RunLoop? { lock.withLock { owner } }

    /// Claims the item for `loop`; false if another loop has it.
    func claim(for loop: RunLoop) -> Bool {
        lock.withLock {
            if let owner { return owner === loop }
            owner = loop
            return true
        }
    }

    func release() { lock.withLock { owner = nil } }

    func withLock<Result>(_ body: () -> Result) -> Result { lock.withLock(body) }
}
