/// What a frame is: the header's `command` field. `docs/PROTOCOL.md` gives each one's body and who may
/// send it. Requests take odd numbers and their answers the next even number, so a reader can tell a
/// response from a request without a table.
public enum IMCommand: UInt16, Sendable, CaseIterable, CustomStringConvertible {
    /// Client → server ping. Empty body: the smallest frame.
    case heartbeat = 1
    /// Server → client pong, echoing the heartbeat's serial. Empty body.
    case heartbeatAck = 2
    /// Client → server: `LoginRequest`.
    case login = 3
    /// Server → client: `LoginResponse`; `code` 0 accepts, anything else refuses (then the server closes).
    case loginAck = 4
    /// Client → server: end the session; no reconnect follows. Empty body.
    case logout = 5
    /// Server → client: the logout is done; the server closes after it. Empty body.
    case logoutAck = 6
    /// Client → server: `ChatMessage` to send (its `id` made by the client).
    case send = 7
    /// Server → client: `SendAck`, the message stored under a server sequence (or refused: `code`).
    case sendAck = 8
    /// Server → client: `ChatMessage` for this user, with its `seq`.
    case deliver = 9
    /// Client → server: `DeliverAck`, these sequences reached the application; the server forgets them.
    case deliverAck = 10
    /// Client → server: `AbandonRequest`, give up on messages never acknowledged.
    case abandon = 11
    /// Server → client: `AbandonResponse`, for each id whether it had been accepted after all.
    case abandonAck = 12
    /// Server → client: `ErrorNotice`, said before the server closes a connection for a protocol or
    /// limit error (`code` says which).
    case error = 13
    /// Client → server: `RoomRequest`, enter a room (created if new).
    case join = 15
    /// Server → client: `RoomInfo` of the room joined.
    case joinAck = 16
    /// Client → server: `RoomRequest`, leave a room.
    case leave = 17
    /// Server → client: `RoomInfo` of the room left.
    case leaveAck = 18
    /// Client → server: list the rooms. Empty body.
    case listRooms = 19
    /// Server → client: `RoomList`.
    case roomList = 20
    /// Client → server: `HistoryRequest`, a page of a conversation.
    case history = 21
    /// Server → client: `HistoryPage`.
    case historyPage = 22
    /// Server → client: `PresenceNotice`, a user came online or went offline. No answer.
    case presence = 23
    /// Server → client: `MembershipNotice`, a member joined or left a room the user is in. No answer.
    case membership = 24
    /// Server → client: `PresenceBatch`, many PRESENCE notices in one frame, applied in their order.
    /// Sent only to a session whose login asked for them (LOGIN's `presence_batches`) and was told so
    /// (LOGIN_ACK's `presence_batches`). No answer.
    case presenceBatch = 25

    /// Answers and notices of the application layer (rooms, history, presence, membership): the protocol
    /// machines pass them through to the application.
    public var isApplicationReply: Bool {
        switch self {
        case .joinAck, .leaveAck, .roomList, .historyPage, .presence, .membership, .presenceBatch: return true
        default: return false
        }
    }

    /// Requests of the application layer a logged-in client may make.
    public var isApplicationRequest: Bool {
        switch self {
        case .join, .leave, .listRooms, .history: return true
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .heartbeat: return "HEARTBEAT"
        case .heartbeatAck: return "HEARTBEAT_ACK"
        case .login: return "LOGIN"
        case .loginAck: return "LOGIN_ACK"
        case .logout: return "LOGOUT"
        case .logoutAck: return "LOGOUT_ACK"
        case .send: return "SEND"
        case .sendAck: return "SEND_ACK"
        case .deliver: return "DELIVER"
        case .deliverAck: return "DELIVER_ACK"
        case .abandon: return "ABANDON"
        case .abandonAck: return "ABANDON_ACK"
        case .error: return "ERROR"
        case .join: return "JOIN"
        case .joinAck: return "JOIN_ACK"
        case .leave: return "LEAVE"
        case .leaveAck: return "LEAVE_ACK"
        case .listRooms: return "LIST_ROOMS"
        case .roomList: return "ROOM_LIST"
        case .history: return "HISTORY"
        case .historyPage: return "HISTORY_PAGE"
        case .presence: return "PRESENCE"
        case .membership: return "MEMBERSHIP"
        case .presenceBatch: return "PRESENCE_BATCH"
        }
    }
}

/// The header's `code` field: 0 is success; the rest say why a request was refused or a connection
/// is about to close.
public enum IMStatusCode: UInt32, Error, Sendable, CaseIterable, CustomStringConvertible {
    case ok = 0
    /// The body could not be decoded as the command's message, or a required field was empty.
    case badRequest = 1
    /// The header's version is not one the server speaks.
    case unsupportedVersion = 2
    /// The frame's body is longer than the receiver's limit.
    case frameTooLarge = 3
    /// Unknown user or wrong password.
    case authenticationFailed = 4
    /// A request other than LOGIN or HEARTBEAT before login.
    case notLoggedIn = 5
    /// LOGIN did not arrive in the time allowed after connecting.
    case loginTimeout = 6
    /// Too many connections for this user or for the server.
    case tooManyConnections = 7
    /// More messages per second than the server allows; `ErrorNotice.retry_after_ms` says when to retry.
    case rateLimited = 8
    /// The recipient does not exist.
    case unknownRecipient = 9
    /// The server is stopping.
    case shuttingDown = 10
    /// Nothing arrived from the client for 1.5 times the keepalive it announced.
    case keepaliveTimeout = 11
    /// The command number is not one the receiver knows.
    case unknownCommand = 12
    /// The server failed to store or route the request.
    case internalError = 13
    /// The request names a room the user is not in (HISTORY of a room, LEAVE).
    case notAMember = 14
    /// ERROR: a newer login of the same client instance (`LoginRequest.client_instance`) replaced
    /// this session. The client does not reconnect on this connection's account: its newer one lives.
    case sessionReplaced = 15
    /// JOIN_ACK: the user is already in as many rooms as the server allows.
    case tooManyRooms = 16
    /// ERROR: the client left the server's output unread past its limit; nothing it was owed is lost
    /// (undelivered messages stay in its inbox), and it may reconnect with backoff.
    case tooSlow = 17

    public var description: String {
        switch self {
        case .ok: return "ok"
        case .badRequest: return "bad request"
        case .unsupportedVersion: return "unsupported version"
        case .frameTooLarge: return "frame too large"
        case .authenticationFailed: return "authentication failed"
        case .notLoggedIn: return "not logged in"
        case .loginTimeout: return "login timeout"
        case .tooManyConnections: return "too many connections"
        case .rateLimited: return "rate limited"
        case .unknownRecipient: return "unknown recipient"
        case .shuttingDown: return "server shutting down"
        case .keepaliveTimeout: return "keepalive timeout"
        case .unknownCommand: return "unknown command"
        case .internalError: return "internal error"
        case .notAMember: return "not a member"
        case .sessionReplaced: return "session replaced"
        case .tooManyRooms: return "too many rooms"
        case .tooSlow: return "reader too slow"
        }
    }
}
