public import RunLoopKit

/// What the client connection must do, as decided by ``IMClientMachine``.
public enum IMClientAction: Equatable, Sendable {
    /// Open a new transport to the server, known from now on by `generation`.
    case openTransport(generation: UInt64)
    /// Write the frame on the current transport.
    case write(IMFrame)
    /// Close that transport: gracefully (flush first) or at once. Its own close callback, when it
    /// comes, is stale and must be ignored.
    case closeTransport(generation: UInt64, graceful: Bool)
    /// The connection state changed.
    case stateChanged(IMConnectionState)
    /// An open connection ended; exactly one per connection.
    case disconnected(IMDisconnectReason)
    /// A message for the application, exactly once per (sender, id).
    case received(IMMessage)
    /// One of the application's own messages moved on.
    case deliveryChanged(id: String, IMDeliveryState)
    /// The answer to an application request (``IMClientMachine/request(_:body:now:)``), by its serial.
    case response(serial: UInt32, IMFrame)
    /// An application request will get no answer: its connection ended first.
    case requestLost(serial: UInt32, IMDisconnectReason)
    /// A notice from the server (PRESENCE).
    case notice(IMFrame)
    /// The server refused a SEND as too fast: nothing is sent for `retryAfter`, then every queued
    /// message goes out again in order. Once per pause.
    case rateLimited(retryAfter: Duration)
}

/// The whole client-side protocol — login, heartbeat, ping-pong, reconnect backoff, acknowledged
/// delivery with resend, give-up and de-duplication, the server's size and rate limits — as a pure
/// state machine.
///
/// It never reads a clock, touches a socket or runs a timer: every input carries `now`, every
/// decision comes back as ``IMClientAction`` values, and ``nextDeadline`` says when it wants
/// ``timerFired(now:)``. ``IMClient`` carries the actions out on a run loop; tests drive the machine
/// through hours of protocol time in microseconds.
///
/// Transports are numbered (generations). An event from any transport but the current one is stale
/// and ignored: a late close callback from an old connection can never start a second reconnect.
public struct IMClientMachine: Sendable {
    enum Phase: Equatable, Sendable {
        case idle
        case connecting(UInt64)
        case loggingIn(UInt64, serial: UInt32)
        case online(UInt64)
        case closing(UInt64, logoutSerial: UInt32)
        case waitingToReconnect(at: LoopInstant)
        case waitingForNetwork
        case closed
    }

    struct PendingHeartbeat: Equatable, Sendable {
        let serial: UInt32
        let quiet: Duration
    }

    public let configuration: IMClientConfiguration
    var phase = Phase.idle
    /// The state last reported.
    public private(set) var state = IMConnectionState.idle
    var generation: UInt64 = 0
    var nextSerial: UInt32 = 1
    var backoff: ReconnectBackoff
    var heartbeat: HeartbeatSchedule
    var outbox: Outbox
    var seen: RecentMessageIDs
    var isNetworkReachable = true
    var networkProblem = ""
    var lastSent = LoopInstant(nanoseconds: 0)
    var lastReceived = LoopInstant(nanoseconds: 0)
    var answerDeadline: LoopInstant?
    /// Late, not silent: one grace for unread bytes between frames (or since connect), shared by the
    /// login and answer deadlines.
    var lateGrace = SilenceDeadline(renewal: .perWait)
    var loginDeadline: LoopInstant?
    var closeDeadline: LoopInstant?
    var pendingHeartbeat: PendingHeartbeat?
    /// Why the last connection ended or the last attempt failed.
    public internal(set) var lastFailure: IMDisconnectReason?
    /// The keepalive the server granted at login, when it is shorter than asked.
    var grantedKeepalive: Duration?
    /// Sequences delivered to the application and not yet acknowledged to the server.
    var unacknowledged: [UInt64] = []
    /// Application requests written on the current connection and not answered yet.
    var pendingRequests: Set<UInt32> = []
    /// The largest SEND body the server accepts: announced at login, assumed until then.
    public internal(set) var maximumSendBody: Int
    /// The largest frame body accepted from the server on the current connection: the configured
    /// limit, or the larger one the server announced at login (every frame it sends fits in that).
    public internal(set) var receiveLimit: Int
    /// The server's large-room size from the last LOGIN_ACK (docs/PROTOCOL.md §8): a room with more
    /// members carries no presence or MEMBERSHIP, so its members' presence is unknown. `nil`: not
    /// logged in yet, or the server announced none (an older server, or one without the rule).
    public internal(set) var largeRoomMembers: Int?
    /// After SEND_ACK `rateLimited`: nothing is sent before this.
    var pausedUntil: LoopInstant?
    /// When the current session logged in: a drop after ``IMClientConfiguration/stableSessionTime``
    /// starts the backoff afresh.
    var onlineSince: LoopInstant?
    /// The server said when to come back (`retry_after_ms` of a login refusal or an ERROR): the next
    /// reconnect waits at least this.
    var retryFloor: Duration?
    var actions: [IMClientAction] = []
    /// The last LOGIN_ACK 0 said this login made the account (`account_created`).
    public internal(set) var isAccountCreated = false
    /// The login was refused because no account has the name and it asked for an existing one
    /// (``IMClientConfiguration/existingAccountOnly``; LOGIN_ACK's `account_unknown`).
    public internal(set) var isAccountUnknown = false
    /// Ask for PRESENCE_BATCH frames at every login from now on (LOGIN's `presence_batches`): set by
    /// an owner that reads them among its notices. Starts as ``IMClientConfiguration/readsPresenceBatches``.
    public var readsPresenceBatches: Bool
    /// The last LOGIN_ACK 0 said the server may send this session PRESENCE_BATCH frames (it still
    /// may send single PRESENCE frames too).
    public internal(set) var receivesPresenceBatches = false

