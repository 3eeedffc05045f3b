public import RunLoopKit

/// Why the server ended one client's session. Reported once per session.
public enum IMSessionEndReason: Equatable, Sendable, CustomStringConvertible {
    /// The client logged out.
    case loggedOut
    /// Nothing arrived for 1.5 times the keepalive the client announced (MQTT 3.1.1 §3.1.2.10).
    case keepaliveExpired(silentFor: Duration)
    /// LOGIN did not arrive in time.
    case loginTimeout
    /// The login was refused.
    case loginRefused(IMStatusCode)
    /// The client sent bytes that are not valid frames, or a request out of place.
    case protocolError(IMStatusCode, String)
    /// The connection closed or failed underneath.
    case transportClosed(String)
    /// The server is stopping.
    case serverShutdown
    /// The client left this much of the server's output unread, past the server's limit.
    case tooSlow(bufferedBytes: Int)

    public var description: String {
        switch self {
        case .loggedOut: return "logged out"
        case .keepaliveExpired(let silent): return "silent for \(formatSeconds(silent)) (keepalive expired)"
        case .loginTimeout: return "login timed out"
        case .loginRefused(let code): return "login refused (\(code))"
        case .protocolError(let code, let text): return "protocol error (\(code)): \(text)"
        case .transportClosed(let why): return "connection \(why)"
        case .serverShutdown: return "server shutting down"
        case .tooSlow(let bytes): return "client too slow (\(bytes) bytes unread)"
        }
    }
}

/// What a server session must do, as decided by ``IMServerSessionMachine``.
public enum IMServerSessionAction: Equatable, Sendable {
    /// Write the frame to the client.
    case write(IMFrame)
    /// Check these credentials, then call ``IMServerSessionMachine/loginAccepted(user:now:)`` or
    /// ``IMServerSessionMachine/loginRefused(_:reason:retryAfter:now:)``.
    case authenticate(IMLoginAttempt)
    /// A logged-in client's request for the application (SEND, DELIVER_ACK, ABANDON).
    case request(IMFrame)
    /// The session is online as `user`.
    case online(user: String)
    /// Close the connection (after flushing what was written) and report `reason` once.
    case end(IMSessionEndReason)
}

/// One server-side session's protocol: login within a deadline, heartbeats answered at once, a client
/// silent for 1.5 × its announced keepalive dropped, logout, and typed refusals for anything out of
/// place. Pure, like ``IMClientMachine``: `now` comes in, actions go out, ``nextDeadline`` says when
/// to call ``timerFired(now:)``.
public struct IMServerSessionMachine: Sendable {
    /// Server-wide session settings.
    public struct Settings: Sendable, Equatable {
        /// Time from connect to a LOGIN frame.
        public var loginTimeout: Duration = .seconds(10)
        /// Keepalive assumed for a client that announces 0, and the longest honoured.
        public var maximumKeepalive: Duration = .seconds(900)
        /// The shortest keepalive honoured (a client announcing less gets this much slack).
        public var minimumKeepalive: Duration = .seconds(1)
        /// How many keepalives of silence drop a client (MQTT: 1.5).
        public var keepaliveMultiplier: Double = 1.5
        /// SEND frames a second one connection may make on average (`nil`: no limit). Beyond it a SEND
        /// is answered at once with SEND_ACK `rateLimited` and a retry time; nothing is stored.
        public var maximumMessagesPerSecond: Double?
        /// How many SENDs may come in a burst above the average.
        public var messageBurst: Double = 20
        /// The largest SEND body accepted; a larger one is answered SEND_ACK `frameTooLarge` and the
        /// session goes on. ``IMServer`` sets it from its frame limit (``IMServer/Settings/maximumSendBody``).
        public var maximumSendBody = 64 * 1024 - IMServerSessionMachine.deliverReserve
        /// The longest user name a LOGIN may carry, in UTF-8 bytes (`badRequest` beyond): names travel
        /// in every DELIVER's `from`, so their length is part of what makes a DELIVER fit the limit.
        public var maximumUserNameBytes = 64
        /// What LOGIN_ACK announces (``IMServer`` fills it in from its settings). Package: the message
        /// is the wire's; the settings it is made of are public where they are set.
        package var limits = IMSessionLimits()

        public init() {}
    }

