public import RunLoopIM
public import RunLoopIMCore
import RunLoopKit
import SwiftProtobuf

/// The chat protocol for an application: rooms, history, presence and messages as typed values, over
/// an ``IMClient`` that keeps the connection (login, heartbeat, reconnects, acknowledged delivery).
///
/// ```swift
/// let chat = ChatClient(connection: IMClient(configuration: configuration, connector: connector))
/// chat.onMessage = { _, message in print("\(message.recipient) \(message.from): \(message.text)") }
/// chat.onStateChange = { chat, state in
///     if state == .online { chat.join(room: "lobby") { print($0) } }
/// }
/// chat.start()
/// ```
///
/// Every request ends in exactly one completion: the typed answer, ``ChatRequestError/refused(_:)``
/// (the server said no), ``ChatRequestError/lost(_:)`` (the connection ended before the answer), or
/// ``ChatRequestError/notOnline`` / ``ChatRequestError/closed`` (not sent: requests need the client
/// online and are not queued; messages are, see ``send(_:to:id:)``).
///
/// Callbacks and completions never run inside a call the owner makes — a request refused at once
/// completes on the loop's next pass — so the owner may call the client from any of them.
///
/// Threads: confined to its connection's loop thread, like ``IMClient``: create it, call it and
/// receive every callback there. Lifetime: the owner keeps it; a client released early drops its
/// callbacks and the completions still open (the connection runs on until closed).
public final class ChatClient {
    /// The connection underneath. The chat client sets its `onMessage`, `onDelivery`, `onResponse`,
    /// `onNotice` and `onStateChange`; its other callbacks (`onDisconnect`, `onRateLimited`) and
    /// calls (`follow`, `networkChanged`) are the owner's.
    public let connection: IMClient

    /// A message for this user (direct or from a room), once per (sender, id).
    public var onMessage: ((ChatClient, ChatMessage) -> Void)?
    /// One of this user's own messages moved on, by the id ``send(_:to:id:)`` returned.
    public var onDelivery: ((ChatClient, String, IMDeliveryState) -> Void)?
    /// A user came online or went offline (a snapshot of those online follows each login).
    // Read once per notice, a crowd's logins bring a client one per contact: unchecked, the runtime's
    // exclusivity check cost more than the read (loop thread only; the closure is read out before it runs).
    @exclusivity(unchecked) public var onPresence: ((ChatClient, PresenceChange) -> Void)?
    /// A member joined or left a room this user is in, with the room's member count after it.
    public var onMembership: ((ChatClient, MembershipChange) -> Void)?
    /// The connection's state changed.
    public var onStateChange: ((ChatClient, IMConnectionState) -> Void)?
    /// A room's last known member count crossed the server's large-room size (``largeRoomMembers``),
    /// or a login announced a size that changes a room's verdict: presence of its members is unknown
    /// while it is large. Reported before the answer or notice that brought the count (its
    /// completion, ``onMembership``), so those can already ask ``isLarge(room:)``. A room first heard
    /// of is reported only when it is large.
    public var onLargeRoomChange: ((ChatClient, LargeRoomChange) -> Void)?

    /// The last count heard of each room and the large-room size in force.
    private var largeRooms = LargeRooms()

    /// Requests sent and not answered yet, by serial: each is removed by its one answer or loss.
    private var pending: [UInt32: (Result<IMFrame, ChatRequestError>) -> Void] = [:]
    /// Completions of requests refused inside the owner's call wait here for the loop's next pass.
    private let callbacks: CallbackDeferral

    /// Takes `connection` over (see ``connection``); it may be started already. Loop thread.
    public init(connection: IMClient) {
        precondition(connection.loop.isCurrentThread, "ChatClient must be created on its connection's loop thread")
        self.connection = connection
        callbacks = CallbackDeferral(loop: connection.loop, modes: connection.modes, label: "chat.client request refused")
        connection.onMessage = { [weak self] _, message in
            guard let self else { return }
            self.onMessage?(self, message)
        }
        connection.onDelivery = { [weak self] _, id, state in
            guard let self else { return }
            self.onDelivery?(self, id, state)
        }
        connection.onStateChange = { [weak self] _, state in
            guard let self else { return }
            if state == .online { self.adoptLargeRoomSize() }
            self.onStateChange?(self, state)
        }
        connection.onResponse = { [weak self] _, serial, result in self?.answered(serial, result) }
        // Once per notice frame: the weak reference as a value (`WeakReference`), not a checked box.
        connection.onNotice = { [owner = WeakReference(self)] _, frame in owner.object?.noticed(frame) }
        // Every notice comes through here, and a batch is read as its notices: the server may send
        // a login's presence in a few frames instead of one per contact. A connection logged in
        // already gets them from its next login.
        connection.readsPresenceBatches = true
        // A connection online already announced its size at a login this client did not see.
        _ = largeRooms.setSize(connection.largeRoomMembers)
    }

