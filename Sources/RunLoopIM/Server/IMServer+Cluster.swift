public import RunLoopIMCore

/// Asks whether one more session of `user` may open, at most `limit` per user across the cluster
/// (`nil`: no limit, the count still kept), and answers `true` (admitted: it counts from now on) or
/// `false` (refused: the user has `limit` already) exactly once, on the server loop's thread, at once
/// or later. Installed as ``IMServer/sessionAdmission``.
public typealias IMSessionAdmission = (_ user: String, _ limit: Int?, _ answer: @escaping (Bool) -> Void) -> Void

/// What a server needs to be one node of a cluster that shares its store: messages other nodes
/// stored, inboxes that may have changed unseen, and users online elsewhere. A cluster (RunLoopChatCluster's
/// `ChatCluster`) calls these on the loop's thread, as it learns from its bus.
///
/// Logins: with ``sessionAdmission`` set, a login that passed every check of this server (its
/// password, this node's own per-user limit) waits for the cluster's answer before it goes online; a
/// refusal is the LOGIN_ACK `tooManyConnections` the local limit gives. Every admitted session is
/// reported to ``onAdmittedSessionEnd`` once, when it ends — or at once when it ended while it waited.
extension IMServer {
    /// Delivers `message`, stored by another node, to this server's sessions of `users` (the sender
    /// and users without a session here are passed over): live when a session has caught up and the
    /// message follows on in its conversation, else from the inbox in order (``DeliveryWindow``). The
    /// sender's own sessions here learn of it too, so it is no gap in their conversation.
    public func deliverStored(_ message: IMMessage, to users: [String]) {
        for own in byUser[message.from] ?? [] { own.ownMessageStored(message) }
        // Encoded once, when the first session online needs it: a room's members share one body, and
        // each session stamps only its own serial on it.
        var deliver: IMFrame?
        for user in users where user != message.from {
            for session in byUser[user] ?? [] {
                let frame = deliver ?? IMFrame(command: .deliver, serial: 0, message: message)
                deliver = frame
                session.deliverLive(message, as: frame)
            }
        }
    }

    /// Makes the sessions of `users` (`nil`: every logged-in session) read their inboxes again, as if
    /// behind: the store may hold messages no node told this one of (the bus lost them). A read in
    /// flight does not count as caught up: its snapshot may predate them.
    public func rereadInboxes(of users: [String]? = nil) {
        let sessions = users.map { $0.flatMap { byUser[$0] ?? [] } } ?? byUser.values.flatMap { $0 }
        for session in sessions { session.rereadInbox() }
    }

    /// The cluster says `user` is online (a session on any node) or offline (none anywhere). A user
    /// is announced online while they have a session here or the cluster says so, in the same PRESENCE
    /// notices and snapshots as local changes, once per change at the end of the loop pass.
    public func setClusterPresence(_ user: String, online: Bool) {
        let changed = online ? clusterOnline.insert(user).inserted : clusterOnline.remove(user) != nil
        if changed { presenceChanged(user) }
    }

    /// The users the cluster last said are online (``setClusterPresence(_:online:)``).
    public var clusterOnlineUsers: Set<String> { clusterOnline }
}
