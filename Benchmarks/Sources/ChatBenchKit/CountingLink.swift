public import RunLoopIM
import RunLoopIMCore

/// Heartbeats sent and answered by the clients that share it (their loop's thread only).
public final class HeartbeatCounters {
    public var sent = 0
    public var answered = 0

    public init() {}
}

/// Counting links: `IMServer` has no per-frame hook, so the client side counts the HEARTBEAT frames
/// it sends and the HEARTBEAT_ACK frames it receives.
public enum CountingLink {
    /// A connector whose links are `connector`'s, counting heartbeats on `counters`.
    public static func connector(_ connector: @escaping IMConnector, counters: HeartbeatCounters) -> IMConnector {
        TappedFrameLink.connector(
            connector,
            sent: { if $0.command == .heartbeat { counters.sent += 1 } },
            received: { if $0.command == .heartbeatAck { counters.answered += 1 } })
    }
}
