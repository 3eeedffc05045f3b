import Synchronization

/// A timer scheduled in one or more modes of one run loop: one-shot or repeating, with tolerance.
///
/// Semantics follow CFRunLoopTimer:
/// - it only fires while the loop runs one of its modes; a deadline that passes meanwhile fires once
///   when such a mode next runs;
/// - a repeating timer keeps the phase of its original schedule and skips missed periods rather than
///   firing a burst;
/// - a one-shot timer is invalidated after it fires;
/// - equal deadlines fire in the order the timers were scheduled.
///
/// Tolerance follows Darwin: the timer fires somewhere in `[fireDate, fireDate + tolerance]`, never
/// early; for a repeating timer the tolerance is capped at half the interval. The loop uses the window
/// to fire several timers on one wake-up.
///
/// Thread safety: `invalidate()`, `nextFireDate`, `tolerance` and `isValid` may be used from any thread.
/// The callback always runs on the loop's thread.
public final class RunLoopTimer: @unchecked Sendable {
    /// A name shown in traces and stall reports.
    public let label: String?
    /// The repeat interval; `nil` for a one-shot timer.
    public var interval: Duration? {
        if let inexactInterval { return inexactInterval.value }
        return intervalNanoseconds > 0 ? .nanoseconds(Int64(intervalNanoseconds)) : nil
    }

    let callback: (RunLoopTimer) -> Void
    let intervalNanoseconds: UInt64
    /// The interval as given, kept only when whole nanoseconds cannot express it (a fraction of a
    /// nanosecond, or beyond `Int64.max` of them): 8 bytes per timer instead of an inline `Duration?`'s 24.
    private let inexactInterval: ExactDuration?

    /// The one loop the timer belongs to; every other mutable field is guarded by that loop's lock.
    let attachment = LoopAttachment()

    // Guarded by the owning loop's lock. The fields that heap operations and the fire path touch are
    // `@exclusivity(unchecked)`: the lock already serialises every access to them, so the runtime's
    // dynamic exclusivity check (a `swift_beginAccess` call per access, a quarter of a timer operation's
    // instructions) could only ever catch what the lock prevents. Misuse is caught instead by
    // `Lock.assertHeld()` in the loop's `…Locked` functions (debug builds), the heap's own consistency
    // check (`TimerHeap.checkInvariants()`), and the thread sanitizer run of the test suite.
    //
    // Declared widest first, the one-byte fields last: Swift lays stored properties out in declaration
    // order, and every byte over 128 moves a timer (with its heap entry) past 160 bytes.

    /// The fire date; before the first schedule, what `start` says it holds.
    @exclusivity(unchecked) var deadline: UInt64 = 0
    @exclusivity(unchecked) var sequence: UInt64 = 0
    @exclusivity(unchecked) var toleranceNanoseconds: UInt64 = 0
    /// The first mode's heap slot (nearly every timer is in one mode: no array, no allocation), then any
    /// others. `otherMemberships` is empty whenever `home` is nil.
    @exclusivity(unchecked) var home: TimerMembership?
    @exclusivity(unchecked) var otherMemberships: [TimerMembership] = []
    private let valid = Atomic<Bool>(true)
    @exclusivity(unchecked) var isInCallout = false
    @exclusivity(unchecked) var wasRedatedInCallout = false
    /// What `deadline` means until the timer is first scheduled. Guarded by the loop lock once
    /// scheduled, by the attachment's lock before.
    @exclusivity(unchecked) var start: Start

    /// A timer may be created with a delay relative to "when it is added"; until then `deadline` holds
    /// that delay. Kept beside the deadline rather than as an enum with a payload (9 bytes more).
    enum Start: UInt8 {
        /// `deadline` is the delay (nanoseconds, not negative) from the first schedule.
        case afterDelay
        /// `deadline` is the first fire date, set before the first schedule.
        case atInstant
        /// `deadline` is the timer's fire date (or its last one, once it left the loop).
        case placed
    }