    /// Where the session is. The user and the silence limit are not in `.online`: the user is kept
    /// past the end (``loggedInUser``), and the limit follows from the keepalive and the settings.
    enum Phase: Equatable, Sendable {
        case awaitingLogin
        case authenticating(serial: UInt32)
        case online
        case ended
    }

    /// A SEND refused as too fast, boxed: it is rare, and its id and instant inline would cost every
    /// session 24 bytes.
    final class RefusedSend: Sendable {
        let id: String
        let since: LoopInstant

        init(id: String, since: LoopInstant) {
            self.id = id
            self.since = since
        }
    }

    /// Bytes between the frame limit and the largest SEND body: a DELIVER adds `from` (a user name of at
    /// most 64 bytes, 66 with its field header), `seq` and `sent_at_ms` (11 each at most), and a
    /// HISTORY_PAGE wraps each message in 4 more and adds 2 — 94 in all, rounded up.
    public static let deliverReserve = 128

    /// Settings many sessions share: one copy for all, instead of one in every session (some 130 bytes
    /// each). Immutable, so any thread may hold it.
    public final class SharedSettings: Sendable {
        public let settings: Settings
        /// The keepalive bounds in nanoseconds: every frame read moves the session's deadline, and
        /// working it out in `Duration`s (128-bit arithmetic) was a tenth of a heartbeat's cost (issue 22).
        let minimumKeepaliveNanoseconds: Int64
        let maximumKeepaliveNanoseconds: Int64

        public init(_ settings: Settings) {
            self.settings = settings
            minimumKeepaliveNanoseconds = Self.nanoseconds(settings.minimumKeepalive)
            maximumKeepaliveNanoseconds = Self.nanoseconds(settings.maximumKeepalive)
        }

        /// Whole nanoseconds, saturated to `Int64`'s range.
        private static func nanoseconds(_ duration: Duration) -> Int64 {
            let (seconds, attoseconds) = duration.components
            let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
            guard !overflow else { return seconds < 0 ? .min : .max }
            let (total, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
            guard !overflow2 else { return scaled < 0 ? .min : .max }
            return total
        }
    }

    public var settings: Settings { shared.settings }
    // The stored properties are what every server session keeps while idle: each one's size counts
    // thousands of times (issue 22), hence the narrow types and the order that leaves no padding.
    package let shared: SharedSettings
    var nextSerial: UInt32 = 1
    /// What the LOGIN announced, in one word: the keepalive in seconds in the low 31 bits (0: none;
    /// more than 2³¹ − 1 s is clamped there, the server's own bound being far below), and in the top bit
    /// whether it asked for PRESENCE_BATCH — a flag of its own would grow every session by 8 bytes.
    private var loginAnnouncement: UInt32 = 0
    private static let presenceBatchesBit: UInt32 = 1 << 31

    /// The keepalive the LOGIN announced, in seconds (0: none announced).
    var announcedKeepaliveSeconds: UInt32 { loginAnnouncement & ~Self.presenceBatchesBit }

    /// The LOGIN asked for PRESENCE_BATCH frames (`presence_batches`): the LOGIN_ACK says they come,
    /// and the server batches this session's presence.
    package var sendsPresenceBatches: Bool { loginAnnouncement & Self.presenceBatchesBit != 0 }
    /// The user the session logged in as: set when the login is accepted and kept after the end (the
    /// session's last reports name it), where ``user`` is only the user while online.
    package private(set) var loggedInUser: String?
    var lastReceived: LoopInstant
    package var loginDeadline: LoopInstant? {
        get { loginDeadlineInstant.value }
        set { loginDeadlineInstant.value = newValue }
    }
    private var loginDeadlineInstant = OptionalInstant()
    /// Late, not silent: one grace for unread bytes between frames, for the login or keepalive
    /// deadline. Only the grant is kept; the grace and renewal are the same for every session.
    var lateGrant: SilenceDeadline.Grant? {
        get { lateGrantDeadline.value.map { SilenceDeadline.Grant(deadline: $0, until: lateGrantUntil) } }
        set {
            lateGrantDeadline.value = newValue?.deadline
            lateGrantUntil = newValue?.until ?? LoopInstant(nanoseconds: 0)
        }
    }
    // The grant in two words: as a `Grant?` it took 24 bytes of every session.
    private var lateGrantDeadline = OptionalInstant()
    private var lateGrantUntil = LoopInstant(nanoseconds: 0)
    /// SEND tokens, at ``Settings/maximumMessagesPerSecond`` (unused without it); the rate and burst
    /// are read from the shared settings, not kept here.
    var sendBudget: TokenBucket
    /// The SEND refused as too fast, until it comes again: every other SEND before it is refused too,
    /// since a client writes ahead of the answers, and a SEND written before it learned of the refusal
    /// must not be stored ahead of the refused one. Also lifted when the client abandons that id, or
    /// ``stickyRefusalLimit`` after the refusal, so a client that drops the message is not refused forever.
    var firstRefusedSend: RefusedSend?