    public init(configuration: IMClientConfiguration) {
        precondition(configuration.maximumSendAttempts > 0, "maximumSendAttempts must be positive")
        precondition(
            configuration.answerTimeout > .zero && configuration.loginTimeout > .zero && configuration.ackTimeout > .zero,
            "timeouts must be positive")
        precondition(configuration.clientInstance.utf8.count <= 64, "clientInstance is at most 64 UTF-8 bytes")
        self.configuration = configuration
        backoff = ReconnectBackoff(policy: configuration.backoff)
        heartbeat = HeartbeatSchedule(mode: configuration.heartbeat)
        outbox = Outbox(limit: configuration.outboxLimit)
        seen = RecentMessageIDs(capacity: configuration.deduplicationWindow)
        maximumSendBody = Self.assumedSendLimit(configuration)
        receiveLimit = configuration.maximumFrameBody
        readsPresenceBatches = configuration.readsPresenceBatches
    }

    /// What a SEND body may be before the server has said: the frame limit less what the server adds.
    static func assumedSendLimit(_ configuration: IMClientConfiguration) -> Int {
        max(0, configuration.maximumFrameBody - IMClientConfiguration.maximumMessageOverhead)
    }

    // MARK: Inputs

    /// Connect for the first time. Ignored unless idle.
    public mutating func start(now: LoopInstant) -> [IMClientAction] {
        guard phase == .idle else { return [] }
        if isNetworkReachable { connect(now: now) } else { waitForNetwork() }
        return takeActions()
    }

    /// The transport of `generation` finished its handshake.
    public mutating func transportOpened(generation opened: UInt64, now: LoopInstant) -> [IMClientAction] {
        guard phase == .connecting(opened) else { return [] }
        let login = IMLoginAttempt(
            user: configuration.user, password: configuration.password,
            keepaliveSeconds: UInt32(clamping: Int64(configuration.heartbeat.longestInterval.secondsDouble.rounded(.up))),
            clientName: configuration.clientName, clientInstance: configuration.clientInstance,
            existingAccountOnly: configuration.existingAccountOnly, readsPresenceBatches: readsPresenceBatches)
        let serial = takeSerial()
        phase = .loggingIn(opened, serial: serial)
        lastReceived = now
        report(.loggingIn)
        write(IMFrame(command: .login, serial: serial, message: login.wire), now: now, expectsAnswer: true)
        return takeActions()
    }

    /// The transport of `generation` closed by itself (not because an action asked for it).
    public mutating func transportClosed(generation closed: UInt64, reason: IMLinkCloseReason, now: LoopInstant) -> [IMClientAction] {
        switch phase {
        case .connecting(closed):
            // Never open: an attempt that failed, not a disconnect.
            loginDeadline = nil
            scheduleReconnect(now: now, after: .transport(reason))
        case .loggingIn(closed, _), .online(closed), .closing(closed, _):
            drop(.transport(reason), now: now, transportAlreadyClosed: true)
        default:
            break  // stale: an older transport's late callback
        }
        return takeActions()
    }

