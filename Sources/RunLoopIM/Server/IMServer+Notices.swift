public import RunLoopIMCore

/// Notices of the application (the chat's MEMBERSHIP) for the sessions of some users.
extension IMServer {
    /// Writes `frames` — notices, serial 0, each encoded once by its maker — to every logged-in
    /// session here of `users` (users without one are passed over), like a room's DELIVER: a
    /// room of many members costs one frame and one write per session, never a store read each.
    /// A server shutting down writes nothing. Loop thread only.
    public func notify(_ frames: [IMFrame], toSessionsOf users: some Sequence<String>) {
        guard !isShuttingDown, !frames.isEmpty else { return }
        for user in users {
            for session in byUser[user] ?? [] { session.write(frames) }
        }
    }
}
