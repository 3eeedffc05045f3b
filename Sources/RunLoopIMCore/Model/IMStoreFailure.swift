/// Why a store call did not give an answer: what it was doing and why it failed. The server treats
/// every failure as passing (the database down, a commit whose outcome is unknown): a failed inbox
/// read ends nothing and is tried again, a failed SEND is answered `internalError` and the client
/// sends it again under the same id.
///
/// A value: it may cross threads.
public struct IMStoreFailure: Error, Hashable, Sendable, CustomStringConvertible {
    /// What the store was doing ("read the inbox of bob", "store m-1 from alice").
    public var operation: String
    /// What went wrong, in the engine's words.
    public var reason: String
    /// Whether trying again later may succeed (a lost connection); `false` for what will fail again
    /// the same way (a schema the node does not know).
    public var isTemporary: Bool

    public init(_ operation: String, reason: String, isTemporary: Bool = true) {
        self.operation = operation
        self.reason = reason
        self.isTemporary = isTemporary
    }

    public var description: String { "\(operation) failed\(isTemporary ? " (temporary)" : ""): \(reason)" }
}