    /// The current transport's byte stream is not valid frames.
    public mutating func protocolError(generation failed: UInt64, _ error: IMFrameError, now: LoopInstant) -> [IMClientAction] {
        guard currentGeneration == failed, isTransportOpen else { return [] }
        drop(.protocolError(error), now: now)
        return takeActions()
    }

    /// A frame arrived on the transport of `generation`.
    public mutating func frameReceived(_ frame: IMFrame, generation from: UInt64, now: LoopInstant) -> [IMClientAction] {
        guard currentGeneration == from, isTransportOpen else { return [] }
        lastReceived = now
        lateGrace.startOver()
        do {
            try handle(frame, now: now)
        } catch {
            drop(.protocolError(error), now: now)
        }
        if isTransportOpen { refreshAnswerDeadline(now: now) }
        return takeActions()
    }

    /// Whether `frame` is a notice (PRESENCE, PRESENCE_BATCH, MEMBERSHIP): all the machine does with
    /// one is ``noticeReceived(generation:now:)``'s bookkeeping and reporting it as ``IMClientAction/notice(_:)``.
    public static func isNotice(_ frame: IMFrame) -> Bool {
        switch frame.command {
        case .presence, .presenceBatch, .membership: return true
        default: return false
        }
    }

    /// What ``noticeReceived(generation:now:)`` decided.
    public enum NoticeReceipt: Equatable, Sendable {
        /// From a stale transport: dropped, as ``frameReceived(_:generation:now:)`` drops it.
        case stale
        /// Report it; ``nextDeadline`` is what it was.
        case report
        /// Report it; ``nextDeadline`` moved (the answer deadline started over, or ended).
        case movedDeadline
    }

    /// A notice (``isNotice(_:)``) arrived on the transport of `generation`: exactly what
    /// ``frameReceived(_:generation:now:)`` does with it, without an array of actions. Unless stale,
    /// the owner reports it as `frameReceived`'s one action, ``IMClientAction/notice(_:)``, would, and
    /// asks for ``nextDeadline`` only when it moved. A crowd's logins bring a client a notice per
    /// contact: the action array was an allocation per frame, the deadline Duration arithmetic.
    public mutating func noticeReceived(generation from: UInt64, now: LoopInstant) -> NoticeReceipt {
        guard currentGeneration == from, isTransportOpen else { return .stale }
        lastReceived = now
        lateGrace.startOver()
        let before = answerDeadline
        refreshAnswerDeadline(now: now)
        return answerDeadline == before ? .report : .movedDeadline
    }

    /// Whether ``endOfInput(generation:now:)`` has anything to do: deliveries wait for their
    /// DELIVER_ACK. A read of notices leaves none, and its owner then skips the call (and the clock).
    /// Mutating, though it changes nothing, for the reason ``deadlineInPlace()`` is: a computed
    /// property read from another module copied the whole machine, once per read.
    public mutating func awaitsEndOfInput() -> Bool { !unacknowledged.isEmpty }

    /// Every frame of one read of the transport of `generation` was given to ``frameReceived(_:generation:now:)``:
    /// the DELIVER_ACK for what they delivered goes out now, in one frame.
    public mutating func endOfInput(generation from: UInt64, now: LoopInstant) -> [IMClientAction] {
        guard currentGeneration == from, isTransportOpen, !unacknowledged.isEmpty else { return [] }
        var ack = IMDeliverAck()
        ack.seqs = unacknowledged
        unacknowledged.removeAll(keepingCapacity: true)
        write(IMFrame(command: .deliverAck, serial: takeSerial(), message: ack), now: now, expectsAnswer: false)
        return takeActions()
    }

