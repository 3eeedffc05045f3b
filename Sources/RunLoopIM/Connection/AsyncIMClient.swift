public import RunLoopIMCore
public import RunLoopKit

/// An ``IMClient`` for Swift concurrency: an actor on the client's loop, with messages, delivery
/// updates and state changes as `AsyncStream`s, a `send` that returns when the server acknowledged
/// the message, and requests as `async throws` calls.
///
/// ```swift
/// let client = AsyncIMClient(configuration: configuration, loop: loop, connector: TCPFrameLink.connector(host: "127.0.0.1", port: 7100))
/// let messages = client.messages
/// await client.start()
/// try await client.waitUntilOnline()
/// let receipt = try await client.send("hello", to: .room("lobby"))
/// for await message in messages { print("\(message.from): \(message.text)") }
/// ```
///
/// Isolation: the actor's executor is the client's loop (``unownedExecutor``), so its methods run on
/// the loop's thread, where the wrapped ``IMClient`` lives, and the client's callbacks feed the
/// streams and waiting calls on that same thread with no hop. Any task on any thread may call it with
/// `await`; a task already on the loop (``RunLoop/run(_:untilComplete:)``, an actor pinned to the
/// loop) calls it without leaving the thread. The loop must keep running a common mode (its jobs run
/// only there, see ``RunLoop``) or calls wait.
///
/// Streams: each read of ``messages``, ``deliveries`` or ``states`` is a new subscription that sees
/// what happens after it, in order; any number may be open. Each has a bounded buffer
/// (``IMStreamBuffers``): a subscriber that does not keep up loses the newest messages (counted in
/// ``droppedEvents``), never slows the connection. Every stream ends when the client is closed for
/// good, the state stream after its `.closed` state.
///
/// Cancellation: a cancelled `send` or `request` throws `CancellationError` at once; what went to the
/// server stays there (the protocol cannot take back a message or a request): a message is still
/// stored and delivered, a request still answered, and the answer dropped.
///
/// Lifetime: the connection runs from ``start()`` until ``close()``, whether or not the actor is
/// still referenced; close it when done.
public actor AsyncIMClient {
    /// The loop the client and this actor live on.
    public nonisolated let loop: RunLoop
    // Loop-confined rather than actor-isolated: the wrapped client is safe on its loop's thread (it
    // checks that at every call), not by ownership, so the caller may keep its reference; the actor's
    // code and the client's callbacks, the only users of these, all run on that thread.
    private nonisolated(unsafe) let client: IMClient
    private nonisolated(unsafe) let events: IMClientEvents
    private nonisolated let streams: IMClientStreams

    /// Runs the actor's code on the client's loop.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    /// False when another object (RunLoopChat's `ChatClient`) takes the connection's answers.
    private nonisolated let answersRequests: Bool

    /// Takes `client` over: sets its `onMessage`, `onDelivery`, `onStateChange` and `onResponse` (its
    /// other callbacks stay the caller's). It may be started already. On the client's loop thread.
    ///
    /// A static function, not an initializer: Swift treats an actor's initializer as isolated to the
    /// new actor and would have the caller give up `client` (and whatever holds it); the client is safe
    /// on its loop's thread instead, which it checks at every call.
    public static func wrapping(_ client: IMClient, buffers: IMStreamBuffers = IMStreamBuffers()) -> AsyncIMClient {
        AsyncIMClient(LoopBound(client, loop: client.loop), events: reportingAll(of: client, buffers: buffers))
    }

    /// A new ``IMClient`` on `loop` (not started). On `loop`'s thread, like the client's own initializer.
    public init(
        configuration: IMClientConfiguration, loop: RunLoop = .current, connector: @escaping IMConnector,
        buffers: IMStreamBuffers = IMStreamBuffers()
    ) {
        let client = IMClient(configuration: configuration, loop: loop, connector: connector)
        self.init(LoopBound(client, loop: loop), events: Self.reportingAll(of: client, buffers: buffers))
    }

    /// The connection of a client that keeps the callbacks (RunLoopChat's `AsyncChatClient`) and
    /// passes the reports to `events`; ``request(_:body:)`` is not for use then.
    package static func connection(of client: IMClient, events: IMClientEvents) -> AsyncIMClient {
        AsyncIMClient(LoopBound(client, loop: client.loop), events: LoopBound(events, loop: client.loop), answersRequests: false)
    }

    private init(_ client: LoopBound<IMClient>, events: LoopBound<IMClientEvents>, answersRequests: Bool = true) {
        precondition(client.loop.isCurrentThread, "AsyncIMClient must be created on its client's loop thread")
        loop = client.loop
        self.client = client.value
        self.events = events.value
        self.answersRequests = answersRequests
        streams = events.value.streams
    }

    /// Events fed by every report of `client`.
    private static func reportingAll(of client: IMClient, buffers: IMStreamBuffers) -> LoopBound<IMClientEvents> {
        let events = IMClientEvents(buffers: buffers, state: client.state)
        client.onMessage = { _, message in events.received(message) }
        client.onDelivery = { _, id, state in events.deliveryChanged(id, state) }
        client.onStateChange = { _, state in events.stateChanged(state) }
        client.onResponse = { _, serial, result in events.answered(serial, result) }
        return LoopBound(events, loop: client.loop)
    }

    /// Messages for this user from now on, once per (sender, id), in arrival order.
    public nonisolated var messages: AsyncStream<IMMessage> { streams.messages.subscribe() }
    /// This client's own messages moving on (queued → sent → stored, or failed) from now on.
    public nonisolated var deliveries: AsyncStream<IMDeliveryUpdate> { streams.deliveries.subscribe() }
    /// The connection's state now, then each change.
    public nonisolated var states: AsyncStream<IMConnectionState> { streams.states.subscribe() }
    /// Messages and delivery updates that subscribers' full buffers could not take.
    public nonisolated var droppedEvents: Int { streams.messages.dropped + streams.deliveries.dropped }

    /// Where the connection is.
    public var state: IMConnectionState { client.state }

    /// Connects and logs in; reconnects by itself until ``close()``. Idempotent.
    public func start() { client.start() }

    /// Ends the client for good (see ``IMClient/close()``); the streams end once it is closed.
    public func close() { client.close() }

    /// Returns once the client is online (at once if it is).
    /// - Throws: ``IMClientClosedError`` when it closes for good first; `CancellationError`.
    public nonisolated func waitUntilOnline() async throws { try await streams.waitUntilOnline() }

    /// Queues `text` for `recipient` (sent when online, see ``IMClient/send(_:to:id:)``) and returns
    /// once the server stored it.
    /// - Parameter id: the message's id (to resubmit one of an earlier run); default a new UUID.
    /// - Throws: ``IMClientError`` when the client does not take the message (too large, outbox full,
    ///   closed, …: nothing was sent); ``IMSendFailure`` when the message failed (refused, not
    ///   acknowledged, the client closed); `CancellationError` when the task is cancelled first — the
    ///   message stays queued and is delivered all the same (``deliveries`` follows it).
    @discardableResult
    public func send(_ text: String, to recipient: IMRecipient, id: String? = nil) async throws -> IMSendReceipt {
        let storage = events.awaitStorage(of: try client.send(text, to: recipient, id: id))
        return try await storage.value()
    }

    /// Sends an application request (see ``IMClient/request(_:body:)``) and returns the server's answer.
    /// - Throws: ``IMClientError`` (`notOnline`, `closed`: not sent); ``IMDisconnectReason`` when the
    ///   connection ended before the answer (the server may have acted on it); `CancellationError`
    ///   when the task is cancelled first — the request is out and the server acts on it, its answer
    ///   is dropped.
    /// - Precondition: not the `connection` of a RunLoopChat `AsyncChatClient` (its answers go to the chat client).
    public func request(_ command: IMCommand, body: [UInt8]) async throws -> IMFrame {
        precondition(answersRequests, "AsyncIMClient.request on the connection of a chat client: use the chat client's requests")
        let answer = events.awaitAnswer(to: try client.request(command, body: body))
        return try await answer.value()
    }
}