    /// Where the connection is.
    public var state: IMConnectionState { connection.state }

    /// The server's large-room size, as the last login announced it (``IMClient/largeRoomMembers``):
    /// a room with more members is large. `nil`: not logged in yet, or the server has no such rule.
    public var largeRoomMembers: Int? { largeRooms.size }

    /// The member count last heard of `room` — from a JOIN or LEAVE answer, the room list or a
    /// MEMBERSHIP notice —, `nil` if none yet.
    public func lastKnownMembers(of room: String) -> Int? { largeRooms.lastHeard(of: room)?.members }

    /// Whether `room`'s last known count is over the server's large-room size: the server sends no
    /// presence through it and no MEMBERSHIP for it, so a client shows its members' presence as
    /// unknown (docs/PROTOCOL.md §8). `false` for a room with no known count or without a size.
    public func isLarge(room: String) -> Bool { largeRooms.isLarge(room) }

    /// Connects and logs in; reconnects by itself until ``close()``. Idempotent.
    public func start() { connection.start() }

    /// Ends the client for good (settling own messages with the server first when online). A request
    /// still open gets its answer if it comes before the connection ends, ``ChatRequestError/lost(_:)``
    /// otherwise.
    public func close() { connection.close() }

    /// Queues `text` for `recipient` (sent at once when online, otherwise after the next login);
    /// ``onDelivery`` follows it to stored or failed, never inside this call.
    /// - Parameter id: the message's id (to resubmit one of an earlier run); default a new UUID.
    /// - Returns: the message's id.
    /// - Throws: the reasons of ``IMClient/send(_:to:id:)``: too large, id too long, outbox full, closed.
    @discardableResult
    public func send(_ text: String, to recipient: Recipient, id: String? = nil) throws(IMClientError) -> String {
        try connection.send(text, to: recipient, id: id)
    }

    /// Enters `room`, creating it if new; the answer has its member count after the join. Refusals:
    /// `badRequest` (not a valid room name), `tooManyRooms`.
    public func join(room: String, completion: @escaping (Result<Room, ChatRequestError>) -> Void) {
        var request = IMRoomRequest()
        request.room = room
        ask(.join, request) { [weak self] answer in
            completion(answer.flatMap { Self.decode($0, IMRoomInfo.self).map(Room.init) }.map { self?.heard($0) ?? $0 })
        }
    }

    /// Leaves `room`; the answer has its member count after. Refusal: `notAMember`.
    public func leave(room: String, completion: @escaping (Result<Room, ChatRequestError>) -> Void) {
        var request = IMRoomRequest()
        request.room = room
        ask(.leave, request) { [weak self] answer in
            completion(answer.flatMap { Self.decode($0, IMRoomInfo.self).map(Room.init) }.map { self?.heard($0) ?? $0 })
        }
    }

    /// Every room on the server, sorted by the bytes of their names, each with whether this user is
    /// in it. The server sends the list a page at a time; this asks for page after page and completes
    /// once, with the whole list: callers want the list, and a list cut short by a lost connection
    /// would look complete. A node's rooms fit in memory (its store holds them all).
    public func rooms(completion: @escaping (Result<[Room], ChatRequestError>) -> Void) {
        rooms(after: "", collected: [], completion: completion)
    }

    /// A page of the conversation with a user or in a room (this user must be a member), newest
    /// first: at most `limit` messages (0: the server's default) whose `seq` is below `before`
    /// (0: from the newest). The next older page: `before: page.nextBefore`.
    /// Refusals: `notAMember`, `badRequest`.
    public func history(
        with conversation: Recipient, before: UInt64 = 0, limit: Int = 0,
        completion: @escaping (Result<HistoryPage, ChatRequestError>) -> Void
    ) {
        let request = conversation.historyRequest(before: before, limit: limit)
        ask(.history, request) { completion($0.flatMap { Self.decode($0, IMHistoryPage.self).map(HistoryPage.init) }) }
    }

