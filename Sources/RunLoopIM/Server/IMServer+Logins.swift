import Logging
import RunLoopIMCore
import RunLoopKit
import RunLoopNet

/// Logins: who may try, how many at once, in which order, how fast after failures (``IMLoginLimits``),
/// the per-user session limit, and session replacement by client instance.
extension IMServer {
    /// The longest `client_instance` honoured, in UTF-8 bytes.
    static let maximumClientInstanceBytes = 64
    /// The reason of a refusal for ``IMLoginVerdict/accountUnknown``.
    static let unknownAccount = "no account has this name"

    // MARK: Connections

    /// Counts a new connection as not logged in yet, or refuses it (ERROR `tooManyConnections` with
    /// `retry_after_ms`, then close) when its address already has too many such connections.
    func admitConnection(_ link: any IMFrameLink) -> Bool {
        let address = LoginAddress(link.remoteAddress)
        if let wait = loginGate.throttle.connectionOpened(from: address, now: loop.now) {
            let text = "too many connections logging in from \(address)"
            logger.debug("\(text): \(link.remoteAddress?.description ?? "?") refused, retry in \(formatSeconds(wait))")
            try? link.send(Self.refusal(.tooManyConnections, text, retryAfter: wait))
            // Like the listener's own refusals: the ERROR and a FIN, then the descriptor goes at once,
            // not after a linger for the peer's FIN — refused connections must not fill the listener.
            (link as? TCPFrameLink)?.connection.lingerTimeout = .zero
            link.close(for: .protocolError(.tooManyConnections, text))
            return false
        }
        loginGate.unauthenticated[ObjectIdentifier(link)] = (address, loop.now)
        return true
    }

    /// An ERROR that refuses a connection for now.
    static func refusal(_ code: IMStatusCode, _ text: String, retryAfter wait: Duration) -> IMFrame {
        var notice = IMErrorNotice()
        notice.message = text
        notice.retryAfterMs = milliseconds(wait)
        return IMFrame(command: .error, serial: 0, code: code, message: notice)
    }

    static func milliseconds(_ wait: Duration) -> UInt32 {
        UInt32(clamping: Int64((wait.secondsDouble * 1000).rounded(.up)))
    }

    /// The session's link is no longer one logging in: it logged in, or ended.
    private func settleConnection(_ session: IMServerSession, loggedIn: Bool) {
        if let (address, opened) = loginGate.unauthenticated.removeValue(forKey: ObjectIdentifier(session.link)) {
            loginGate.throttle.connectionSettled(from: address, after: loop.now - opened, loggedIn: loggedIn)
        }
    }

    /// A session ended: its place among the connections logging in, its queued check and its instance
    /// are given back. A check already running still counts (its failure too), so hanging up does not
    /// skip a failure delay.
    func loginSessionEnded(_ session: IMServerSession) {
        settleConnection(session, loggedIn: false)
        let id = ObjectIdentifier(session)
        if let ticket = loginGate.ticketOfSession.removeValue(forKey: id), loginGate.throttle.cancel(ticket) {
            loginGate.forget(ticket)
            startChecks()
        }
        loginGate.sessionGone()
    }

    /// The session online as `user` from the client instance `instance` (the newest, should a replaced
    /// one not have ended yet), if any. Looked for among the user's few sessions: a table of the
    /// instances online cost every session its entry, ~80 bytes at a crowd's size (issue 22).
    func onlineSession(of user: String, instance: ClientInstanceID) -> IMServerSession? {
        byUser[user]?.last { $0.onlineInstance == instance && !$0.isEnded }
    }

    // MARK: Checks

