import Logging
package import RunLoopIMCore
import RunLoopKit
public import RunLoopNet

/// One client's connection on an ``IMServer``: its ``IMFrameLink`` (TCP,
/// or WebSocket through `RunLoopIMWebSocket`) and the session's ``IMServerSessionMachine``, whose
/// deadlines the server's ``SessionDeadlines`` keep. Created by the server; loop thread only.
public final class IMServerSession {
    /// The logged-in user, once logged in (still set after the session ended, for its last reports).
    /// The machine's, which keeps it past the end: a copy here cost every session 16 bytes.
    public var user: String? { wentOnline ? machine.loggedInUser : nil }
    /// The client's address: the link's, which keeps it for its whole life (a copy here cost every
    /// session 32 bytes).
    public var remoteAddress: SocketAddress? { link.remoteAddress }
    /// How long the client may stay silent (1.5 × its keepalive), once logged in.
    public var silenceLimit: Duration? { machine.silenceLimit }
    /// The connection underneath: frames in and out, in the client's encoding.
    public let link: any IMFrameLink

    // Every idle connection keeps these (issue 22): the order leaves the least padding between them.
    weak var server: IMServer?
    /// The server's timer for the machine's deadlines, shared by its sessions.
    private let deadlines: SessionDeadlines
    /// Its last field is one byte: the flags and the place below fill the padding after it.
    /// Unchecked exclusivity: two runtime checks a heartbeat otherwise. Loop thread only, and the
    /// machine is pure: none of its calls reaches back into the session.
    @exclusivity(unchecked) private(set) var machine: IMServerSessionMachine
    private(set) var isEnded = false
    /// Set by the server when the login it is answering made the account: LOGIN_ACK says so.
    var accountCreated = false
    /// The `.online` action was carried out: the server counts the session as its user's.
    private var wentOnline = false
    /// Its index in the server's open sessions, a ``PlacedArray``.
    var placeInOpen = PlacedArray<IMServer.OpenPlace>.notPlaced
    /// This session's place in `deadlines`. Unchecked exclusivity: `SessionDeadlines` reads and writes
    /// it several times for every renewal, each a runtime check otherwise; loop thread only, and no
    /// access overlaps another.
    @exclusivity(unchecked) var deadline = SessionDeadlines.Slot()
    /// What this connection owes the client from the user's inbox, and what waits for its DELIVER_ACK.
    private(set) var window: DeliveryWindow
    /// The client instance its login named, once online under it: with ``user``, its key in the
    /// server's table of instances online (LoginGate), where it is looked for when it ends.
    var onlineInstance: ClientInstanceID?

    init(link: any IMFrameLink, server: IMServer) {
        self.link = link
        self.server = server
        machine = IMServerSessionMachine(sharing: server.sessionSettings, now: link.loop.now)
        window = DeliveryWindow(maximumMessages: server.settings.deliveryWindowMessages, maximumBytes: server.settings.deliveryWindowBytes)
        deadlines = server.sessionDeadlines(for: link.modes)
        // The link reports to this session's methods through one unowned reference (IMFrameLinkDelegate):
        // six closures, or a box holding the session weakly for them, cost every connection 120 bytes.
        link.open(IMFrameLinkEvents(owner: self))
        deadlines.schedule(self, at: machine.nextDeadline)
    }

    // Nothing refers to a session weakly: a single weak reference gives it a side table for life (48
    // bytes, and a cache line each heartbeat, issue 22). The two that hold it unowned — its link's
    // events and its deadlines' table — let go of it when it ends; a session its server let go without
    // ending it makes them let go here, so neither is left pointing at freed memory.
    deinit {
        deadlines.forget(self)
        if !isEnded { link.abort() }
    }

    /// The machine's deadline passed (``SessionDeadlines``).
    func deadlinePassed() {
        apply(machine.timerFired(now: link.loop.now, inputWaiting: link.hasUnreadInput))
    }

    /// Logged in: the user's inbox starts to flow, a window at a time.
    func startDelivery() { refill() }

    /// A message was just stored for this session's user: it goes at once if the session has caught up
    /// with the inbox, its window has room and it follows on in its conversation; otherwise it waits
    /// in the inbox for its turn (read at once when the window has room: a gap in the conversation).
    /// `frame` is its DELIVER (serial 0), encoded once for every session it goes to.
    func deliverLive(_ message: IMMessage, as frame: IMFrame) {
        guard !isEnded, machine.user != nil else { return }
        guard window.offerLive(message, bytes: frame.body.count) else { return refill() }
        send(frame, of: message)
    }

    /// The session's user sent `message` (from any session): it is no gap in its conversation here.
    func ownMessageStored(_ message: IMMessage) {
        window.passed(message)
    }

