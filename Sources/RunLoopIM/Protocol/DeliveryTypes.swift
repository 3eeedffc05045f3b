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

/// Where one of the client's own messages is. Every message ends in exactly one of ``delivered(seq:)``
/// or ``failed(_:)``, reported once.
public enum IMDeliveryState: Equatable, Sendable, CustomStringConvertible {
    /// Waiting for a connection (or for its turn behind earlier messages).
    case queued
    /// Written to the connection, waiting for the server's acknowledgement; `attempt` counts sends.
    case sent(attempt: Int)
    /// The server stored it under `seq` and has taken over delivering it to every recipient (at once
    /// to those online, at their next login to the others). Final.
    case delivered(seq: UInt64)
    /// It will never be delivered. Final.
    case failed(IMSendFailure)

    public var isFinal: Bool {
        switch self {
        case .delivered, .failed: return true
        case .queued, .sent: return false
        }
    }

    public var description: String {
        switch self {
        case .queued: return "queued"
        case .sent(let attempt): return attempt == 1 ? "sent" : "sent (attempt \(attempt))"
        case .delivered(let seq): return "delivered (seq \(seq))"
        case .failed(let failure): return "failed: \(failure)"
        }
    }
}

/// Why a message failed.
public enum IMSendFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// The server refused it (unknown recipient, malformed, …); it stored nothing.
    case refused(IMStatusCode)
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

    public var description: String {
        switch self {
        case .outboxFull(let limit): return "outbox full (\(limit) unsettled messages)"
        case .closed: return "client is closed"
        case .duplicateID(let id): return "message id \(id) is already pending"
        case .notOnline: return "not connected"
        }
    }
}
