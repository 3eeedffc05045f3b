public import RunLoopIM
public import RunLoopIMCore
public import RunLoopKit

/// A ``ChatClient`` for Swift concurrency: an actor on the client's loop with the chat's requests
/// (`join`, `leave`, `rooms`, `history`) as `async throws` calls, and presence, room membership and
/// large-room changes as `AsyncStream`s; the connection underneath — messages, delivery updates, state changes, `send`, `start`, `close` —
/// is ``connection``, an `AsyncIMClient` on the same loop.
///
/// ```swift
/// let chat = AsyncChatClient(configuration: configuration, loop: loop, connector: TCPFrameLink.connector(host: "127.0.0.1", port: 7100))
/// let messages = chat.connection.messages
/// await chat.connection.start()
/// try await chat.connection.waitUntilOnline()
/// _ = try await chat.join(room: "lobby")
/// for await message in messages where message.from != "bot" {
///     try await chat.connection.send("echo: \(message.text)", to: message.recipient)
/// }
/// ```
///
/// Isolation: the actor's executor is the client's loop (``unownedExecutor``): its methods run on the
/// loop's thread, where the wrapped ``ChatClient`` lives, and any task on any thread calls them with
/// `await`. The loop must keep running a common mode, where its jobs run.
///
/// Streams: as `AsyncIMClient`'s (a subscription per read, in order, bounded by ``IMStreamBuffers``;
/// presence, membership and large-room changes each have the messages' bound): a subscriber that does not keep up loses the newest
/// events, never slows the connection. Every stream ends when the client is closed for good.
///
/// Cancellation: a cancelled request throws `CancellationError` at once. The request is out and the
/// server carries it out all the same (a JOIN still joins); its answer is dropped — ``rooms()``
/// still reads the list to its end, then drops it.
///
/// Lifetime: the connection runs from `connection.start()` until `connection.close()`; close it when done.
public actor AsyncChatClient {
    /// The loop the client and this actor live on.
    public nonisolated let loop: RunLoop
    /// Messages (direct and from rooms), delivery updates, state changes, `send`, `start`, `close`.
    /// Its `request` is not for use: the answers go to this chat client.
    public nonisolated let connection: AsyncIMClient
    // Loop-confined rather than actor-isolated, as AsyncIMClient's client: the chat client is safe on
    // its loop's thread (it checks), where this actor's code and its callbacks run.
    private nonisolated(unsafe) let chat: ChatClient
    private nonisolated let presenceChanges: AsyncBroadcast<PresenceChange>
    private nonisolated let membershipChanges: AsyncBroadcast<MembershipChange>
    private nonisolated let largeRoomVerdicts: AsyncBroadcast<LargeRoomChange>

    /// Runs the actor's code on the client's loop.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    /// Takes `chat` over: sets its callbacks (the connection's `onDisconnect` and `onRateLimited` stay
    /// the caller's). It may be started already. On the client's loop thread. A static function for
    /// the reason ``AsyncIMClient/wrapping(_:buffers:)`` is.
    public static func wrapping(_ chat: ChatClient, buffers: IMStreamBuffers = IMStreamBuffers()) -> AsyncChatClient {
        AsyncChatClient(LoopBound(chat, loop: chat.connection.loop), buffers: buffers)
    }

    /// A new chat client on a new ``IMClient`` on `loop` (not started). On `loop`'s thread.
    public init(
        configuration: IMClientConfiguration, loop: RunLoop = .current, connector: @escaping IMConnector,
        buffers: IMStreamBuffers = IMStreamBuffers()
    ) {
        let chat = ChatClient(connection: IMClient(configuration: configuration, loop: loop, connector: connector))
        self.init(LoopBound(chat, loop: loop), buffers: buffers)
    }

    private init(_ bound: LoopBound<ChatClient>, buffers: IMStreamBuffers) {
        let chat = bound.value
        let events = IMClientEvents(buffers: buffers, state: chat.state)
        let presenceChanges = AsyncBroadcast<PresenceChange>(buffering: .bufferingOldest(buffers.messages))
        let membershipChanges = AsyncBroadcast<MembershipChange>(buffering: .bufferingOldest(buffers.messages))
        let largeRoomVerdicts = AsyncBroadcast<LargeRoomChange>(buffering: .bufferingOldest(buffers.messages))
        chat.onMessage = { _, message in events.received(message) }
        chat.onDelivery = { _, id, state in events.deliveryChanged(id, state) }
        chat.onPresence = { _, change in presenceChanges.yield(change) }
        chat.onMembership = { _, change in membershipChanges.yield(change) }
        chat.onLargeRoomChange = { _, change in largeRoomVerdicts.yield(change) }
        chat.onStateChange = { _, state in
            events.stateChanged(state)
            guard case .closed = state else { return }
            presenceChanges.finish()
            membershipChanges.finish()
            largeRoomVerdicts.finish()
        }
        connection = AsyncIMClient.connection(of: chat.connection, events: events)
        loop = bound.loop
        self.chat = chat
        self.presenceChanges = presenceChanges
        self.membershipChanges = membershipChanges
        self.largeRoomVerdicts = largeRoomVerdicts
    }

    /// Users coming online or going offline from now on (a snapshot of those online follows each login).
    public nonisolated var presence: AsyncStream<PresenceChange> { presenceChanges.subscribe() }
    /// Presence changes that subscribers' full buffers could not take (the connection's own streams
    /// count theirs in `connection.droppedEvents`).
    public nonisolated var droppedPresenceChanges: Int { presenceChanges.dropped }

    /// Members joining or leaving the rooms this user is in, from now on, with each room's count after
    /// the change (see ``ChatClient/onMembership``; a large room sends none).
    public nonisolated var memberships: AsyncStream<MembershipChange> { membershipChanges.subscribe() }
    /// Rooms whose last known count crossed the server's large-room size, either way, from now on
    /// (see ``ChatClient/onLargeRoomChange``): while a room is large its members' presence is unknown.
    /// A change is yielded before the answer or notice that brought its count is returned or yielded.
    public nonisolated var largeRoomChanges: AsyncStream<LargeRoomChange> { largeRoomVerdicts.subscribe() }
    /// Membership and large-room changes that subscribers' full buffers could not take.
    public nonisolated var droppedRoomChanges: Int { membershipChanges.dropped + largeRoomVerdicts.dropped }

    /// The server's large-room size as the last login announced it; `nil` before a login or when the
    /// server has no such rule (see ``ChatClient/largeRoomMembers``).
    public var largeRoomMembers: Int? { chat.largeRoomMembers }

    /// Whether `room`'s last known count is over the server's large-room size, so its members'
    /// presence is unknown (see ``ChatClient/isLarge(room:)``).
    public func isLarge(room: String) -> Bool { chat.isLarge(room: room) }

    /// The member count last heard of `room` (an answer, the room list or a notice), `nil` if none.
    public func lastKnownMembers(of room: String) -> Int? { chat.lastKnownMembers(of: room) }

    /// Enters `room`, creating it if new (see ``ChatClient/join(room:completion:)``).
    /// - Throws: ``ChatRequestError``; `CancellationError` (the server joins all the same).
    public func join(room: String) async throws -> Room {
        try await answer { chat.join(room: room, completion: $0) }
    }

    /// Leaves `room` (see ``ChatClient/leave(room:completion:)``).
    /// - Throws: ``ChatRequestError``; `CancellationError` (the server leaves all the same).
    public func leave(room: String) async throws -> Room {
        try await answer { chat.leave(room: room, completion: $0) }
    }

    /// Every room on the server, with whether this user is in it (see ``ChatClient/rooms(completion:)``).
    /// - Throws: ``ChatRequestError``; `CancellationError`.
    public func rooms() async throws -> [Room] {
        try await answer { chat.rooms(completion: $0) }
    }

    /// A page of a conversation, newest first (see ``ChatClient/history(with:before:limit:completion:)``).
    /// - Throws: ``ChatRequestError``; `CancellationError`.
    public func history(with conversation: Recipient, before: UInt64 = 0, limit: Int = 0) async throws -> HistoryPage {
        try await answer { chat.history(with: conversation, before: before, limit: limit, completion: $0) }
    }

    /// Makes a completion-handler request and awaits its one completion (or the task's cancellation).
    private func answer<Value: Sendable>(_ request: (@escaping (Result<Value, ChatRequestError>) -> Void) -> Void) async throws -> Value {
        let slot = AnswerSlot<Value>()
        request { slot.settle(with: $0.mapError { $0 }) }
        return try await slot.value()
    }
}