    /// How long a refused SEND holds back the others at most.
    public static let stickyRefusalLimit = Duration.seconds(30)
    var actions: [IMServerSessionAction] = []
    /// Last, so that the one byte is the machine's end: its owner puts its own small fields after it
    /// (``IMServerSession``), where a byte in the middle cost 7 of padding.
    var phase = Phase.awaitingLogin

    /// A session for a connection that opened at `now`.
    public init(settings: Settings, now: LoopInstant) {
        self.init(sharing: SharedSettings(settings), now: now)
    }

    /// A session for a connection that opened at `now`, with settings it shares with others (a
    /// server's sessions).
    public init(sharing shared: SharedSettings, now: LoopInstant) {
        self.shared = shared
        let settings = shared.settings
        lastReceived = now
        sendBudget = TokenBucket(rate: settings.maximumMessagesPerSecond, burst: settings.messageBurst, now: now)
        loginDeadline = now + settings.loginTimeout
    }

    /// The logged-in user, if any.
    public var user: String? { phase == .online ? loggedInUser : nil }

    public var isEnded: Bool { phase == .ended }

    /// How long this client may stay silent, once logged in.
    public var silenceLimit: Duration? { phase == .online ? .nanoseconds(silenceLimitNanoseconds) : nil }

    /// The keepalive honoured: the one announced, within the settings' bounds (the longest for 0).
    var keepalive: Duration {
        let announced = Duration.seconds(Int64(announcedKeepaliveSeconds))
        return announced == .zero ? settings.maximumKeepalive : min(settings.maximumKeepalive, max(settings.minimumKeepalive, announced))
    }

    /// The late-answer judge, made from the grant kept (``lateGrant``) and put back into it.
    private var lateGrace: SilenceDeadline {
        get { SilenceDeadline(renewal: .perWait, resuming: lateGrant) }
        set { lateGrant = newValue.grant }
    }

    /// Takes a SEND token: `nil` when one was there (or SENDs are not limited), otherwise how long
    /// until one will be.
    private mutating func takeSendToken(now: LoopInstant) -> Duration? {
        guard let rate = settings.maximumMessagesPerSecond else { return nil }
        return sendBudget.take(now: now, rate: rate, burst: settings.messageBurst)
    }

    /// How long until a SEND token is due, without taking one (`nil`: one is there, or no limit).
    private func waitForSendToken(now: LoopInstant) -> Duration? {
        guard let rate = settings.maximumMessagesPerSecond else { return nil }
        return sendBudget.waitForToken(now: now, rate: rate, burst: settings.messageBurst)
    }

    public var nextDeadline: LoopInstant? {
        guard let deadline = silenceDeadline else { return nil }
        // Without a grant kept, the judge made from it would only say `deadline`.
        guard lateGrantDeadline.value != nil else { return deadline }
        return lateGrace.due(deadline)
    }

    /// The login or keepalive deadline, before any grace.
    var silenceDeadline: LoopInstant? {
        switch phase {
        case .awaitingLogin, .authenticating: return loginDeadline
        case .online: return silenceDeadlineOnline
        case .ended: return nil
        }
    }

    /// ``silenceLimit`` in nanoseconds, worked out in integers and one `Double` product: every frame
    /// read asks for the deadline it makes.
    private var silenceLimitNanoseconds: Int64 {
        let shared = shared
        let announced = Int64(announcedKeepaliveSeconds) * 1_000_000_000
        let keepalive =
            announced == 0
            ? shared.maximumKeepaliveNanoseconds
            : min(shared.maximumKeepaliveNanoseconds, max(shared.minimumKeepaliveNanoseconds, announced))
        let limit = Double(keepalive) * shared.settings.keepaliveMultiplier
        return limit >= Double(Int64.max) ? Int64.max : Int64(max(0, limit))
    }

