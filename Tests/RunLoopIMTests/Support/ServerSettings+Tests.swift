import RunLoopIM
import RunLoopIMCore

extension IMServer.Settings {
    /// Settings for a test that logs in thousands of sessions from one address (or none) without
    /// retrying: the per-address login limits, which have their own tests (LoginFloodTests,
    /// LoginThrottleTests), would turn most of them away.
    static var withoutLoginLimits: IMServer.Settings {
        var settings = IMServer.Settings()
        settings.logins.unauthenticatedPerAddress = nil
        settings.logins.pendingChecksPerAddress = 100_000
        settings.logins.maximumQueuedChecks = 100_000
        settings.logins.maximumQueueWait = .seconds(3600)
        return settings
    }
}