    /// A session's LOGIN: refused at once, or queued for a check.
    func authenticate(_ request: IMLoginAttempt, for session: IMServerSession) {
        let now = loop.now
        guard request.clientInstance.utf8.count <= Self.maximumClientInstanceBytes else {
            return session.loginRefused(.badRequest, reason: "client_instance is longer than \(Self.maximumClientInstanceBytes) bytes")
        }
        let account = Self.accountKey(request.user)
        let instance = request.clientInstance.isEmpty ? nil : LoginGate.InstanceKey(user: account, instance: request.clientInstance)
        let replaceable = instance.flatMap { onlineSession(of: request.user, instance: $0.instance) }
        if let refusal = sessionLimitRefusal(for: request.user, replacing: replaceable, now: now) {
            return session.loginRefused(.tooManyConnections, reason: refusal.reason, retryAfter: refusal.retryAfter)
        }
        switch loginGate.throttle.loginArrived(from: LoginAddress(session.remoteAddress), account: account, now: now) {
        case .refused(let wait):
            logger.debug(
                "login of \(quoted(request.user)) from \(session.remoteAddress?.description ?? "?") refused for now, retry in \(formatSeconds(wait))")
            session.loginRefused(.rateLimited, reason: "too many logins in progress; try again shortly", retryAfter: wait)
        case .queued(let ticket, let evicted):
            // Recorded before anything below can end another session and start checks.
            loginGate.waiting[ticket] = LoginGate.Waiting(session: session, peer: session.remoteAddress, request: request, instance: instance)
            loginGate.ticketOfSession[ObjectIdentifier(session)] = ticket
            if let instance { supersedeOlderLogin(of: instance, by: ticket) }
            if let evicted, let login = loginGate.waiting[evicted] {
                loginGate.forget(evicted)
                login.session.loginRefused(
                    .rateLimited, reason: "too many logins in progress; try again shortly",
                    retryAfter: loginGate.throttle.retryAfter(.server, now: now))
            }
            startChecks()
        }
    }

    /// The name failures of an account are counted under: case-folded (so `Alice` and `alice` share
    /// a budget whatever the deployment's rule), and cut to 128 bytes (the records stay small, whatever
    /// a client sends).
    static func accountKey(_ user: String) -> String {
        String(decoding: user.utf8.prefix(128), as: UTF8.self).lowercased()
    }

    /// A newer LOGIN of the same client instance: the older one, still waiting, is not going online.
    /// Queued, it ends now; being checked, it ends when its check does (the check still counts).
    private func supersedeOlderLogin(of instance: LoginGate.InstanceKey, by ticket: LoginThrottle.Ticket) {
        defer { loginGate.newestLogin[instance] = ticket }
        guard let older = loginGate.newestLogin[instance] else { return }
        if loginGate.throttle.cancel(older) {
            let session = loginGate.waiting[older]?.session
            loginGate.forget(older)
            session?.end(with: .sessionReplaced, "a newer login of the same client instance replaced this one")
        } else {
            loginGate.waiting[older]?.superseded = true
        }
    }

    /// Starts queued checks while the limits allow.
    func startChecks() {
        guard !loginGate.isStartingChecks else { return }
        loginGate.isStartingChecks = true
        defer { loginGate.isStartingChecks = false }
        while let ticket = loginGate.throttle.nextCheck(now: loop.now) {
            guard let login = loginGate.waiting[ticket], !login.session.isEnded else {
                // Its session ended between the queue and now: nothing to check.
                _ = loginGate.throttle.checkFinished(ticket, .neither, now: loop.now)
                loginGate.forget(ticket)
                continue
            }
            guard let authenticator else {
                callStore(timed: .login, { self.store.authenticate(login.request, completion: $0) }) { [weak self] verdict in
                    self?.checkFinished(ticket, verdict)
                }
                continue
            }
            authenticator(login.request) { [weak self] verdict in self?.checkFinished(ticket, verdict) }
        }
    }

