import Synchronization

/// The single loop a timer or observer belongs to (CFRunLoop allows one loop per timer and observer,
/// in any number of its modes). Its lock also guards the item's state before it is first scheduled.
///
/// Stored inline in the item (a noncopyable struct around a `Mutex`), so it costs the item no
/// allocations of its own.
///
/// The claim is the loop's identity; the weak reference (for ``loop``) outlives a release, so an item
/// removed and added again to the same loop — a timeout re-armed per message — checks identities
/// instead of writing and destroying a weak reference each time. An identity never outlives its loop's
/// claim: a loop's teardown releases every item it holds, so a later loop at the same address cannot be
/// mistaken for it.
struct LoopAttachment: ~Copyable, @unchecked Sendable {
    private let state = Mutex(AttachmentState())

    var loop: RunLoop? { state.withLock { $0.claimant == nil ? nil : $0.loop } }

    /// Claims the item for `loop`; false if another loop has it.
    func claim(for loop: RunLoop) -> Bool {
        let identity = ObjectIdentifier(loop)
        return state.withLock { state in
            if let claimant = state.claimant { return claimant == identity }
            if state.loop !== loop { state.loop = loop }
            state.claimant = identity
            return true
        }
    }

    func release() { state.withLock { $0.claimant = nil } }

    /// Releases the claim if `loop` holds it.
    func release(ifClaimedBy loop: RunLoop) {
        let identity = ObjectIdentifier(loop)
        state.withLock { state in
            if state.claimant == identity { state.claimant = nil }
        }
    }

    /// Whether `loop` holds the claim (no weak-reference load).
    func isClaimed(by loop: RunLoop) -> Bool {
        let identity = ObjectIdentifier(loop)
        return state.withLock { $0.claimant == identity }
    }

    func withLock<Result: Sendable>(_ body: () -> Result) -> Result { state.withLock { _ in body() } }
}

/// A claim and the claimed loop. Top level rather than nested and private in `LoopAttachment`: the
/// Swift 6.3.1 compiler emits a broken type-metadata symbol for the nested form inside `Mutex`.
struct AttachmentState {
    var claimant: ObjectIdentifier?
    weak var loop: RunLoop?
}
