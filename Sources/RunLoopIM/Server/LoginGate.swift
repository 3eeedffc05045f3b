import RunLoopIMCore
import RunLoopKit
import RunLoopNet

/// One ``IMServer``'s login bookkeeping around its ``LoginThrottle``: which session waits on which
/// ticket, the connections still logging in, and the timers that end
/// failure delays. The decisions are the throttle's; acting on them is IMServer+Logins'.
///
/// Loop thread only, owned by its server.
final class LoginGate {
    /// A login between its LOGIN and its answer (and, after a wrong password, until its delay ends).
    struct Waiting {
        /// Held until the login is forgotten (an ended session is skipped where it is read): a weak
        /// reference would give every session a side table for life, 48 bytes (issue 22).
        let session: IMServerSession
        /// The session's peer, for the log even after the session is gone.
        let peer: SocketAddress?
        let request: IMLoginAttempt
        /// The (case-folded user, client instance) of a LOGIN that names an instance.
        let instance: InstanceKey?
        /// A newer LOGIN of the same instance arrived meanwhile: this one must not go online.
        var superseded = false
        /// The verdict, once the check ended and while its answer is held back.
        var verdict: IMLoginVerdict?
    }

    struct InstanceKey: Hashable {
        let user: String
        let instance: ClientInstanceID

        init(user: String, instance: ClientInstanceID) {
            self.user = user
            self.instance = instance
        }

        init(user: String, instance: String) {
            self.init(user: user, instance: ClientInstanceID(instance))
        }
    }

    enum Event: Equatable {
        /// Send the held-back answer.
        case answer(LoginThrottle.Ticket)
        /// The failure delay is over: the address's place is free.
        case release(LoginThrottle.Ticket)
    }

    var throttle: LoginThrottle
    var waiting: [LoginThrottle.Ticket: Waiting] = [:]
    var ticketOfSession: [ObjectIdentifier: LoginThrottle.Ticket] = [:]
    /// Links counted as not logged in yet: their address and when they were admitted.
    var unauthenticated: [ObjectIdentifier: (address: LoginAddress, opened: LoopInstant)] = [:]
    /// The newest LOGIN of each instance still waiting for its answer.
    var newestLogin: [InstanceKey: LoginThrottle.Ticket] = [:]
    /// Set while checks are being started, so a check answered at once does not start more inside.
    var isStartingChecks = false

    private var events: [(at: LoopInstant, event: Event)] = []
    private var timer: ProtocolTimer!
    private let loop: RunLoop
    private let fire: (Event) -> Void

    init(limits: IMLoginLimits, loop: RunLoop, modes: [RunLoop.Mode], fire: @escaping (Event) -> Void) {
        throttle = LoginThrottle(limits: limits)
        self.loop = loop
        self.fire = fire
        timer = ProtocolTimer(loop: loop, modes: modes, label: "im.logins") { [weak self] in self?.fireDue() }
    }

    deinit { timer.cancel() }

    func schedule(_ event: Event, at instant: LoopInstant) {
        let index = events.firstIndex { $0.at > instant } ?? events.endIndex
        events.insert((instant, event), at: index)
        timer.schedule(at: events.first?.at)
    }

    private func fireDue() {
        while let first = events.first, first.at <= loop.now {
            events.removeFirst()
            fire(first.event)
        }
        timer.schedule(at: events.first?.at)
    }

    /// Forgets a login whose answer was given and whose delay, if any, is over.
    func forget(_ ticket: LoginThrottle.Ticket) {
        guard let login = waiting.removeValue(forKey: ticket) else { return }
        if ticketOfSession[ObjectIdentifier(login.session)] == ticket { ticketOfSession[ObjectIdentifier(login.session)] = nil }
        if let key = login.instance, newestLogin[key] == ticket { newestLogin[key] = nil }
        waiting.shrinkIfSparse()
        ticketOfSession.shrinkIfSparse()
        newestLogin.shrinkIfSparse()
    }

    /// The table of sessions logging in gives back its room once a crowd has gone.
    func sessionGone() {
        unauthenticated.shrinkIfSparse()
    }
}