    /// The store may hold messages for this user that no live delivery brought (another node's, which
    /// the cluster's bus lost): read the inbox again.
    func rereadInbox() {
        window.storeMayHaveMore()
        refill()
    }

    /// Tells the client the server is stopping, then closes gracefully.
    func shutdown() { apply(machine.shutdown()) }

    func acknowledged(_ seqs: [UInt64]) {
        let before = window.unacknowledgedCount
        let freed = window.acknowledged(seqs)
        server?.metrics.unacknowledgedChanged(by: window.unacknowledgedCount - before)
        if freed { refill() }
    }

    /// How long after a failed inbox read the session reads again, if no acknowledgement came first.
    static let readRetryDelay = Duration.seconds(1)

    /// Reads the inbox past what the window sent of each conversation, one read at a time: its answer is sent as far as the
    /// window admits and, while the session is still behind with room, the next read follows. Also the
    /// server's retry after a failed read (``IMServer/retryInboxRead(of:at:)``).
    func refill() {
        guard let server, let user = machine.user, !isEnded, window.isRefillDue else { return }
        let asked = window.freeMessages
        window.readStarted()
        // Held by the answer (no weak reference: see deinit), which the store gives on the loop's thread:
        // a session that ended meanwhile only counts the read as done.
        server.callStore(timed: .inbox, { server.store.undelivered(for: user, after: self.window.sentThrough, limit: asked, completion: $0) }) {
            [self] result in inboxRead(result, asked: asked)
        }
    }

    private func inboxRead(_ result: Result<[IMMessage], IMStoreFailure>, asked: Int) {
        switch result {
        case .failure(let failure):
            window.readFailed()
            guard !isEnded else { return }
            server?.logger.error("inbox of \(user ?? "?") not read, again in \(formatSeconds(Self.readRetryDelay)): \(failure)")
            server?.retryInboxRead(of: self, at: link.loop.now + Self.readRetryDelay)
        case .success(let batch):
            window.readFinished(asked: asked, got: batch.count)
            for message in batch {
                guard !isEnded else { return }
                let frame = IMFrame(command: .deliver, serial: 0, message: message.wire)
                // Full by bytes: the rest is read again once an acknowledgement frees room.
                guard window.admits(bytes: frame.body.count) else { return window.stoppedRefill() }
                send(frame, of: message)
            }
            refill()
        }
    }

    private func send(_ deliver: IMFrame, of message: IMMessage) {
        var frame = deliver
        frame.header.serial = machine.takeSerial()
        let before = window.unacknowledgedCount
        window.sent(message, bytes: frame.body.count)
        server?.metrics.messageDelivered()
        server?.metrics.unacknowledgedChanged(by: window.unacknowledgedCount - before)
        write(frame)
    }

    /// Resets the connection without a word (``IMServer/abort()``).
    func abort() {
        link.abort()
        apply(machine.transportClosed("aborted by the server"))
    }

    func write(_ frame: IMFrame) {
        // Every SEND_ACK passes here, the machine's refusals (rate, size) and the store's alike.
        if frame.command == .sendAck, let code = frame.code, code != .ok { server?.metrics.sendRefused(code) }
        // Not through write(_ frames:): every DELIVER of a room's fan-out passes here, and a
        // one-frame array would be an allocation per member.
        write(bytes: FrameHeader.size + frame.body.count) { () throws(IMLinkFailure) in try link.send(frame) }
    }

    /// Writes frames in one go (a presence snapshot or announcement).
    func write(_ frames: [IMFrame]) {
        guard !frames.isEmpty else { return }
        let bytes = frames.reduce(0) { $0 + FrameHeader.size + $1.body.count }
        write(bytes: bytes) { () throws(IMLinkFailure) in
            if frames.count == 1 { try link.send(frames[0]) } else { try link.send(frames) }
        }
    }

    /// Runs `send` (`bytes` of frames) unless the client's unread output would pass the server's limit.
    private func write(bytes: Int, _ send: () throws(IMLinkFailure) -> Void) {
        guard !isEnded else { return }
        if let server, link.bufferedOutputBytes + bytes > server.settings.maximumBufferedOutput {
            // A client that asks and does not read: told why (the ERROR goes past this check, within
            // the transport's larger limit), then closed; its inbox stays as it was.
            return apply(machine.tooSlow(bufferedBytes: link.bufferedOutputBytes))
        }
        do {
            try send()
        } catch {
            // The transport refused it (closed, or its own limit): nothing more can reach this client.
            link.abort()
            apply(machine.transportClosed("write failed: \(error)"))
        }
    }

