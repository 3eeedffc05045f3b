/// The judge of a silence deadline (a read timeout, an answer or login deadline, a keepalive): when
/// the deadline passes while the peer's bytes wait unread, this loop was late, not the peer silent.
///
/// A busy loop services its timers before its ports, so a deadline can fire on the very pass that
/// would have read the peer's answer. Then the verdict is put off by one grace, long enough for the
/// bytes to be read, and judged again after that. One grace only: bytes that keep waiting without
/// ever answering must not keep a silent peer alive.
///
/// A pure value: the owner keeps its deadline, asks ``judge(_:now:peerBytesWaiting:)`` when its timer
/// fires, carries out the ``Verdict``, and calls ``startOver()`` when a new wait begins (whatever its
/// rule for that is: a frame arrived, a read request became first in line). Use it on the owner's
/// thread, like the rest of the owner's state.
public struct SilenceDeadline: Sendable, Equatable {
    /// What ``judge(_:now:peerBytesWaiting:)`` decided.
    public enum Verdict: Sendable, Equatable {
        /// The deadline has not come (or a grace has not ended): wait until ``SilenceDeadline/due(_:)``.
        case fine
        /// The deadline passed with the peer's bytes waiting: judge again at this instant, after the
        /// loop has read them.
        case extend(to: LoopInstant)
        /// The deadline passed and the peer was silent (or already had its grace): time is up.
        case expired
    }

    /// Which deadlines share one grace.
    public enum Renewal: Sendable, Equatable {
        /// One grace per wait, however often its deadline moves (an idle timeout that restarts at each
        /// arrival, a second deadline of the same wait): only ``SilenceDeadline/startOver()`` grants
        /// another.
        case perWait
        /// One grace per deadline instant: a deadline other than the one that had its grace (the next
        /// ping's, say) may have one of its own without ``SilenceDeadline/startOver()``.
        case perDeadline
    }

    /// How long a loop usually needs to read what already waits: the grace unless told otherwise.
    public static let defaultGrace: Duration = .milliseconds(50)

    /// How long a verdict is put off when the peer's bytes wait unread.
    public let grace: Duration
    /// Which deadlines share one grace.
    public let renewal: Renewal
    /// A grace given: the deadline that had it, and when it ends.
    public struct Grant: Sendable, Equatable {
        public let deadline: LoopInstant
        public let until: LoopInstant

        package init(deadline: LoopInstant, until: LoopInstant) {
            self.deadline = deadline
            self.until = until
        }
    }

    /// The grace taken since the last ``startOver()``; `nil` while none was.
    public private(set) var grant: Grant?

    /// - Parameters:
    ///   - grace: how long a late verdict is put off; ``defaultGrace`` fits a loop that reads what
    ///     waits on its next pass, a ping interval fits a judge that only looks at each ping.
    ///   - renewal: which deadlines share one grace (see ``Renewal``).
    public init(grace: Duration = defaultGrace, renewal: Renewal = .perWait) {
        precondition(grace > .zero, "a grace must be positive")
        self.grace = grace
        self.renewal = renewal
    }

    /// A judge that takes up where one with the same `grace` and `renewal` left off: its ``grant``
    /// (`nil`: none taken since its last ``startOver()``). For an owner of many deadlines that share
    /// one grace and renewal (a server's sessions), which keeps only each one's grant and makes the
    /// judge when it needs one, instead of keeping the grace and renewal in every one of them.
    public init(grace: Duration = defaultGrace, renewal: Renewal = .perWait, resuming grant: Grant?) {
        self.init(grace: grace, renewal: renewal)
        self.grant = grant
    }

    /// Whether the grace is spent for `deadline`.
    public func hasHadGrace(for deadline: LoopInstant) -> Bool {
        guard let grant else { return false }
        switch renewal {
        case .perWait: return true
        case .perDeadline: return deadline == grant.deadline || deadline == grant.until
        }
    }

    /// When `deadline` is to be judged: the end of its grace if it had one, otherwise the deadline
    /// itself. Arm the owner's timer for this. (An owner that moves its deadline to the grace's end
    /// instead, as ``Verdict/extend(to:)`` allows, gets that instant back unchanged.)
    public func due(_ deadline: LoopInstant) -> LoopInstant {
        guard let grant, grant.deadline == deadline else { return deadline }
        return max(deadline, grant.until)
    }

    /// Judges `deadline` at `now`. `peerBytesWaiting` is asked only when the deadline has passed and a
    /// grace is still to be had (asking may cost the owner a system call).
    public mutating func judge(_ deadline: LoopInstant, now: LoopInstant, peerBytesWaiting: () -> Bool) -> Verdict {
        if now < due(deadline) { return .fine }
        guard !hasHadGrace(for: deadline), peerBytesWaiting() else { return .expired }
        let until = now + grace
        grant = Grant(deadline: deadline, until: until)
        return .extend(to: until)
    }

    /// A new wait begins (the peer spoke, a new request waits): the next deadline may have a grace again.
    public mutating func startOver() {
        grant = nil
    }
}
