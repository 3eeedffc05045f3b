/// Where reconnect jitter comes from: a fraction in `0..<1` per call.
///
/// Production uses the system generator; tests inject ``seeded(_:)`` so a backoff schedule is the same
/// on every run while still being spread like the real one.
public struct JitterSource: Sendable {
    private let draw: @Sendable () -> Double

    /// A source that returns `draw()`, which must stay in `0..<1`.
    public init(_ draw: @escaping @Sendable () -> Double) { self.draw = draw }

    /// The system's random generator.
    public static let system = JitterSource { Double.random(in: 0..<1) }

    /// A deterministic SplitMix64 sequence from `seed`.
    public static func seeded(_ seed: UInt64) -> JitterSource {
        let state = SeedState(seed)
        return JitterSource { state.nextUnitInterval() }
    }

    /// Always the same fraction (0 gives the longest delay of each step, just under 1 the shortest).
    public static func constant(_ fraction: Double) -> JitterSource {
        precondition((0..<1).contains(fraction), "a jitter fraction is in 0..<1")
        return JitterSource { fraction }
    }

    package func next() -> Double { draw() }
}

/// SplitMix64 behind a lock-free atomic is overkill here: a jitter source is used on one loop thread.
/// The class is only `@unchecked Sendable` so the closure can be; each client owns its own.
private final class SeedState: @unchecked Sendable {
    private var state: UInt64
    init(_ seed: UInt64) { state = seed }
    func nextUnitInterval() -> Double {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Double(z >> 11) / Double(1 << 53)
    }
}