    /// Writes what the machine decided, past the output check (an ERROR must reach a slow reader).
    private func writeDecided(_ frame: IMFrame) {
        guard !isEnded else { return }
        do {
            try link.send(frame)
        } catch {
            link.abort()
            apply(machine.transportClosed("write failed: \(error)"))
        }
    }

    private func apply(_ actions: [IMServerSessionAction]) {
        for action in actions {
            // A write inside this batch may have ended the session (a slow reader, a failed link):
            // what the batch decided after that is moot — above all, an ended session never goes online.
            guard !isEnded else { break }
            switch action {
            case .write(let frame):
                if frame.command == .error { writeDecided(frame) } else { write(frame) }
            case .authenticate(let request):
                server?.authenticate(request, for: self)
            case .online(let user):
                wentOnline = true
                server?.sessionOnline(self, user: user)
            case .request(let frame):
                do {
                    try server?.handleRequest(frame, from: self)
                } catch {
                    apply(machine.protocolError(error.statusCode, error.description, serial: frame.serial))
                }
            case .end(let reason):
                end(reason)
            }
        }
        deadlines.schedule(self, at: machine.nextDeadline)
    }

    /// The server's answer to the LOGIN (IMServer+Logins), maybe much later (an authenticator hashing a
    /// password off the loop, a failure delay); a session that ended meanwhile ignores it.
    func loginAccepted(as user: String) {
        guard !isEnded, let server else { return }
        apply(
            machine.loginAccepted(
                user: user, sessionID: UUIDText.random(),
                serverTimeMilliseconds: server.wallClockMilliseconds(), accountCreated: accountCreated, now: link.loop.now))
    }

    func loginRefused(_ code: IMStatusCode, reason: String, retryAfter: Duration? = nil, accountUnknown: Bool = false) {
        guard !isEnded else { return }
        server?.metrics.loginRefused(code)
        apply(machine.loginRefused(code, reason: reason, retryAfter: retryAfter, accountUnknown: accountUnknown, now: link.loop.now))
    }

    /// Ends the session with ERROR `code`, then a close: one replaced by a newer login of its client
    /// instance (serial 0), or one that sent a request nothing on the server serves (its serial).
    func end(with code: IMStatusCode, _ text: String, serial: UInt32 = 0) {
        apply(machine.protocolError(code, text, serial: serial))
    }

    private func end(_ reason: IMSessionEndReason) {
        guard !isEnded else { return }
        isEnded = true
        deadlines.schedule(self, at: nil)
        server?.cancelInboxRetry(of: self)
        // What it had out stays in the inbox for the next session: no longer awaited here.
        server?.metrics.unacknowledgedChanged(by: -window.unacknowledgedCount)
        link.close(for: reason)
        server?.sessionEnded(self, reason: reason)
    }
}

extension IMServerSession: IMFrameLinkDelegate {
    package func linkReceived(_ frame: IMFrame) {
        guard !isEnded else { return }
        guard frame.command == .heartbeat else { return apply(machine.frameReceived(frame, now: link.loop.now)) }
        // Every idle connection's only frame: answered without the machine's action list, and written
        // at once rather than at the pass's end when nothing else waits for this link.
        let (ack, next) = machine.heartbeatAnswered(serial: frame.serial, now: link.loop.now)
        if let ack {
            write(bytes: FrameHeader.size + ack.body.count) { () throws(IMLinkFailure) in try link.sendAlone(ack) }
        }
        // A write that ended the session (a slow reader, a failed link) ended its machine too, whose
        // deadline is then none: what `next` said before the write no longer holds.
        deadlines.schedule(self, at: isEnded ? nil : next)
    }

    package func linkReceivedOversized(_ header: FrameHeader, bodyPrefix: [UInt8], limit: Int) {
        guard !isEnded else { return }
        apply(machine.oversizedFrameReceived(header, bodyPrefix: bodyPrefix, limit: limit, now: link.loop.now))
    }

    package func linkFailed(_ error: IMFrameError, serial: UInt32) {
        apply(machine.protocolError(error.statusCode, error.description, serial: serial))
    }

    package func linkClosed(_ reason: IMLinkCloseReason) {
        apply(machine.transportClosed("\(reason)"))
    }
}

extension IMServer {
    /// The session settings for a session opening now, shared with the others opened since the
    /// settings last changed.
    var sessionSettings: IMServerSessionMachine.SharedSettings {
        if let sharedSessionSettings { return sharedSessionSettings }
        let made = IMServerSessionMachine.SharedSettings(settings.sessionSettings(largeRoomMembers: applicationHandler?.largeRoomMembers))
        sharedSessionSettings = made
        return made
    }
}
