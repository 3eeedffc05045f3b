public import RunLoopIMCore

/// One step of one of the client's own messages, as the delivery stream of ``AsyncIMClient`` (and
/// RunLoopChat's `AsyncChatClient`) reports it: the message's id and where it is now.
public struct IMDeliveryUpdate: Equatable, Sendable {
    /// The id `send` was given or made.
    public var id: String
    public var state: IMDeliveryState
}

/// What an acknowledged send returns: the server stored the message (SEND_ACK) and has taken over
/// delivering it.
public struct IMSendReceipt: Equatable, Sendable {
    /// The message's id.
    public var id: String
    /// The server's sequence number for it (``IMMessage/seq``).
    public var seq: UInt64
}

/// How many events each subscriber of an async client's streams may have waiting before newer ones
/// are dropped for it. Never unbounded: the connection acknowledges a message when it arrives, not
/// when a task reads it, so a subscriber that stopped reading would otherwise hold every message the
/// server sends.
public struct IMStreamBuffers: Equatable, Sendable {
    /// Messages waiting in each `messages` subscription: past this many the newest are dropped (the
    /// subscriber keeps what it has, in order; the server keeps them in the history).
    public var messages = 4096
    /// Delivery updates waiting in each `deliveries` subscription: past this many the newest are dropped.
    public var deliveries = 4096
    /// State changes waiting in each `states` subscription: past this many the oldest are dropped,
    /// so a slow reader still sees the latest state.
    public var states = 64

    public init() {}
}

/// Why ``AsyncIMClient/waitUntilOnline()`` gave up: the client closed for good first.
public struct IMClientClosedError: Error, Equatable, Sendable, CustomStringConvertible {
    public var reason: IMClosedReason

    public var description: String { "client closed: \(reason)" }
}
