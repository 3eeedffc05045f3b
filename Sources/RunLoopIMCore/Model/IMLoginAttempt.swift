/// What a client's LOGIN asks for: the credentials and the client's promises, as the server's
/// ``IMServerStore`` or authenticator sees them (docs/PROTOCOL.md §4).
///
/// A value: it may cross threads (an authenticator may check it on another thread).
public struct IMLoginAttempt: Hashable, Sendable {
    public var user: String
    public var password: String
    /// The longest time, in seconds, the client promises to go without sending a frame; 0: the
    /// server's maximum.
    public var keepaliveSeconds: UInt32
    /// Free text for logs, e.g. "chat-node client 1.0".
    public var clientName: String
    /// Identifies one client program instance across its reconnects; empty: none. A login with the
    /// same user and instance replaces that instance's earlier session.
    public var clientInstance: String
    /// Log in to an account that exists, never make one: a deployment that makes accounts at first
    /// login answers an unknown name with ``IMLoginVerdict/accountUnknown`` instead.
    public var existingAccountOnly: Bool
    /// The client reads PRESENCE_BATCH frames (LOGIN's `presence_batches`): a server that sends them
    /// may carry this session's presence in batches, and says so in LOGIN_ACK.
    public var readsPresenceBatches: Bool

    public init(
        user: String, password: String, keepaliveSeconds: UInt32 = 0, clientName: String = "", clientInstance: String = "",
        existingAccountOnly: Bool = false, readsPresenceBatches: Bool = false
    ) {
        self.user = user
        self.password = password
        self.keepaliveSeconds = keepaliveSeconds
        self.clientName = clientName
        self.clientInstance = clientInstance
        self.existingAccountOnly = existingAccountOnly
        self.readsPresenceBatches = readsPresenceBatches
    }
}