    /// Whatever deadline ``nextDeadline`` named has (perhaps) passed.
    /// - Parameter inputWaiting: the transport holds the peer's bytes unread (`IMFrameLink.hasUnreadInput`).
    ///   A login or answer deadline that passes then was missed by a busy loop, not by a silent peer:
    ///   it moves ``lateAnswerGrace`` on instead of dropping the connection, so the bytes get read
    ///   (and any frame starts the wait over).
    public mutating func timerFired(now: LoopInstant, inputWaiting: Bool = false) -> [IMClientAction] {
        // Once until the next frame: bytes that keep waiting without ever making a frame do not
        // keep a silent connection alive.
        if let silence = [loginDeadline, answerDeadline].compactMap({ $0 }).min(),
            case .extend(let until) = lateGrace.judge(silence, now: now, peerBytesWaiting: { inputWaiting })
        {
            if let deadline = loginDeadline, now >= deadline { loginDeadline = until }
            if let deadline = answerDeadline, now >= deadline { answerDeadline = until }
        }
        if let deadline = loginDeadline, now >= deadline {
            loginDeadline = nil
            if case .connecting(let current) = phase {
                actions.append(.closeTransport(generation: current, graceful: false))
                scheduleReconnect(now: now, after: .loginTimeout)
            } else {
                drop(.loginTimeout, now: now)
            }
        }
        if let deadline = answerDeadline, now >= deadline {
            drop(.answerTimeout(configuration.answerTimeout), now: now)
        }
        if let deadline = closeDeadline, now >= deadline {
            finishClose(now: now)
        }
        if case .waitingToReconnect(let at) = phase, now >= at {
            connect(now: now)
        }
        if case .online = phase {
            transmitDue(now: now)
            if pendingHeartbeat == nil, now >= heartbeatDue {
                let serial = takeSerial()
                pendingHeartbeat = PendingHeartbeat(serial: serial, quiet: now - lastTraffic)
                write(IMFrame(command: .heartbeat, serial: serial), now: now, expectsAnswer: true)
            }
        }
        return takeActions()
    }

    /// Whether the login or answer deadline has passed: only then does ``timerFired(now:inputWaiting:)``
    /// need to know whether the peer's bytes wait unread (asking costs the transport a syscall).
    public func hasSilenceDeadlinePassed(now: LoopInstant) -> Bool {
        if let loginDeadline, now >= loginDeadline { return true }
        if let answerDeadline, now >= answerDeadline { return true }
        return false
    }

    /// How long a login or answer deadline that passed with the peer's bytes unread waits for the
    /// loop to read them before it is judged again.
    public static var lateAnswerGrace: Duration { SilenceDeadline.defaultGrace }

    /// A person asked to try now (the terminal client's retry key): while waiting out a reconnect
    /// backoff, connects at once, as the attempt it was waiting for; in any other phase, nothing.
    public mutating func retryNow(now: LoopInstant) -> [IMClientAction] {
        if case .waitingToReconnect = phase { connect(now: now) }
        return takeActions()
    }

    /// The reachability of the server's network changed.
    public mutating func networkChanged(reachable: Bool, reason: String, now: LoopInstant) -> [IMClientAction] {
        if !reachable {
            let wasReachable = isNetworkReachable
            isNetworkReachable = false
            networkProblem = reason
            switch phase {
            case .connecting(let current):
                loginDeadline = nil
                actions.append(.closeTransport(generation: current, graceful: false))
                waitForNetwork()
            case .loggingIn, .online:
                drop(.networkUnreachable(reason), now: now)
            case .waitingToReconnect:
                waitForNetwork()
            case .waitingForNetwork where wasReachable || reason != networkProblem:
                report(.waitingForNetwork(reason))
            default:
                break
            }
        } else if !isNetworkReachable {
            isNetworkReachable = true
            networkProblem = ""
            heartbeat.networkChanged()
            if phase == .waitingForNetwork {
                // The failures were the network's, not the server's: start the schedule afresh.
                backoff.reset()
                connect(now: now)
            }
        }
        return takeActions()
    }

    /// Queues a message. It goes out at once when online (and not paused by the server's rate
    /// limit), otherwise after the next login.
    /// - Returns: the message's id (`id`, or a new UUID).
    /// - Throws: ``IMClientError``: ``IMClientError/messageTooLarge(bytes:limit:)`` when its SEND body
    ///   is over ``maximumSendBody`` (the server would refuse it: it is never queued),
    ///   ``IMClientError/messageIDTooLong(bytes:limit:)``, ``IMClientError/outboxFull(limit:)``,
    ///   ``IMClientError/duplicateID(_:)``, ``IMClientError/closed``.
    public mutating func send(text: String, to recipient: IMRecipient, id: String? = nil, now: LoopInstant) throws(IMClientError) -> (
        id: String, actions: [IMClientAction]
    ) {
        if case .closed = phase { throw .closed }
        if case .closing = phase { throw .closed }
        var message = IMChatMessage()
        message.id = id ?? UUIDText.random()
        message.text = text
        message.to = recipient.wire
        let idBytes = message.id.utf8.count
        guard idBytes <= IMClientConfiguration.maximumMessageIDBytes else {
            throw .messageIDTooLong(bytes: idBytes, limit: IMClientConfiguration.maximumMessageIDBytes)
        }
        let bodySize = Self.bodySize(of: message)
        guard bodySize <= maximumSendBody else { throw .messageTooLarge(bytes: bodySize, limit: maximumSendBody) }
        try outbox.enqueue(message, bodySize: bodySize)
        actions.append(.deliveryChanged(id: message.id, .queued))
        if case .online = phase { transmitDue(now: now) }
        return (message.id, takeActions())
    }

