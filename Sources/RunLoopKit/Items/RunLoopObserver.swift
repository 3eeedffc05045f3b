import Synchronization

/// Watches the activities of a run loop: entry, before timers, before sources, before waiting,
/// after waiting, exit.
///
/// Within a mode, observers are called in ascending `order`, equal orders in the order they were added.
/// An observer is never re-entered: while its callback runs (even across a nested run) it is skipped.
/// A non-repeating observer fires once, for the first matching activity in any of its modes, and is
/// then invalidated. Observers alone do not keep a mode alive: a mode with only observers is empty.
///
/// Thread safety: `invalidate()` and `isValid` may be used from any thread; the callback runs on the
/// loop's thread.
public final class RunLoopObserver: @unchecked Sendable {
    public let activities: RunLoop.Activity
    public let repeats: Bool
    public let order: Int
    public let label: String?
    let callback: (RunLoopObserver, RunLoop.Activity) -> Void
    private let valid = Atomic<Bool>(true)

    let attachment = LoopAttachment()

    // Guarded by the owning loop's lock.
    var modes: [RunLoop.Mode] = []
    /// Set while the callback runs, so it is never re-entered. An atomic rather than a lock-guarded
    /// flag: claiming and releasing cost no lock pair per notification.
    private let inCallout = Atomic<Bool>(false)

    /// - Parameters:
    ///   - activities: the activities to report.
    ///   - repeats: false to fire once and invalidate.
    ///   - order: lower orders are called first.
    ///   - label: a name for traces.
    ///   - callback: runs on the loop's thread with the single activity being reported.
    public init(
        activities: RunLoop.Activity,
        repeats: Bool = true,
        order: Int = 0,
        label: String? = nil,
        _ callback: @escaping (RunLoopObserver, RunLoop.Activity) -> Void
    ) {
        self.activities = activities
        self.repeats = repeats
        self.order = order
        self.label = label
        self.callback = callback
    }

    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// Marks the callback running; false if it already is (a nested notification).
    @inline(__always)
    func claimCallout() -> Bool { !inCallout.exchange(true, ordering: .acquiring) }

    @inline(__always)
    func endCallout() { inCallout.store(false, ordering: .releasing) }

    /// The run loop the observer is added to, if any.
    public var runLoop: RunLoop? { attachment.loop }

    /// Removes the observer from every mode for good. Safe from any thread and from its own callback.
    public func invalidate() {
        guard valid.exchange(false, ordering: .acquiringAndReleasing) else { return }
        runLoop?.removeEverywhere(self)
    }
}