    // MARK: Requests

    private func rooms(after: String, collected: [Room], completion: @escaping (Result<[Room], ChatRequestError>) -> Void) {
        var request = IMListRoomsRequest()
        request.after = after
        ask(.listRooms, request) { [weak self] answer in
            let list: IMRoomList
            switch answer.flatMap({ Self.decode($0, IMRoomList.self) }) {
            case .failure(let error): return completion(.failure(error))
            case .success(let page): list = page
            }
            let page = list.rooms.map(Room.init)
            for room in page { self?.heard(room) }
            let rooms = collected + page
            guard list.moreAvailable else { return completion(.success(rooms)) }
            guard let last = list.rooms.last?.name, roomNameOrder(after, last) else {
                return completion(.failure(.unreadableAnswer("the room list does not advance past \"\(after)\"")))
            }
            guard let self else { return }
            self.rooms(after: last, collected: rooms, completion: completion)
        }
    }

    /// Sends a request and files its completion under its serial; a request that cannot be sent
    /// completes on the loop's next pass, never inside the owner's call.
    private func ask(
        _ command: IMCommand, _ body: some SwiftProtobuf.Message,
        completion: @escaping (Result<IMFrame, ChatRequestError>) -> Void
    ) {
        do {
            pending[try connection.request(command, message: body)] = completion
        } catch {
            let failure = ChatRequestError(error)
            callbacks.runLater { completion(.failure(failure)) }
        }
    }

    private func answered(_ serial: UInt32, _ result: Result<IMFrame, IMDisconnectReason>) {
        guard let completion = pending.removeValue(forKey: serial) else { return }
        switch result {
        case .failure(let reason):
            completion(.failure(.lost(reason)))
        case .success(let frame) where frame.header.code == 0:
            completion(.success(frame))
        case .success(let frame):
            guard let code = frame.code else {
                return completion(.failure(.unreadableAnswer("unknown status code \(frame.header.code)")))
            }
            completion(.failure(.refused(code)))
        }
    }

    /// A notice the client cannot read is ignored, as one it does not know: notices are states, and
    /// the next one (or the next request) brings what it said.
    private func noticed(_ frame: IMFrame) {
        switch frame.command {
        case .presence:
            guard let notice = try? frame.presenceNotice() else { return }
            onPresence?(self, PresenceChange(user: notice.user, isOnline: notice.online))
        case .presenceBatch:
            // One callback per notice, in order, as single frames would give them: owners never see
            // the batch.
            guard let notices = try? frame.presenceBatchNotices() else { return }
            for notice in notices { onPresence?(self, PresenceChange(user: notice.user, isOnline: notice.online)) }
        case .membership:
            guard let notice = try? frame.decode(IMMembershipNotice.self) else { return }
            let change = MembershipChange(notice)
            // Sent to the room's members only: this user is one.
            heard(Room(name: change.room, members: change.members, isMember: true))
            onMembership?(self, change)
        default:
            break
        }
    }

    // MARK: Large rooms

    /// Notes a room's count as an answer or notice brought it, reporting a change of its verdict.
    @discardableResult
    private func heard(_ room: Room) -> Room {
        if largeRooms.note(room) { onLargeRoomChange?(self, LargeRoomChange(room: room, isLarge: isLarge(room: room.name))) }
        return room
    }

    /// A login announced the server's size (another node's, or a changed setting): the rooms it
    /// judges otherwise than the last one are reported, as last heard of.
    private func adoptLargeRoomSize() {
        for room in largeRooms.setSize(connection.largeRoomMembers) {
            onLargeRoomChange?(self, LargeRoomChange(room: room, isLarge: isLarge(room: room.name)))
        }
    }

    private static func decode<M: SwiftProtobuf.Message>(_ frame: IMFrame, _ type: M.Type) -> Result<M, ChatRequestError> {
        do {
            return .success(try frame.decode(type))
        } catch {
            return .failure(.unreadableAnswer("\(error)"))
        }
    }
}