    /// The length of `message` encoded as a SEND body.
    static func bodySize(of message: IMChatMessage) -> Int {
        IMFrame(command: .send, serial: 0, message: message).body.count
    }

    /// Writes an application request (JOIN, LEAVE, LIST_ROOMS, HISTORY) on the online connection. Its
    /// answer comes back as ``IMClientAction/response(serial:_:)``, or ``IMClientAction/requestLost(serial:_:)``
    /// if the connection ends first. Not queued while offline: these are questions whose answer is
    /// only useful now.
    /// - Returns: the request's serial.
    /// - Throws: ``IMClientError/notOnline``, or ``IMClientError/closed``.
    public mutating func request(_ command: IMCommand, body: [UInt8], now: LoopInstant) throws(IMClientError) -> (
        serial: UInt32, actions: [IMClientAction]
    ) {
        precondition(command.isApplicationRequest, "\(command) is not an application request")
        if case .closed = phase { throw .closed }
        guard case .online = phase else { throw .notOnline }
        let serial = takeSerial()
        pendingRequests.insert(serial)
        write(IMFrame(command: command, serial: serial, body: body), now: now, expectsAnswer: true)
        return (serial, takeActions())
    }

    /// Ends the client for good: settles unacknowledged messages with the server if it is online,
    /// logs out, closes. No reconnect follows.
    public mutating func close(now: LoopInstant) -> [IMClientAction] {
        switch phase {
        case .closed, .closing:
            return []
        case .online(let current):
            failNeverSent(.clientClosed)
            let unsettled = outbox.unsettledIDs
            if !unsettled.isEmpty {
                var request = IMAbandonRequest()
                request.ids = unsettled
                outbox.markAbandonSent(unsettled)
                write(IMFrame(command: .abandon, serial: takeSerial(), message: request), now: now, expectsAnswer: true)
            }
            let serial = takeSerial()
            phase = .closing(current, logoutSerial: serial)
            closeDeadline = now + configuration.closeTimeout
            report(.closing)
            write(IMFrame(command: .logout, serial: serial), now: now, expectsAnswer: true)
        default:
            finishClose(now: now)
        }
        return takeActions()
    }

    /// When the machine next wants ``timerFired(now:)``; `nil` when nothing is timed.
    public var nextDeadline: LoopInstant? {
        // Asked after every frame a client reads: no array of the three fixed deadlines.
        var earliest: LoopInstant?
        func consider(_ instant: LoopInstant?) {
            guard let instant else { return }
            earliest = min(earliest ?? instant, instant)
        }
        consider(loginDeadline)
        consider(answerDeadline)
        consider(closeDeadline)
        switch phase {
        case .waitingToReconnect(let at):
            consider(at)
        case .online:
            if let pausedUntil {
                consider(pausedUntil)  // resends wait for the pause too
            } else {
                consider(outbox.earliestResend)
            }
            if pendingHeartbeat == nil { consider(heartbeatDue) }
        default:
            break
        }
        return earliest
    }

    /// ``nextDeadline``, for an owner that keeps the machine in a stored property of a class (as
    /// ``IMClient`` does) and asks after every input. Mutating, though it changes nothing: a mutating
    /// call works on the stored machine in place, where reading a computed property of it from
    /// another module copies the whole machine first — every array, set and string in it retained
    /// and released, once per frame read.
    public mutating func deadlineInPlace() -> LoopInstant? { nextDeadline }

    // MARK: Introspection

