import RunLoopIM
import RunLoopIMWebSocket
import RunLoopNet
import RunLoopWebSocket

extension ChatNode {
    /// Takes the limits of `settings` (``NodeSettings/applyLimits(to:)``) for what comes next:
    /// connections accepted, logins checked and sessions opened from now on; sessions open keep the
    /// limits they started with, and nothing open is closed to fit a lower limit. Loop thread.
    public func applyLimits(of settings: NodeSettings) {
        settings.applyLimits(to: &configuration)
        server.settings = Self.serverSettings(for: configuration)
        web?.webSocket.listener.maximumConnections = configuration.maximumConnections
    }
}
