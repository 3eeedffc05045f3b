/// Who a message is for.
public enum IMRecipient: Hashable, Sendable, CustomStringConvertible {
    case user(String)
    case room(String)

    public var description: String {
        switch self {
        case .user(let name): return "@\(name)"
        case .room(let name): return "#\(name)"
        }
    }
}

/// Where one of the client's own messages is. Every message ends in exactly one of ``stored(seq:)``
/// or ``failed(_:)``, reported once.
public enum IMDeliveryState: Equatable, Sendable, CustomStringConvertible {
    /// Waiting for a connection (or for its turn behind earlier messages).
    case queued
    /// Written to the connection, waiting for the server's acknowledgement; `attempt` counts sends.
    case sent(attempt: Int)
    /// The server stored it under `seq` and has taken over delivering it to every recipient (at once
    /// to those online, at their next login to the others). Final.
    case stored(seq: UInt64)
    /// It will never be delivered. Final.
    case failed(IMSendFailure)

    public var isFinal: Bool {
        switch self {
        case .stored, .failed: return true
        case .queued, .sent: return false
        }
    }

    public var description: String {
        switch self {
        case .queued: return "queued"
        case .sent(let attempt): return attempt == 1 ? "sent" : "sent (attempt \(attempt))"
        case .stored(let seq): return "stored (seq \(seq))"
        case .failed(let failure): return "failed: \(failure)"
        }
    }
}

/// Why a message failed.
public enum IMSendFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// The server refused it (unknown recipient, malformed, …); it stored nothing.
    case refused(IMStatusCode)
    /// Its SEND body is `bytes` long, over the `limit` the server accepts (the limit the server
    /// announced at login, or its SEND_ACK `frameTooLarge`). It was not stored and is never sent again.
    case tooLarge(bytes: Int, limit: Int)
    /// No acknowledgement after the configured number of sends, and the server confirmed it had not
    /// stored it (it now refuses any late copy).
    case notAcknowledged(attempts: Int)
    /// The client was closed before the message was ever written to a connection.
    case clientClosed
    /// The client was closed while the message had been written but neither acknowledged nor settled
    /// with the server. The server may still have stored it: resubmit it under the same id later
    /// (``IMClient/send(_:to:id:)``) to learn which, since the server de-duplicates by id.
    case outcomeUnknown

    public var description: String {
        switch self {
        case .refused(let code): return "refused by the server (\(code))"
        case .tooLarge(let bytes, let limit): return "too large (\(bytes) bytes; the limit is \(limit) bytes)"
        case .notAcknowledged(let attempts): return "not acknowledged after \(attempts) attempts"
        case .clientClosed: return "client closed before sending"
        case .outcomeUnknown: return "client closed before the server answered"
        }
    }
}

/// Why a send was not accepted into the outbox.
public enum IMClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The outbox already holds `limit` unsettled messages.
    case outboxFull(limit: Int)
    /// The client was closed (by ``IMClient/close()``, a refused login or exhausted reconnects).
    case closed
    /// The id is already in use by an unsettled message of this client.
    case duplicateID(String)
    /// A request that needs the connection was made while it is not logged in.
    case notOnline
    /// The message's SEND body would be `bytes` long, over the `limit` the server accepts (announced
    /// at login; before that, the configured frame limit less the server's overhead).
    case messageTooLarge(bytes: Int, limit: Int)
    /// The message id is `bytes` UTF-8 bytes long, over ``IMClientConfiguration/maximumMessageIDBytes``.
    case messageIDTooLong(bytes: Int, limit: Int)

    public var description: String {
        switch self {
        case .outboxFull(let limit): return "outbox full (\(limit) unsettled messages)"
        case .closed: return "client is closed"
        case .duplicateID(let id): return "message id \(id) is already pending"
        case .notOnline: return "not connected"
        case .messageTooLarge(let bytes, let limit): return "message too large (\(bytes) bytes; the limit is \(limit) bytes)"
        case .messageIDTooLong(let bytes, let limit): return "message id too long (\(bytes) bytes; the limit is \(limit) bytes)"
        }
    }
}