    /// A check's verdict, on the loop's thread.
    private func checkFinished(_ ticket: LoginThrottle.Ticket, _ verdict: IMLoginVerdict) {
        let now = loop.now
        let outcome: LoginThrottle.Outcome
        switch verdict {
        case .accepted, .acceptedAs, .created: outcome = .succeeded
        case .refused(.authenticationFailed, _), .accountUnknown: outcome = .failed
        case .refused: outcome = .neither
        }
        guard let login = loginGate.waiting[ticket], let hold = loginGate.throttle.checkFinished(ticket, outcome, now: now) else { return }
        if outcome == .failed {
            switch verdict {
            case .refused(let code, let reason): logFailure(login, code: code, reason: reason, hold: hold, now: now)
            default: logFailure(login, code: .authenticationFailed, reason: Self.unknownAccount, hold: hold, now: now)
            }
        }
        if hold > .zero {
            loginGate.schedule(.release(ticket), at: now + hold)
            // The answer never waits past the session's login deadline: a client told "wrong
            // password" does not retry; one that timed out would.
            let latest = login.session.machine.loginDeadline.map { $0 - .milliseconds(250) } ?? now + hold
            let answerAt = min(now + hold, latest)
            if answerAt <= now {
                answer(login, verdict)
            } else {
                loginGate.waiting[ticket]?.verdict = verdict
                loginGate.schedule(.answer(ticket), at: answerAt)
            }
        } else {
            loginGate.forget(ticket)
            answer(login, verdict)
        }
        startChecks()
    }

    /// A timer of the login gate.
    func loginEventDue(_ event: LoginGate.Event) {
        switch event {
        case .answer(let ticket):
            guard let login = loginGate.waiting[ticket], let verdict = login.verdict else { return }
            loginGate.waiting[ticket]?.verdict = nil
            answer(login, verdict)
        case .release(let ticket):
            if let login = loginGate.waiting[ticket], let verdict = login.verdict { answer(login, verdict) }
            loginGate.throttle.holdEnded(ticket)
            loginGate.forget(ticket)
            startChecks()
        }
    }

    // MARK: Answers

    private func answer(_ login: LoginGate.Waiting, _ verdict: IMLoginVerdict) {
        let session = login.session
        guard !session.isEnded else { return }
        let user: String
        switch verdict {
        case .refused(let code, let reason):
            let wait = Self.isTemporary(code) ? loginGate.throttle.retryAfter(.server, now: loop.now) : nil
            return session.loginRefused(code, reason: reason, retryAfter: wait)
        case .accountUnknown:
            return session.loginRefused(.authenticationFailed, reason: Self.unknownAccount, accountUnknown: true)
        case .accepted: user = login.request.user
        case .acceptedAs(let canonical), .created(let canonical): user = canonical
        }
        if case .created = verdict { session.accountCreated = true }
        if login.superseded {
            return session.end(with: .sessionReplaced, "a newer login of the same client instance replaced this one")
        }
        let key = login.instance.map { LoginGate.InstanceKey(user: user, instance: $0.instance) }
        let replaced = key.flatMap { onlineSession(of: $0.user, instance: $0.instance) }.flatMap { $0 === session ? nil : $0 }
        if let refusal = sessionLimitRefusal(for: user, replacing: replaced, now: loop.now) {
            return session.loginRefused(.tooManyConnections, reason: refusal.reason, retryAfter: refusal.retryAfter)
        }
        guard let sessionAdmission else { return goOnline(session, as: user, instance: key, replacing: replaced) }
        // The replaced session still counts in the cluster until it ends, right after this one is online.
        let limit = settings.maximumSessionsPerUser.map { replaced == nil ? $0 : $0 + 1 }
        callStore(timed: .admission, { sessionAdmission(user, limit, $0) }) { [weak self, session] admitted in
            guard let self else { return }
            guard !session.isEnded else {
                if admitted { self.onAdmittedSessionEnd?(user) }
                return
            }
            guard admitted else {
                let refusal = self.limitRefusal(for: user, limit: limit ?? 0, staying: Array(self.byUser[user] ?? []), now: self.loop.now)
                return session.loginRefused(.tooManyConnections, reason: refusal.reason, retryAfter: refusal.retryAfter)
            }
            self.goOnline(session, as: user, instance: key, replacing: replaced.flatMap { $0.isEnded ? nil : $0 })
            // Ended on the way (its LOGIN_ACK could not be written): it never went online to end later.
            if session.user == nil { self.onAdmittedSessionEnd?(user) }
        }
    }

