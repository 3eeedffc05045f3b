import Synchronization

/// The single loop a timer or observer belongs to (CFRunLoop allows one loop per timer and observer,
/// in any number of its modes). Its lock also guards the item's state before it is first scheduled.
///
/// Stored inline in the item (a noncopyable struct around a `Mutex`), so it costs the item no
/// allocations of its own.
struct LoopAttachment: ~Copyable, @unchecked Sendable {
    private let owner = Mutex<WeakLoop?>(nil)

    var loop: RunLoop? { owner.withLock { $0?.loop } }

    /// Claims the item for `loop`; false if another loop has it.
    func claim(for loop: RunLoop) -> Bool {
        owner.withLock { owner in
            if let current = owner?.loop { return current === loop }
            owner = WeakLoop(loop)
            return true
        }
    }

    func release() { owner.withLock { $0 = nil } }

    func withLock<Result: Sendable>(_ body: () -> Result) -> Result { owner.withLock { _ in body() } }
}
