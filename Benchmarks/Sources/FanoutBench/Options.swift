/// `fanout-bench --port P --pid PID [--subscribers N] [--messages M] [--window W] [--payload B] [--timeout S]
/// [--logins-in-flight L] [--ready-timeout S]`
struct Options {
    /// The chat node's port on 127.0.0.1 (the script started it and read "listening on …").
    var port: UInt16 = 0
    /// The node's process id: its RSS and CPU are read from /proc/PID.
    var pid: Int32 = 0
    /// Clients that join the room and receive every message.
    var subscribers = 50
    /// Messages the publisher sends to the room.
    var messages = 5_000
    /// Messages the publisher may have sent and not yet had acknowledged (SEND_ACK), like an MQTT
    /// client's QoS 1 in-flight window waiting for PUBACKs.
    var window = 100
    /// Bytes of message text: the send time (20 decimal digits) padded with 'x', the same payload the
    /// MQTT driver publishes.
    var payload = 64
    /// The whole fan-out must finish within this, or the run reports what arrived and fails.
    var timeout = 90
    /// Subscribers logging in at once: the node admits at most 4 logins in progress from one address
    /// (docs/PROTOCOL.md, section 5, item 6) and refuses the next "for now"; every client here comes
    /// from 127.0.0.1, so the ramp opens a client only when another one's login is answered, as a
    /// well-behaved client crowd behind one address would. A refusal still happens (the node also
    /// refuses a login it expects to wait too long in its queue) and is retried after its
    /// `retry_after_ms`, by IMClient itself.
    var loginsInFlight = 4
    /// Logging in and joining must finish within this; unless given, 30 s and 10 ms more per
    /// subscriber (a room of 10,000 takes minutes to log in 4 at a time).
    var readyTimeout = 0
    /// The room every client joins.
    var room = "fanout"

    static let usage = """
        usage: fanout-bench --port P --pid PID [--subscribers N] [--messages M] [--window W] [--payload BYTES] [--timeout SECONDS]
                           [--logins-in-flight L] [--ready-timeout SECONDS]
          N subscribers and one publisher (IMClient) join one room of the chat node at 127.0.0.1:P; the
          publisher sends M messages with at most W unacknowledged; prints `fanout.<figure> <value>` lines.
          Subscribers log in at most L at a time (default 4: the node's published limit per address).
        """

    init(_ arguments: [String]) throws(UsageError) {
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard let text = rest.popFirst(), let value = Int(text), value >= 0 else { throw UsageError(flag) }
            switch flag {
            case "--port": port = UInt16(clamping: value)
            case "--pid": pid = Int32(clamping: value)
            case "--subscribers": subscribers = max(1, value)
            case "--messages": messages = max(1, value)
            case "--window": window = max(1, value)
            case "--payload": payload = max(20, value)
            case "--timeout": timeout = max(1, value)
            case "--logins-in-flight": loginsInFlight = max(1, value)
            case "--ready-timeout": readyTimeout = value
            default: throw UsageError(flag)
            }
        }
        if readyTimeout == 0 { readyTimeout = 30 + subscribers / 100 }
        if port == 0 { throw UsageError("--port") }
        if pid == 0 { throw UsageError("--pid") }
    }
}

struct UsageError: Error {
    let flag: String
    init(_ flag: String) { self.flag = flag }
}