    /// Creates a timer that first fires `delay` after it is added to a loop.
    /// - Parameters:
    ///   - delay: time from scheduling to the first fire; zero or negative fires at the first opportunity.
    ///   - interval: the repeat interval; `nil` (or a non-positive duration) makes a one-shot timer.
    ///   - tolerance: how late the timer may fire, to let the loop coalesce wake-ups.
    ///   - label: a name for traces.
    ///   - callback: runs on the loop's thread; receives the timer so it can invalidate or re-date it.
    public convenience init(
        after delay: Duration,
        repeating interval: Duration? = nil,
        tolerance: Duration = .zero,
        label: String? = nil,
        _ callback: @escaping (RunLoopTimer) -> Void
    ) {
        self.init(start: .afterDelay, at: UInt64(max(0, delay.clampedNanoseconds)), interval: interval, tolerance: tolerance, label: label, callback)
    }

    /// Creates a timer that first fires at `fireDate` on the clock of the loop it is added to.
    public convenience init(
        fireAt fireDate: LoopInstant,
        repeating interval: Duration? = nil,
        tolerance: Duration = .zero,
        label: String? = nil,
        _ callback: @escaping (RunLoopTimer) -> Void
    ) {
        self.init(start: .atInstant, at: fireDate.nanoseconds, interval: interval, tolerance: tolerance, label: label, callback)
    }

    private init(
        start: Start, at deadline: UInt64, interval: Duration?, tolerance: Duration, label: String?,
        _ callback: @escaping (RunLoopTimer) -> Void
    ) {
        self.label = label
        let intervalNanoseconds = interval.map { max(0, $0.clampedNanoseconds) } ?? 0
        if let interval, intervalNanoseconds > 0, interval != .nanoseconds(intervalNanoseconds) {
            self.inexactInterval = ExactDuration(value: interval)
        } else {
            self.inexactInterval = nil
        }
        self.intervalNanoseconds = UInt64(intervalNanoseconds)
        self.callback = callback
        self.start = start
        self.deadline = deadline
        self.toleranceNanoseconds = Self.cap(tolerance: tolerance, interval: self.intervalNanoseconds)
    }

    private static func cap(tolerance: Duration, interval: UInt64) -> UInt64 {
        let requested = UInt64(max(0, tolerance.clampedNanoseconds))
        return interval > 0 ? min(requested, interval / 2) : requested
    }

    /// Whether the timer repeats.
    public var repeats: Bool { intervalNanoseconds > 0 }

    /// False once the timer was invalidated (or, for a one-shot timer, fired).
    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// The run loop the timer is scheduled on, if any.
    public var runLoop: RunLoop? { attachment.loop }

    /// The next time the timer fires, on its loop's clock.
    ///
    /// `nil` only for a timer created with a delay that has not been added to a loop yet. Inside the
    /// timer's own callback it reads the deadline being serviced. Setting it from inside the callback
    /// overrides the repeat schedule for that fire; a date in the past means "as soon as possible".
    /// May be set from any thread.
    public var nextFireDate: LoopInstant? {
        get {
            // Between a claim and the insertion `deadline` may still hold a delay.
            access(
                unclaimed: { start == .atInstant ? LoopInstant(nanoseconds: deadline) : nil },
                claimed: { loop in loop.lock.withLock { start == .afterDelay ? nil : LoopInstant(nanoseconds: deadline) } })
        }
        set {
            guard let date = newValue else { return }
            access(
                unclaimed: {
                    start = .atInstant
                    deadline = date.nanoseconds
                }, claimed: { loop in loop.redate(self, to: date.nanoseconds) })
        }
    }

    /// How late the timer may fire. Capped at half the interval for a repeating timer.
    public var tolerance: Duration {
        get {
            access(
                unclaimed: { .nanoseconds(Int64(clamping: toleranceNanoseconds)) },
                claimed: { loop in loop.lock.withLock { .nanoseconds(Int64(clamping: toleranceNanoseconds)) } })
        }
        set {
            let capped = Self.cap(tolerance: newValue, interval: intervalNanoseconds)
            access(unclaimed: { toleranceNanoseconds = capped }, claimed: { loop in loop.setTolerance(self, capped) })
        }
    }

    /// Runs `unclaimed` under the attachment's lock while no loop holds the timer, otherwise `claimed`
    /// with that loop. The check and `unclaimed` are one critical section, so an `add` on another
    /// thread cannot claim the timer and read `start` and `deadline` halfway through a write.
    private func access<Result: Sendable>(unclaimed: () -> Result, claimed: (RunLoop) -> Result) -> Result {
        while true {
            if let result = attachment.ifUnclaimed(unclaimed) { return result }
            if let loop = runLoop { return claimed(loop) }
            // Released in between (an add that lost to a teardown): unclaimed again.
        }
    }

