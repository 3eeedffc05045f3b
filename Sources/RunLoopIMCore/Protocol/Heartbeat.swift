/// How often an idle client proves it is alive.
public enum HeartbeatMode: Sendable, Equatable {
    /// A beat after every `interval` of quiet link.
    case fixed(Duration)
    /// WeChat's "smart heartbeat": start safe, lengthen after a run of answered beats, step back after
    /// a beat that died the way NAT timeouts kill links, settle just below the longest one that worked.
    case adaptive(AdaptiveHeartbeat.Settings)

    /// The longest interval this mode can reach: what the client announces as its keepalive, so the
    /// server's 1.5 × keepalive silence rule never fires while the client keeps to its schedule.
    public var longestInterval: Duration {
        switch self {
        case .fixed(let interval): return interval
        case .adaptive(let settings): return settings.maximum
        }
    }
}

/// The adaptive heartbeat's state: the interval to use now and what it has learned.
///
/// A beat "succeeds" when its answer arrives; it "fails like a NAT timeout" when the link died while
/// a beat sent after a long quiet spell waited for its answer (the carrier's mapping expired while
/// idle). Other failures — a reset mid-conversation, a refused connect — teach it nothing. A new
/// network (``reset()``) starts over: each network has its own NAT.
public struct AdaptiveHeartbeat: Sendable, Equatable {
    /// The shape of the search.
    public struct Settings: Sendable, Equatable {
        /// Where it starts: short enough for carriers that drop idle mappings after ~5 minutes.
        public var initial: Duration
        /// Never shorter than this, however many failures.
        public var minimum: Duration
        /// Never longer than this.
        public var maximum: Duration
        /// How much each climb or step back moves the interval.
        public var step: Duration
        /// Answered beats in a row at one interval before trying a longer one.
        public var successesBeforeGrowing: Int
        /// How far below the last interval that worked it settles after a failure.
        public var settleMargin: Duration

        /// WeChat Mars' published shape: 4.5 min, +60 s after 3 answered beats, at most 14 min 50 s,
        /// settling 20 s below the last success, never under 1 min.
        public init(
            initial: Duration = .seconds(270),
            minimum: Duration = .seconds(60),
            maximum: Duration = .seconds(890),
            step: Duration = .seconds(60),
            successesBeforeGrowing: Int = 3,
            settleMargin: Duration = .seconds(20)
        ) {
            precondition(minimum > .zero && minimum <= initial && initial <= maximum, "need 0 < minimum ≤ initial ≤ maximum")
            precondition(step > .zero && successesBeforeGrowing > 0 && settleMargin >= .zero, "step and margin must be positive")
            self.initial = initial
            self.minimum = minimum
            self.maximum = maximum
            self.step = step
            self.successesBeforeGrowing = successesBeforeGrowing
            self.settleMargin = settleMargin
        }
    }

    public let settings: Settings
    /// The interval to use now.
    public private(set) var interval: Duration
    /// The longest quiet spell a beat survived on this network.
    public private(set) var longestSuccess: Duration?
    /// The shortest quiet spell after which a beat died like a NAT timeout on this network.
    public private(set) var shortestFailure: Duration?
    /// True once a failure fixed the interval: it no longer climbs (only steps back on new failures).
    public private(set) var isSettled = false
    private var streak = 0

    public init(settings: Settings) {
        self.settings = settings
        interval = settings.initial
    }

    /// A beat sent after `quiet` of silence was answered.
    public mutating func recordSuccess(afterQuiet quiet: Duration) {
        longestSuccess = max(longestSuccess ?? .zero, quiet)
        guard !isSettled else { return }
        streak += 1
        guard streak >= settings.successesBeforeGrowing else { return }
        streak = 0
        var next = min(settings.maximum, interval + settings.step)
        if let failure = shortestFailure { next = min(next, failure - settings.settleMargin) }
        interval = max(interval, next)
    }

    /// The link died while a beat sent after `quiet` of silence waited for its answer.
    public mutating func recordNATLikeFailure(afterQuiet quiet: Duration) {
        shortestFailure = min(shortestFailure ?? quiet, quiet)
        streak = 0
        if isSettled {
            // It failed where it had settled: the network got stricter. Step back a whole step.
            interval = clamp(interval - settings.step)
        } else {
            // Settle just below the longest interval known to work (below this one if none worked yet).
            let base = longestSuccess.map { min($0, quiet) } ?? (quiet - settings.step)
            interval = clamp(base - settings.settleMargin)
            isSettled = true
        }
    }

    /// A different network: forget what was learned and start from ``Settings/initial`` again.
    public mutating func reset() {
        self = AdaptiveHeartbeat(settings: settings)
    }

    private func clamp(_ value: Duration) -> Duration {
        min(settings.maximum, max(settings.minimum, value))
    }
}

/// The heartbeat part of a client's state: the mode and, for the adaptive one, its learning.
struct HeartbeatSchedule: Sendable, Equatable {
    private(set) var adaptive: AdaptiveHeartbeat?
    private let fixedInterval: Duration

    init(mode: HeartbeatMode) {
        switch mode {
        case .fixed(let interval):
            precondition(interval > .zero, "a heartbeat interval must be positive")
            fixedInterval = interval
            adaptive = nil
        case .adaptive(let settings):
            fixedInterval = settings.initial
            adaptive = AdaptiveHeartbeat(settings: settings)
        }
    }

    var interval: Duration { adaptive?.interval ?? fixedInterval }

    mutating func recordSuccess(afterQuiet quiet: Duration) { adaptive?.recordSuccess(afterQuiet: quiet) }
    mutating func recordNATLikeFailure(afterQuiet quiet: Duration) { adaptive?.recordNATLikeFailure(afterQuiet: quiet) }
    mutating func networkChanged() { adaptive?.reset() }
}
