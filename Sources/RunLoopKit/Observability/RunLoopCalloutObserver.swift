import Synchronization

extension RunLoop {
    /// The kinds of user code a loop calls out to.
    public enum CalloutKind: String, Sendable, CaseIterable {
        case timer, source, port, block, observer
    }

    /// One call from the loop into user code, reported to ``RunLoopCalloutObserver``s twice: when it
    /// begins (`end == nil`; to observers that ask for beginnings) and when it returns.
    public struct Callout: Sendable, CustomStringConvertible {
        public let kind: CalloutKind
        /// The item's label (timer, source, port, observer) or the block's, if any.
        public let label: String?
        /// Identifies the item called (nil for blocks), so an observer can recognise its own items.
        public let item: ObjectIdentifier?
        /// The mode being run.
        public let mode: Mode
        /// 1 for a callout of the outermost activation, 2 inside a nested run, and so on.
        public let depth: Int
        public let start: LoopInstant
        /// nil when the callout begins.
        public let end: LoopInstant?

        /// How long the callout ran (zero while it runs).
        public var duration: Duration { end.map { $0 - start } ?? .zero }

        public var description: String {
            "\(kind)\(label.map { ":\($0)" } ?? "")@\(mode)"
        }
    }
}

/// Watches every callout a loop makes — timers, custom and port sources, blocks, activity observers —
/// with its mode, nesting depth and timing, in every mode of the loop. The activity recorder
/// (RunLoopTesting) and ``RunLoopStallDetector`` are built on it.
///
/// Nothing is measured while a loop has no callout observer: each callout then costs one atomic load.
/// The callback runs on the loop's thread, before and after each callout (after only, for an observer
/// made without `reportsBeginnings`); it must not start a nested run. Callout observers' own callbacks are not reported.
///
/// Thread safety: adding, removing and invalidating may be done from any thread.
public final class RunLoopCalloutObserver: @unchecked Sendable {
    public let label: String?
    /// Whether the callback also hears of each callout as it begins (`end == nil`), not only when it
    /// returns.
    public let reportsBeginnings: Bool
    let callback: (RunLoop.Callout) -> Void
    /// Items whose callouts this observer is not told of: its owner's own observers, say. When every
    /// callout observer of the loop ignores an item, its callouts are not measured at all.
    let ignoredItems: [ObjectIdentifier]
    private let valid = Atomic<Bool>(true)
    let attachment = LoopAttachment()

    /// - Parameters:
    ///   - reportsBeginnings: `false` for an observer that only needs finished callouts (durations):
    ///     the loop then skips the report at each callout's start, half the cost of watching, when no
    ///     other observer of the loop wants it either.
    ///   - callback: called on the loop's thread for each callout, before and after it runs (only
    ///     after, without `reportsBeginnings`).
    public init(label: String? = nil, reportsBeginnings: Bool = true, _ callback: @escaping (RunLoop.Callout) -> Void) {
        self.label = label
        self.reportsBeginnings = reportsBeginnings
        self.callback = callback
        ignoredItems = []
    }

    /// An observer that is not told of the callouts of `ignoring`'s items (the observers of the tool
    /// that made it): the loop measures and reports none of them when no other callout observer wants
    /// them.
    package init(
        label: String?, reportsBeginnings: Bool, ignoring ignoredItems: [ObjectIdentifier],
        _ callback: @escaping (RunLoop.Callout) -> Void
    ) {
        self.label = label
        self.reportsBeginnings = reportsBeginnings
        self.callback = callback
        self.ignoredItems = ignoredItems
    }

    /// Whether the callouts of the item `identifier` names are kept from this observer.
    @inline(__always)
    func ignores(_ identifier: ObjectIdentifier?) -> Bool {
        guard let identifier, !ignoredItems.isEmpty else { return false }
        return ignoredItems.contains(identifier)
    }

    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// Stops the observer for good and removes it from its loop. Safe from any thread.
    public func invalidate() {
        guard valid.exchange(false, ordering: .acquiringAndReleasing) else { return }
        attachment.loop?.remove(self)
    }
}

extension RunLoop {
    /// Adds a callout observer (it sees every mode). An observer belongs to one loop. Safe from any thread.
    public func add(_ observer: RunLoopCalloutObserver) {
        guard observer.isValid, observer.attachment.claim(for: self) else { return }
        lock.withLock {
            guard !tornDownLocked, !calloutObservers.contains(where: { $0 === observer }) else { return }
            calloutObservers.append(observer)
            hasCalloutObservers.store(true, ordering: .releasing)
        }
    }

    /// Removes a callout observer. Safe from any thread.
    public func remove(_ observer: RunLoopCalloutObserver) {
        lock.withLock {
            calloutObservers.removeAll { $0 === observer }
            hasCalloutObservers.store(!calloutObservers.isEmpty, ordering: .releasing)
        }
        observer.attachment.release(ifClaimedBy: self)
    }

    /// Runs a callout, reporting it to callout observers if there are any. The report's fields are
    /// autoclosures: unobserved, a callout retains no label, mode name, item or clock to describe itself.
    @inline(__always)
    func callOut(
        _ kind: CalloutKind, item: @autoclosure () -> AnyObject?, label: @autoclosure () -> String?,
        mode: @autoclosure () -> Mode, clock: @autoclosure () -> LoopClock, _ body: () -> Void
    ) {
        if !hasCalloutObservers.load(ordering: .relaxed) {
            body()
            return
        }
        reportedCallOut(kind, item: item().map(ObjectIdentifier.init), label: label, mode: mode, clock: clock, body)
    }

    /// The description of the callout is taken only once some observer is to hear of it.
    private func reportedCallOut(
        _ kind: CalloutKind, item identifier: ObjectIdentifier?, label describeLabel: () -> String?,
        mode describeMode: () -> Mode, clock readClock: () -> LoopClock, _ body: () -> Void
    ) {
        let observers = lock.withLock { calloutObservers }
        // A tool's own observers (the stall detector's, three callouts a pass) are not measured unless
        // some observer is to hear of them.
        if identifier != nil && observers.allSatisfy({ $0.ignores(identifier) }) {
            body()
            return
        }
        let label = describeLabel()
        let mode = describeMode()
        let clock = readClock()
        let start = clock.now
        if observers.contains(where: { $0.reportsBeginnings }) {
            let began = Callout(kind: kind, label: label, item: identifier, mode: mode, depth: depth, start: start, end: nil)
            for observer in observers where observer.reportsBeginnings && observer.isValid && !observer.ignores(identifier) {
                observer.callback(began)
            }
        }
        body()
        let ended = Callout(kind: kind, label: label, item: identifier, mode: mode, depth: depth, start: start, end: clock.now)
        for observer in observers where observer.isValid && !observer.ignores(identifier) { observer.callback(ended) }
    }
}
