import RunLoopKit

@testable import RunLoopIMCore

extension IMServerSessionMachine {
    /// A machine logged in as "ann" at `now`, its LOGIN announcing `keepaliveSeconds`.
    static func loggedIn(at now: LoopInstant, announcing keepaliveSeconds: UInt32, settings: Settings = .init()) -> IMServerSessionMachine {
        var machine = IMServerSessionMachine(settings: settings, now: now)
        var login = IMLoginRequest()
        login.user = "ann"
        login.keepaliveSeconds = keepaliveSeconds
        _ = machine.frameReceived(IMFrame(command: .login, serial: 1, message: login), now: now)
        _ = machine.loginAccepted(user: "ann", sessionID: "s", serverTimeMilliseconds: 0, now: now)
        return machine
    }
}
