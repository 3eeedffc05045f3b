public import RunLoopIMCore

extension IMDisconnectReason {
    /// A login the node refused for now — `rateLimited` (say its login queue looked too long) or
    /// `tooManyConnections` — which the client retries by itself after the refusal's retry time: part of
    /// a crowd's login ramp, counted, not a failure.
    public var isLoginRefusedForNow: Bool {
        guard case .loginRefused(let code, _) = self else { return false }
        return [.rateLimited, .tooManyConnections].contains(code)
    }
}
