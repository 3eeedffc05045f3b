import RunLoopKit
import RunLoopNet

/// Logins: who may try, how many at once, and the per-user session limit.
extension IMServer {
    func authenticate(_ request: IMLoginRequest, for session: IMServerSession, verdict: @escaping (IMLoginVerdict) -> Void) {
        if let refusal = sessionLimitRefusal(for: request.user) { return verdict(refusal) }
        guard let authenticator else { return verdict(store.authenticate(request)) }
        authenticator(request) { [weak self] answer in
            // The limit again: another session of the same user may have logged in meanwhile.
            verdict(answer == .accepted ? (self?.sessionLimitRefusal(for: request.user) ?? answer) : answer)
        }
    }

    func sessionLimitRefusal(for user: String) -> IMLoginVerdict? {
        guard let limit = settings.maximumSessionsPerUser, (byUser[user]?.count ?? 0) >= limit else { return nil }
        return .refused(.tooManyConnections, reason: "\(user) already has \(limit) session\(limit == 1 ? "" : "s")")
    }
}
