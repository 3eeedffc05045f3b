/// Keeps the rule "callbacks never run inside the owner's call" for an object confined to a loop's
/// thread (a connection, a client): what a method the owner called causes is reported on the loop's
/// next pass, so the owner may call the object from any callback and a callback never re-enters the
/// code that called.
///
/// The object wraps each public method in ``ownerCall(_:)`` and hands its callbacks to ``run(_:)``:
/// outside an owner's call they run at once; inside one (or while earlier ones still wait, so none
/// overtakes another) they wait for one block on the loop's next pass in the object's modes, and run
/// there in the order given. ``runLater(_:)`` always waits.
///
/// Threads: the loop's thread only, like its owner. Lifetime: a waiting callback keeps what it
/// captures until it runs, or until the loop's thread ends without running it (then it is let go, so a
/// callback that captures the owner does not keep it forever); the queued block keeps this deferral.
public final class CallbackDeferral {
    /// The loop whose next pass runs waiting callbacks.
    public let loop: RunLoop
    /// The modes that pass may run in.
    public let modes: [RunLoop.Mode]
    /// The queued block's label, for traces and stall reports.
    public let label: String
    private var ownerCallDepth = 0
    private var waiting: [() -> Void] = []

    /// Must be called on the loop's thread.
    public init(loop: RunLoop, modes: [RunLoop.Mode], label: String) {
        precondition(loop.isCurrentThread, "CallbackDeferral must be created on its run loop's thread")
        self.loop = loop
        self.modes = modes
        self.label = label
    }

    /// Whether a method the owner called is running (callbacks must not run now).
    public var isInsideOwnerCall: Bool { ownerCallDepth > 0 }

    /// Whether callbacks wait for the loop's next pass.
    public var hasWaitingCallbacks: Bool { !waiting.isEmpty }

    /// Runs `body`, one of the owner's own calls (nested calls are fine): callbacks it causes wait.
    public func ownerCall<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        ownerCallDepth += 1
        defer { ownerCallDepth -= 1 }
        return try body()
    }

    /// Runs `callback` now when no owner's call is running and nothing waits; otherwise after what
    /// waits, on the loop's next pass.
    public func run(_ callback: @escaping () -> Void) {
        if !isInsideOwnerCall, waiting.isEmpty { return callback() }
        runLater(callback)
    }

    /// Runs `callback` on the loop's next pass, after what waits already. If that pass never comes (the
    /// loop's thread ends first), the callback is let go without running.
    public func runLater(_ callback: @escaping () -> Void) {
        let isFirst = waiting.isEmpty
        waiting.append(callback)
        guard isFirst else { return }
        // The loop's own thread (the deferral is confined to it), so this cannot throw but for a loop
        // torn down, whose callbacks can no longer run: the ticket, let go unused, drops them.
        let ticket = FlushTicket(self)
        try? loop.performFromLoopThread(inModes: modes, label: label) { ticket.flush() }
    }

    /// Runs what waits, in order; callbacks queued meanwhile wait for the next pass.
    fileprivate func flush() {
        let batch = waiting
        waiting.removeAll()
        for callback in batch { callback() }
    }

    /// Lets go of what waits without running it.
    fileprivate func dropWaiting() {
        // Released after the property is empty: a callback's captures may own the owner, whose deinit
        // must find this deferral in a consistent state.
        let dropped = waiting
        waiting.removeAll()
        _ = dropped
    }
}

/// The queued block's hold on a deferral. A loop whose thread ends drops the blocks it never ran; the
/// waiting callbacks usually capture the deferral's owner, which owns the deferral — a cycle that only
/// running or dropping them breaks. So a ticket let go without having flushed drops them.
private final class FlushTicket {
    let deferral: CallbackDeferral
    private var flushed = false

    init(_ deferral: CallbackDeferral) { self.deferral = deferral }

    func flush() {
        flushed = true
        deferral.flush()
    }

    deinit {
        if !flushed { deferral.dropWaiting() }
    }
}
