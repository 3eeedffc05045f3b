public import RunLoopIM

/// Starting and closing async clients in tests: each call returns once the state it waits for came.
extension AsyncIMClient {
    /// Starts each client and returns once all are online.
    public static func startAll(_ clients: AsyncIMClient...) async throws {
        for client in clients { await client.start() }
        for client in clients { try await client.waitUntilOnline() }
    }

    /// Closes each client and returns once each is closed for good (its state stream ended).
    public static func closeAll(_ clients: AsyncIMClient...) async {
        for client in clients {
            let states = client.states
            await client.close()
            for await _ in states {}
        }
    }
}
