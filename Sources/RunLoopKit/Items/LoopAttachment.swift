import Synchronization

/// The single loop a timer or observer belongs to (CFRunLoop allows one loop per timer and observer,
/// in any number of its modes). Its lock also guards the item's state before it is first scheduled.
///
/// Stored inline in the item (a noncopyable struct around a `Mutex`), so it costs the item no
/// allocations of its own.
///
/// The claim is an unretained reference: no weak reference to write, load and destroy each time a
/// timer is removed and added again (a timeout re-armed per message), and no reference counting. It is
/// safe because a claim never outlives its loop: a loop's teardown (at its thread's exit, before the
/// thread's reference to the loop goes) releases every item it holds, and an add that loses the race
/// with teardown releases its claim itself, while the caller still holds the loop. ``loop`` retains
/// the loop inside the lock, so a concurrent teardown cannot free it in between. Debug builds keep a
/// weak reference beside it and trap if a claim ever outlives its loop.
struct LoopAttachment: ~Copyable, @unchecked Sendable {
    private let state = Mutex(AttachmentState())

    var loop: RunLoop? {
        state.withLock { state in
            #if DEBUG
            precondition(state.claimant == nil || state.check != nil, "RunLoopKit: an item's loop claim outlived the loop")
            #endif
            return state.claimant?.takeUnretainedValue()
        }
    }

    /// Claims the item for `loop`; false if another loop has it.
    func claim(for loop: RunLoop) -> Bool {
        state.withLock { state in
            if let claimant = state.claimant { return claimant.toOpaque() == Unmanaged.passUnretained(loop).toOpaque() }
            state.claimant = .passUnretained(loop)
            #if DEBUG
            state.check = loop
            #endif
            return true
        }
    }

    func release() { state.withLock { $0.claimant = nil } }

    /// Releases the claim if `loop` holds it.
    func release(ifClaimedBy loop: RunLoop) {
        state.withLock { state in
            if state.claimant?.toOpaque() == Unmanaged.passUnretained(loop).toOpaque() { state.claimant = nil }
        }
    }

    /// Whether `loop` holds the claim.
    func isClaimed(by loop: RunLoop) -> Bool {
        state.withLock { $0.claimant?.toOpaque() == Unmanaged.passUnretained(loop).toOpaque() }
    }

    func withLock<Result: Sendable>(_ body: () -> Result) -> Result { state.withLock { _ in body() } }

    /// Runs `body` under the lock if no loop holds the claim; nil (and `body` not run) if one does.
    /// The check and the body are one critical section: state that a loop guards once it claims the
    /// item can be touched here without racing a concurrent `add`.
    func ifUnclaimed<Result: Sendable>(_ body: () -> Result) -> Result? {
        state.withLock { state in state.claimant == nil ? body() : nil }
    }
}

/// The claiming loop, unretained (see LoopAttachment). Top level rather than nested and private:
/// the Swift 6.3.1 compiler emits a broken type-metadata symbol for the nested form inside `Mutex`.
struct AttachmentState {
    var claimant: Unmanaged<RunLoop>?
    #if DEBUG
    weak var check: RunLoop?
    #endif
}