    /// `lastReceived + silenceLimit`, saturating.
    private var silenceDeadlineOnline: LoopInstant {
        let (sum, overflow) = lastReceived.nanoseconds.addingReportingOverflow(UInt64(silenceLimitNanoseconds))
        return LoopInstant(nanoseconds: overflow ? .max : sum)
    }

    /// A serial for a frame the server starts (DELIVER, server pings).
    public mutating func takeSerial() -> UInt32 {
        defer { nextSerial = nextSerial == .max ? 1 : nextSerial + 1 }
        return nextSerial
    }

    public mutating func frameReceived(_ frame: IMFrame, now: LoopInstant) -> [IMServerSessionAction] {
        guard phase != .ended else { return [] }
        trafficArrived(now: now)
        switch (frame.command, phase) {
        case (.heartbeat, _):
            actions.append(.write(IMFrame(command: .heartbeatAck, serial: frame.serial)))
        case (.heartbeatAck, _):
            break  // answer to a server ping: its arrival already counted as traffic
        case (.login, .awaitingLogin):
            do {
                let request = try frame.decode(IMLoginRequest.self)
                guard !request.user.isEmpty else { return fail(.badRequest, "LOGIN without a user", serial: frame.serial) }
                guard request.user.utf8.count <= settings.maximumUserNameBytes else {
                    return fail(.badRequest, "user name over \(settings.maximumUserNameBytes) bytes", serial: frame.serial)
                }
                loginAnnouncement =
                    min(request.keepaliveSeconds, ~Self.presenceBatchesBit)
                    | (request.presenceBatches ? Self.presenceBatchesBit : 0)
                phase = .authenticating(serial: frame.serial)
                actions.append(.authenticate(IMLoginAttempt(request)))
            } catch {
                return fail(error.statusCode, error.description, serial: frame.serial)
            }
        case (.login, _):
            return fail(.badRequest, "LOGIN twice", serial: frame.serial)
        case (.logout, .online):
            actions.append(.write(IMFrame(command: .logoutAck, serial: frame.serial)))
            end(.loggedOut)
        case (.send, .online):
            if frame.body.count > settings.maximumSendBody {
                refuseSend(frame.serial, id: IMChatMessage.leadingID(in: frame.body), code: .frameTooLarge)
            } else if let refused = firstRefusedSend, now - refused.since < Self.stickyRefusalLimit,
                let id = (try? frame.decode(IMChatMessage.self))?.id, id != refused.id
            {
                // Sent before the client learned of the refusal: storing it now would put it ahead of
                // the refused one. The client resends from the refused message on, in order.
                refuseSend(frame.serial, id: id, code: .rateLimited, retryAfter: waitForSendToken(now: now) ?? .zero)
            } else if let wait = takeSendToken(now: now) {
                let id = (try? frame.decode(IMChatMessage.self))?.id ?? ""
                firstRefusedSend = RefusedSend(id: id, since: now)
                refuseSend(frame.serial, id: id, code: .rateLimited, retryAfter: wait)
            } else {
                firstRefusedSend = nil
                actions.append(.request(frame))
            }
        case (.abandon, .online):
            if let refused = firstRefusedSend, (try? frame.decode(IMAbandonRequest.self))?.ids.contains(refused.id) == true {
                firstRefusedSend = nil
            }
            actions.append(.request(frame))
        case (.deliverAck, .online), (.join, .online), (.leave, .online), (.listRooms, .online), (.history, .online):
            actions.append(.request(frame))
        case (.send, _), (.deliverAck, _), (.abandon, _), (.logout, _), (.join, _), (.leave, _), (.listRooms, _), (.history, _):
            return fail(.notLoggedIn, "log in first", serial: frame.serial)
        case (nil, _):
            return fail(.unknownCommand, "unknown command \(frame.header.command)", serial: frame.serial)
        case (.loginAck, _), (.sendAck, _), (.deliver, _), (.abandonAck, _), (.logoutAck, _), (.error, _),
            (.joinAck, _), (.leaveAck, _), (.roomList, _), (.historyPage, _), (.presence, _), (.membership, _), (.presenceBatch, _):
            return fail(.badRequest, "\(frame.command.map { "\($0)" } ?? "?") is a server's frame", serial: frame.serial)
        }
        return takeActions()
    }