    /// A login passed every check: the session goes online as `user`, replacing the older session of
    /// its client instance.
    private func goOnline(_ session: IMServerSession, as user: String, instance key: LoginGate.InstanceKey?, replacing replaced: IMServerSession?) {
        settleConnection(session, loggedIn: true)
        // Online first, then the replaced session ends: the user never looks offline in between.
        session.loginAccepted(as: user)
        guard !session.isEnded else { return }
        if let key { session.onlineInstance = key.instance }
        if let replaced {
            logger.debug(
                "\(user)'s session from \(replaced.remoteAddress?.description ?? "?") replaced by one from \(session.remoteAddress?.description ?? "?")"
            )
            replaced.end(with: .sessionReplaced, "a newer login of the same client instance replaced this session")
        }
    }

    /// Refusals worth another try later, which carry `retry_after_ms`.
    static func isTemporary(_ code: IMStatusCode) -> Bool {
        switch code {
        case .rateLimited, .tooManyConnections, .shuttingDown, .internalError: return true
        default: return false
        }
    }

    /// The per-user limit, counting the sessions that stay: `replacing` is about to end. The retry
    /// time is when the earliest of those sessions would be dropped for silence (a half-open one
    /// goes then), between 1 s and 60 s.
    func sessionLimitRefusal(for user: String, replacing replaced: IMServerSession?, now: LoopInstant) -> (reason: String, retryAfter: Duration)? {
        guard let limit = settings.maximumSessionsPerUser else { return nil }
        let staying = (byUser[user] ?? []).filter { $0 !== replaced }
        guard staying.count >= limit else { return nil }
        return limitRefusal(for: user, limit: limit, staying: staying, now: now)
    }

    /// What a login past the per-user limit is told — here or across the cluster: the retry time is
    /// when the earliest `staying` session here would be dropped for silence; with none here (the
    /// sessions that count are on other nodes, and may end any moment) 1 s.
    private func limitRefusal(for user: String, limit: Int, staying: [IMServerSession], now: LoopInstant) -> (reason: String, retryAfter: Duration) {
        let earliest = staying.compactMap { $0.machine.nextDeadline }.min().map { $0 - now } ?? .seconds(1)
        let wait = min(.seconds(60), max(.seconds(1), earliest))
        return ("\(user) already has \(limit) session\(limit == 1 ? "" : "s")", wait)
    }

    /// One line per failed login, at info, for people and for fail2ban: the peer's address comes
    /// first, before anything the client chose (`failregex = ^login failed from <HOST> port \d+`).
    private func logFailure(_ login: LoginGate.Waiting, code: IMStatusCode, reason: String, hold: Duration, now: LoopInstant) {
        let peer = login.peer
        let address = LoginAddress(peer)
        let failures = loginGate.throttle.failures(of: address, now: now)
        logger.info(
            """
            login failed from \(peer?.ip ?? "unknown") port \(peer?.port ?? 0) for user \(quoted(login.request.user)): \(reason) \
            (\(code); \(oneDecimal(failures)) recent failures from \(address); answer held \(formatSeconds(hold)))
            """)
    }
}

/// A client-chosen name made safe for one log line: quoted, with quotes, backslashes, spaces and
/// anything but printable ASCII escaped (so no part of it reads like the line's own words), and cut
/// after 64 characters.
func quoted(_ text: String) -> String {
    var result = "\""
    for (index, scalar) in text.unicodeScalars.enumerated() {
        if index == 64 { return result + "\"…" }
        switch scalar {
        case "\"": result += "\\\""
        case "\\": result += "\\\\"
        case "!"..."~": result.unicodeScalars.append(scalar)
        default: result += "\\u{\(String(scalar.value, radix: 16))}"
        }
    }
    return result + "\""
}

/// One decimal place, without Foundation.
func oneDecimal(_ value: Double) -> String {
    let tenths = Int((value * 10).rounded())
    return "\(tenths / 10).\(abs(tenths % 10))"
}