    /// The heartbeat interval in force now.
    public var heartbeatInterval: Duration { heartbeat.interval }
    /// The adaptive heartbeat's learning, in adaptive mode.
    public var adaptiveHeartbeat: AdaptiveHeartbeat? { heartbeat.adaptive }
    /// Messages not yet settled (queued, in flight or being abandoned), in send order, as they are
    /// sent: not stored yet, so `from` is empty and `seq` and `sentAtMilliseconds` are 0.
    public var unsettledMessages: [IMMessage] { outbox.messages.map(IMMessage.init) }
    /// Reconnect attempts since the last session that stayed online for
    /// ``IMClientConfiguration/stableSessionTime`` (or since the start).
    public var reconnectAttempts: Int { backoff.attempts }
    /// Incoming messages the server sent again (its copy of our ack was lost) that de-duplication kept
    /// from the application.
    public internal(set) var duplicatesDropped = 0

    // MARK: Internals shared by the inputs

    var currentGeneration: UInt64? {
        switch phase {
        case .connecting(let current), .loggingIn(let current, _), .online(let current), .closing(let current, _):
            return current
        default:
            return nil
        }
    }

    var isTransportOpen: Bool {
        switch phase {
        case .loggingIn, .online, .closing: return true
        default: return false
        }
    }

    var lastTraffic: LoopInstant { max(lastSent, lastReceived) }
    /// A beat is due when this side has sent nothing for the interval: the server's keepalive rule
    /// counts only what arrives from the client, so frames the server sends (presence notices that
    /// need no answer) must not hold the beat back. Whether the server is alive is the answer
    /// deadline's job: everything this side sends that expects an answer arms it.
    var heartbeatDue: LoopInstant { lastSent + min(heartbeat.interval, grantedKeepalive ?? heartbeat.interval) }

    mutating func takeActions() -> [IMClientAction] {
        defer { actions.removeAll(keepingCapacity: true) }
        return actions
    }

    mutating func takeSerial() -> UInt32 {
        defer { nextSerial = nextSerial == .max ? 1 : nextSerial + 1 }
        return nextSerial
    }

    mutating func report(_ newState: IMConnectionState) {
        guard newState != state else { return }
        state = newState
        actions.append(.stateChanged(newState))
    }

    mutating func write(_ frame: IMFrame, now: LoopInstant, expectsAnswer: Bool) {
        actions.append(.write(frame))
        lastSent = now
        if expectsAnswer, answerDeadline == nil { answerDeadline = now + configuration.answerTimeout }
    }

    /// Whether anything sent still waits for an answer: only then may silence kill the connection.
    var isExpectingAnswer: Bool {
        switch phase {
        case .loggingIn, .closing: return true
        case .online: return pendingHeartbeat != nil || outbox.isAwaitingAnswer || !pendingRequests.isEmpty
        default: return false
        }
    }

    /// Any frame proves the peer alive: the wait starts over if something is still expected.
    mutating func refreshAnswerDeadline(now: LoopInstant) {
        answerDeadline = isExpectingAnswer ? now + configuration.answerTimeout : nil
    }

    mutating func connect(now: LoopInstant) {
        generation += 1
        phase = .connecting(generation)
        receiveLimit = configuration.maximumFrameBody
        loginDeadline = now + configuration.loginTimeout
        answerDeadline = nil
        lateGrace.startOver()
        pendingHeartbeat = nil
        actions.append(.openTransport(generation: generation))
        report(.connecting(attempt: max(1, backoff.attempts)))
    }

    mutating func waitForNetwork() {
        phase = .waitingForNetwork
        report(.waitingForNetwork(networkProblem))
    }

    /// The open transport is finished: report it once, learn from it, and plan what comes next.
    mutating func drop(_ reason: IMDisconnectReason, now: LoopInstant, transportAlreadyClosed: Bool = false) {
        guard let current = currentGeneration else { return }
        let wasClosing: Bool
        if case .closing = phase { wasClosing = true } else { wasClosing = false }
        if !transportAlreadyClosed {
            actions.append(.closeTransport(generation: current, graceful: false))
        }
        if isTransportOpen { actions.append(.disconnected(reason)) }
        if let beat = pendingHeartbeat, diedLikeNATTimeout(reason) {
            heartbeat.recordNATLikeFailure(afterQuiet: beat.quiet)
        }
        pendingHeartbeat = nil
        answerDeadline = nil
        loginDeadline = nil
        outbox.connectionLost()
        // Not acknowledged on that connection: the server sends them again and de-dup drops them.
        unacknowledged.removeAll()
        for serial in pendingRequests.sorted() { actions.append(.requestLost(serial: serial, reason)) }
        pendingRequests.removeAll()
        if let since = onlineSince, now - since >= configuration.stableSessionTime {
            // Only a session that lasted proves the server healthy: one killed right after each
            // login keeps the delays growing.
            backoff.reset()
        }
        onlineSince = nil
        if wasClosing {
            phase = .closed
            finishClose(now: now)
            return
        }
        // A refusal for now (the server is busy checking passwords, the user has too many sessions,
        // the server is stopping or failed to read its accounts) is retried with backoff like a
        // dropped connection; any other refusal is final.
        if case .loginRefused(let code, let text) = reason, !Self.isTemporaryLoginRefusal(code) {
            phase = .closed
            closeForGood(.loginRefused(code, text))
            return
        }
        scheduleReconnect(now: now, after: reason)
    }