    /// A HEARTBEAT read (``frameReceived(_:now:)`` with one, in any phase): the HEARTBEAT_ACK to write,
    /// or `nil` once the session ended. Without an action list, whose allocation was a tenth of what an
    /// idle connection's heartbeat cost the server (issue 22): it is every idle connection's only frame.
    public mutating func heartbeatReceived(serial: UInt32, now: LoopInstant) -> IMFrame? {
        guard phase != .ended else { return nil }
        trafficArrived(now: now)
        return IMFrame(command: .heartbeatAck, serial: serial)
    }

    /// ``heartbeatReceived(serial:now:)``, with the ``nextDeadline`` it leaves, in one mutating call. A
    /// class that holds the machine in a stored property (``IMServer``'s session) and reads the deadline
    /// through the getter copies the whole machine for the call — a retain and a release of every
    /// reference it holds, ~180 instructions of each heartbeat (issue 22, IM-RESULTS "idle9").
    public mutating func heartbeatAnswered(serial: UInt32, now: LoopInstant) -> (ack: IMFrame?, nextDeadline: LoopInstant?) {
        let ack = heartbeatReceived(serial: serial, now: now)
        return (ack, nextDeadline)
    }

    /// A frame arrived: the silence deadline starts over, and with it the grace for late input.
    private mutating func trafficArrived(now: LoopInstant) {
        lastReceived = now
        lateGrace.startOver()
    }

    /// - Parameter accountCreated: this login made the account (LOGIN_ACK's `account_created`).
    public mutating func loginAccepted(
        user: String, sessionID: String, serverTimeMilliseconds: UInt64, accountCreated: Bool = false, now: LoopInstant
    ) -> [IMServerSessionAction] {
        guard case .authenticating(let serial) = phase else { return [] }
        phase = .online
        loggedInUser = user
        loginDeadline = nil
        lastReceived = now
        var response = IMLoginResponse()
        response.user = user
        response.keepaliveSeconds = UInt32(clamping: Int64(keepalive.secondsDouble.rounded(.down)))
        response.sessionID = sessionID
        response.serverTimeMs = serverTimeMilliseconds
        response.limits = settings.limits
        response.accountCreated = accountCreated
        response.presenceBatches = sendsPresenceBatches
        actions.append(.write(IMFrame(command: .loginAck, serial: serial, message: response)))
        actions.append(.online(user: user))
        return takeActions()
    }

    /// - Parameters:
    ///   - retryAfter: for a refusal for now, when the client may try again (`retry_after_ms`).
    ///   - accountUnknown: no account has the name, and a login that may make one would (`account_unknown`).
    public mutating func loginRefused(
        _ code: IMStatusCode, reason: String, retryAfter: Duration? = nil, accountUnknown: Bool = false, now: LoopInstant
    ) -> [IMServerSessionAction] {
        guard case .authenticating(let serial) = phase else { return [] }
        var response = IMLoginResponse()
        response.reason = reason
        response.accountUnknown = accountUnknown
        if let retryAfter { response.retryAfterMs = UInt32(clamping: Int64((retryAfter.secondsDouble * 1000).rounded(.up))) }
        actions.append(.write(IMFrame(command: .loginAck, serial: serial, code: code, message: response)))
        end(.loginRefused(code))
        return takeActions()
    }

    /// - Parameter inputWaiting: the link holds the peer's bytes unread (`IMFrameLink.hasUnreadInput`).
    ///   A deadline that passes then was missed by a busy loop, not by a silent peer: it is judged
    ///   again ``IMClientMachine/lateAnswerGrace`` later, after the bytes were read (any frame counts);
    ///   once until the next frame.
    public mutating func timerFired(now: LoopInstant, inputWaiting: Bool = false) -> [IMServerSessionAction] {
        // Once until the next frame: bytes that keep waiting without ever making a frame do not keep
        // a silent client online.
        if let deadline = silenceDeadline {
            switch lateGrace.judge(deadline, now: now, peerBytesWaiting: { inputWaiting }) {
            case .fine, .extend: return takeActions()
            case .expired: break
            }
        }
        switch phase {
        case .awaitingLogin, .authenticating:
            if let deadline = loginDeadline, now >= deadline {
                notifyAndEnd(.loginTimeout, "no LOGIN within \(formatSeconds(settings.loginTimeout))", .loginTimeout)
            }
        case .online:
            // Judged against the very deadline asked for: a judge of its own, rounded otherwise,
            // could find the client not yet silent at it, and that deadline is never told again.
            let silent = now - lastReceived
            if now >= silenceDeadlineOnline {
                notifyAndEnd(.keepaliveTimeout, "silent for \(formatSeconds(silent))", .keepaliveExpired(silentFor: silent))
            }
        case .ended:
            break
        }
        return takeActions()
    }

