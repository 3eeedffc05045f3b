import RunLoopIM
public import RunLoopIMCore

/// Why a ``ChatClient`` request ended without its answer.
public enum ChatRequestError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The server answered with this status: e.g. `tooManyRooms`, `badRequest` (a bad room name),
    /// `notAMember`.
    case refused(IMStatusCode)
    /// The request's connection ended before the answer came, for this reason. It was sent, so the
    /// server may have done it (a JOIN may have joined): ask again once online.
    case lost(IMDisconnectReason)
    /// Not sent: the client is not logged in now (requests are not queued).
    case notOnline
    /// Not sent: the client was closed for good.
    case closed
    /// The server answered with something this client cannot read (an unknown status code, a body
    /// that does not decode, a room list that does not advance).
    case unreadableAnswer(String)

    public var description: String {
        switch self {
        case .refused(let code): return "refused (\(code))"
        case .lost(let reason): return "no answer, the connection ended (\(reason))"
        case .notOnline: return IMClientError.notOnline.description
        case .closed: return IMClientError.closed.description
        case .unreadableAnswer(let why): return "unreadable answer (\(why))"
        }
    }
}