    /// Stops the timer for good and removes it from every mode. Safe from any thread and from the
    /// timer's own callback (the callback completes; there is no further fire).
    public func invalidate() {
        guard markInvalid() else { return }
        runLoop?.removeEverywhere(self)
    }

    /// Clears the valid flag; true for the one caller that did (and so must detach the timer).
    func markInvalid() -> Bool {
        valid.exchange(false, ordering: .acquiringAndReleasing)
    }
}

// MARK: membership records (caller holds the owning loop's lock)

extension RunLoopTimer {
    /// Whether the timer is in at least one mode.
    var isScheduled: Bool { home != nil }

    /// Whether `nextFireDate` was set while the timer was in no mode. Set inside its callout, that date
    /// overrides the repeat schedule as any date set there does (as CFRunLoop), whether the timer is
    /// added back during the callout or after it.
    var hasDateSetOutsideTheLoop: Bool { start == .atInstant }

    @inline(__always)
    func heapIndex(in store: ObjectIdentifier) -> Int? {
        if let home, home.storeID == store { return home.heapIndex }
        return otherMemberships.first { $0.storeID == store }?.heapIndex
    }

    @inline(__always)
    func setHeapIndex(_ index: Int, in store: ObjectIdentifier) {
        if home?.storeID == store {
            home!.heapIndex = index
        } else if let slot = otherMemberships.firstIndex(where: { $0.storeID == store }) {
            otherMemberships[slot].heapIndex = index
        }
    }

    /// The record of the timer's place in the store of `mode`, if it is in that mode.
    @inline(__always)
    func membership(in mode: RunLoop.Mode) -> TimerMembership? {
        if let home, home.withStore({ $0.mode == mode }) { return home }
        return otherMemberships.first { membership in membership.withStore { $0.mode == mode } }
    }

    func addMembership(_ membership: TimerMembership) {
        if home == nil { home = membership } else { otherMemberships.append(membership) }
    }

    /// Removes the record for `store`; returns the heap index it held.
    func removeMembership(in store: ObjectIdentifier) -> Int? {
        if let home, home.storeID == store {
            self.home = otherMemberships.isEmpty ? nil : otherMemberships.removeFirst()
            return home.heapIndex
        }
        guard let slot = otherMemberships.firstIndex(where: { $0.storeID == store }) else { return nil }
        return otherMemberships.remove(at: slot).heapIndex
    }

    func clearMemberships() {
        home = nil
        otherMemberships.removeAll()
    }

    /// Calls `body` with each mode store the timer is in, first mode first.
    func forEachStore(_ body: (ModeStore) -> Void) {
        guard let home else { return }
        home.withStore(body)
        for other in otherMemberships { other.withStore(body) }
    }
}

/// A timer's place in one mode's heap (16 bytes, also as an optional).
///
/// Unretained: a membership is removed before its store could go (stores live as long as their loop,
/// and teardown clears memberships), and a counted or checked reference would cost reference counting
/// on every read.
struct TimerMembership {
    private let reference: Unmanaged<ModeStore>
    /// The timer's place in the store's ``TimerQueue``: a heap index (≥ 0), or `~ticket` (negative)
    /// in its lane.
    var heapIndex: Int

    init(store: ModeStore, heapIndex: Int) {
        self.reference = .passUnretained(store)
        self.heapIndex = heapIndex
    }

    var store: ModeStore { reference.takeUnretainedValue() }
    /// Lends the store without retaining it (nor releasing it after), which `store` may not avoid.
    @inline(__always)
    func withStore<Result>(_ body: (ModeStore) -> Result) -> Result { reference._withUnsafeGuaranteedRef(body) }
    var storeID: ObjectIdentifier { reference._withUnsafeGuaranteedRef { ObjectIdentifier($0) } }
}

/// A `Duration` boxed, for the rare value a timer cannot keep as whole nanoseconds.
final class ExactDuration: Sendable {
    let value: Duration
    init(value: Duration) { self.value = value }
}