    func diedLikeNATTimeout(_ reason: IMDisconnectReason) -> Bool {
        switch reason {
        case .answerTimeout: return true
        case .transport(.failed(.reset)), .transport(.failed(.timedOut)): return true
        default: return false
        }
    }

    mutating func scheduleReconnect(now: LoopInstant, after reason: IMDisconnectReason) {
        lastFailure = reason
        if case .transport(.failed(let failure)) = reason, failure.isFinal {
            phase = .closed
            closeForGood(.secureConnectionFailed(failure))
            return
        }
        guard isNetworkReachable else { return waitForNetwork() }
        let floor = retryFloor
        retryFloor = nil
        guard var delay = backoff.nextDelay(jitter: configuration.jitter) else {
            phase = .closed
            closeForGood(.gaveUp(attempts: backoff.attempts, last: reason))
            return
        }
        if let floor {
            // Every client the server turned away heard the same time: up to a quarter more, at
            // random, so they do not all come back in the same instant.
            let spread = Double(floor.nanosecondsClamped) * Self.retryFloorSpread * configuration.jitter.next()
            delay = max(delay, floor + .nanoseconds(Int64(spread)))
        }
        phase = .waitingToReconnect(at: now + delay)
        report(.reconnecting(in: delay, attempt: backoff.attempts))
    }

    /// Closing ends here, whether the server answered the logout or not.
    mutating func finishClose(now: LoopInstant) {
        if let current = currentGeneration {
            let wasOpen = isTransportOpen
            actions.append(.closeTransport(generation: current, graceful: true))
            if wasOpen { actions.append(.disconnected(.userClosed)) }
        }
        phase = .closed
        closeForGood(.userClosed)
    }

    mutating func closeForGood(_ reason: IMClosedReason) {
        answerDeadline = nil
        loginDeadline = nil
        closeDeadline = nil
        pendingHeartbeat = nil
        failNeverSent(.clientClosed)
        for id in outbox.unsettledIDs { settle(id, .failed(.outcomeUnknown)) }
        report(.closed(reason))
    }
}

/// Random (version 4) UUIDs as text, for message ids.
package enum UUIDText {
    /// A random (version 4) UUID in its lowercase 8-4-4-4-12 text form. Made for every client's
    /// instance, every message sent without an id and every server session: two random words written
    /// by ``text(high:low:)`` (a string per hex pair and their joins cost some 100,000 instructions).
    package static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        let high: UInt64 = generator.next()
        let low: UInt64 = generator.next()
        // Version 4 in the top nibble of the seventh byte, variant 10 in the top bits of the ninth.
        return text(high: high & ~0xF000 | 0x4000, low: low & ~(0b11 << 62) | (0b10 << 62))
    }

    /// The UUID whose first eight bytes are `high` and last eight `low` (most significant first), as
    /// lowercase 8-4-4-4-12 text.
    package static func text(high: UInt64, low: UInt64) -> String {
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 36) { text in
            var at = 0
            for index in 0..<32 {
                if index == 8 || index == 12 || index == 16 || index == 20 {
                    text[at] = UInt8(ascii: "-")
                    at += 1
                }
                let word = index < 16 ? high : low
                text[at] = digits.utf8Start[Int((word >> UInt64(60 - 4 * (index % 16))) & 0xF)]
                at += 1
            }
            return at
        }
    }
}

extension IMClientMachine {
    /// Login refusals worth another attempt: the same request may succeed later.
    static func isTemporaryLoginRefusal(_ code: IMStatusCode) -> Bool {
        switch code {
        case .rateLimited, .tooManyConnections, .shuttingDown, .internalError: return true
        default: return false
        }
    }

    /// How far above the server's `retry_after_ms` a reconnect may be put off at random, as a share of it.
    static var retryFloorSpread: Double { 0.25 }
}