    /// The byte stream broke the framing rules.
    public mutating func protocolError(_ error: IMFrameError) -> [IMServerSessionAction] {
        protocolError(error.statusCode, error.description, serial: 0)
    }

    /// The input broke the protocol in a way only its encoding can tell (a WebSocket text message that
    /// is not a valid JSON envelope): ERROR `code` with `serial` (0 when none could be read), then end.
    public mutating func protocolError(_ code: IMStatusCode, _ text: String, serial: UInt32) -> [IMServerSessionAction] {
        guard phase != .ended else { return [] }
        return fail(code, text, serial: serial)
    }

    /// The transport closed underneath.
    public mutating func transportClosed(_ why: String) -> [IMServerSessionAction] {
        guard phase != .ended else { return [] }
        end(.transportClosed(why))
        return takeActions()
    }

    /// The client does not read what it is sent: tell it why, then close.
    public mutating func tooSlow(bufferedBytes: Int) -> [IMServerSessionAction] {
        guard phase != .ended else { return [] }
        notifyAndEnd(.tooSlow, "\(bufferedBytes) bytes of output unread", .tooSlow(bufferedBytes: bufferedBytes))
        return takeActions()
    }

    /// The server stops: tell the client why, then close.
    public mutating func shutdown() -> [IMServerSessionAction] {
        guard phase != .ended else { return [] }
        notifyAndEnd(.shuttingDown, "server shutting down", .serverShutdown)
        return takeActions()
    }

    /// A frame whose body was over the receiver's limit, of which only the header and the first bytes
    /// of the body were kept (the rest was read and dropped: ``FrameDecoder/Event/oversized(_:bodyPrefix:)``).
    /// A logged-in client's SEND is refused with SEND_ACK `frameTooLarge` (its id, when the prefix holds
    /// it) and the session goes on; any other command is a protocol error as before.
    public mutating func oversizedFrameReceived(_ header: FrameHeader, bodyPrefix: [UInt8], limit: Int, now: LoopInstant) -> [IMServerSessionAction] {
        guard phase != .ended else { return [] }
        let tooLarge = IMFrameError.frameTooLarge(length: header.bodyLength, limit: limit)
        guard header.command == IMCommand.send.rawValue, case .online = phase else {
            return fail(tooLarge.statusCode, tooLarge.description, serial: header.serial)
        }
        trafficArrived(now: now)
        refuseSend(header.serial, id: IMChatMessage.leadingID(in: bodyPrefix), code: .frameTooLarge)
        return takeActions()
    }

    private mutating func refuseSend(_ serial: UInt32, id: String?, code: IMStatusCode, retryAfter wait: Duration? = nil) {
        var ack = IMSendAck()
        ack.id = id ?? ""
        if let wait { ack.retryAfterMs = UInt32(clamping: Int64((wait.secondsDouble * 1000).rounded(.up))) }
        actions.append(.write(IMFrame(command: .sendAck, serial: serial, code: code, message: ack)))
    }

    private mutating func fail(_ code: IMStatusCode, _ text: String, serial: UInt32) -> [IMServerSessionAction] {
        notifyAndEnd(code, text, .protocolError(code, text), serial: serial)
        return takeActions()
    }

    private mutating func notifyAndEnd(_ code: IMStatusCode, _ text: String, _ reason: IMSessionEndReason, serial: UInt32 = 0) {
        var notice = IMErrorNotice()
        notice.message = text
        actions.append(.write(IMFrame(command: .error, serial: serial, code: code, message: notice)))
        end(reason)
    }

    private mutating func end(_ reason: IMSessionEndReason) {
        phase = .ended
        loginDeadline = nil
        actions.append(.end(reason))
    }

    /// Hands the actions over with their storage: emptying the array just returned, keeping its
    /// capacity, would allocate a fresh buffer for every call and keep one in every session.
    private mutating func takeActions() -> [IMServerSessionAction] {
        defer { actions = [] }
        return actions
    }
}
