public import CoreMetrics
public import Logging
public import RunLoopIMCore
public import RunLoopKit
public import RunLoopNet
public import RunLoopTLS
import SwiftProtobuf

#if canImport(Glibc)
import Glibc
#endif

/// An IM server on a ``RunLoop``: a ``TCPListener`` whose connections become ``IMServerSession``s.
///
/// It answers heartbeats at once, drops clients silent for 1.5 × their announced keepalive (and
/// reports them offline), stores each sent message once through its ``IMServerStore`` and acknowledges
/// it with its sequence once the store committed it, delivers it to every online recipient at once and
/// to the others from their inbox at their next login, each conversation in order, until they
/// acknowledge it.
///
/// Threads: confined to its loop's thread, like ``TCPListener``; every callback runs there.
public final class IMServer {
    /// Server-wide settings. Every limit here is stated in docs/PROTOCOL.md with what a client gets
    /// when it meets it.
    public struct Settings: Sendable {
        /// Login deadline and keepalive rules for each session.
        public var session = IMServerSessionMachine.Settings()
        /// The largest frame body accepted from a client, and the largest the server sends: every
        /// frame it makes (a DELIVER, a HISTORY_PAGE, a ROOM_LIST) is cut or refused to fit, so a client
        /// that enforces the same limit never meets a frame it cannot take.
        public var maximumFrameBody = 64 * 1024
        /// A SEND body over ``maximumSendBody`` but at most this long is read and dropped and answered
        /// SEND_ACK `frameTooLarge` (the session goes on); a longer one, or another command over the
        /// limit, is a protocol error (ERROR `frameTooLarge`, close) — the server will not read without
        /// bound to keep a connection that sent it.
        public var maximumSkippedSendBody = 1024 * 1024
        /// The longest message id, in UTF-8 bytes (SEND_ACK `badRequest` beyond).
        public var maximumMessageIDBytes = 128
        /// DELIVERs one session may have unacknowledged at once (``DeliveryWindow``).
        public var deliveryWindowMessages = 100
        /// DELIVER body bytes one session may have unacknowledged at once.
        public var deliveryWindowBytes = 256 * 1024
        /// Output a session may leave unread before it is ended with ERROR `tooSlow` (its inbox stays
        /// intact). Deliveries never fill it — the window bounds them — only answers and notices to a
        /// client that asks and does not read.
        public var maximumBufferedOutput = 4 * 1024 * 1024
        /// At most this many connections at once (`nil`: no limit); the next ones get ERROR
        /// `tooManyConnections` and are closed.
        public var maximumConnections: Int?
        /// At most this many logged-in sessions per user (`nil`: no limit); a login beyond it is
        /// refused with `tooManyConnections`.
        public var maximumSessionsPerUser: Int?
        /// Rooms one user may be a member of (`nil`: no limit); JOIN beyond it: JOIN_ACK `tooManyRooms`.
        public var maximumRoomsPerUser: Int?
        /// Whether PRESENCE notices go to clients when a user comes online or goes offline — to the
        /// user's audience, as the ``IMServer/applicationHandler`` names it (without one: everyone).
        public var broadcastsPresence = true
        /// The most PRESENCE frames of a snapshot (its audience online, right after LOGIN_ACK or a
        /// JOIN) a session gets in one loop pass: the snapshot's first page goes at once, the next
        /// ones a pass apart, until the session has all of its audience online. With no application
        /// (everyone is the audience), the first page only.
        public var presenceSnapshotPage = 500
        /// The most users whose change of presence one loop pass announces (an audience read and
        /// their PRESENCE writes each); more changed at once — sessions closed together — are
        /// announced in the passes after, in the order they changed, so the other users are served
        /// between batches.
        public var presenceChangesPerPass = 1_000
        /// The contacts (the audiences' users, online or not: each is looked up, and told when
        /// online) after which one loop pass settles no more users: an audience decides what a user's
        /// announcement costs, and a thousand users leaving a room of a thousand together would
        /// otherwise be up to a million notices in one pass. Users are settled in batches whose
        /// audiences are asked together (``IMApplicationHandler/presenceAudiences(of:on:completion:)``),
        /// sized to what is left of this at the audience size seen so far in the pass; the batch that
        /// crosses it is told in full, the rest wait for the next pass, in order. At 10,000, a room of
        /// 1,000 leaving together is settled about ten users a pass (Benchmarks/IM-RESULTS.md).
        public var presenceAudiencePerPass = 10_000
        /// The shortest time between two announcements of presence changes: a change after a quiet
        /// interval is announced at the end of its loop pass, changes that follow within the interval
        /// wait for its end and go together, one write per session (docs/PROTOCOL.md §8). `.zero`:
        /// every pass's changes at the end of that pass. The chat node uses 100 ms.
        public var presenceInterval: Duration = .zero
        /// The sessions a second presence announcements may write to on average (0: no bound): after
        /// an announcement that wrote to `n` sessions, the next waits `n / presenceWritesPerSecond`
        /// seconds when that is longer than ``presenceInterval``, at most ``longestPresenceInterval``.
        /// A write costs the server a `send` and the client a read however many notices it carries, so
        /// a crowd's arrivals in many rooms of 1,000 go a second's worth per write instead of about one
        /// each. A single change in a quiet server is not delayed by it. The chat node uses 10,000.
        public var presenceWritesPerSecond = 0
        /// The longest wait ``presenceWritesPerSecond`` puts between two announcements.
        public var longestPresenceInterval: Duration = .seconds(1)
        /// Login admission: checks at once, per-address limits, failure delays (``IMLoginLimits``).
        public var logins = IMLoginLimits()

        public init() {}

        /// The largest SEND body accepted: the frame limit less what the server adds to make the
        /// DELIVER (`from`, `seq`, `sent_at_ms`) and to wrap it in a HISTORY_PAGE.
        public var maximumSendBody: Int { max(0, maximumFrameBody - IMServer.deliverReserve) }

        /// What LOGIN_ACK announces, with the application's large-room size (`nil`: none). Package:
        /// the message is the wire's; the settings it is made of are the public ones above.
        package func limits(largeRoomMembers: Int?) -> IMSessionLimits {
            var limits = IMSessionLimits()
            limits.maxFrameBody = UInt32(clamping: maximumFrameBody)
            limits.maxSendBody = UInt32(clamping: maximumSendBody)
            limits.maxMessageIDBytes = UInt32(clamping: maximumMessageIDBytes)
            limits.deliveryWindowMessages = UInt32(clamping: deliveryWindowMessages)
            limits.deliveryWindowBytes = UInt32(clamping: deliveryWindowBytes)
            limits.maxRoomsPerUser = UInt32(clamping: maximumRoomsPerUser ?? 0)
            // 0 means "no rule" on the wire: a size below 1 (a room of one is large) is announced as 1,
            // which a client reads the same for every room it can be in with anyone else.
            limits.largeRoomMembers = largeRoomMembers.map { UInt32(clamping: max(1, $0)) } ?? 0
            return limits
        }

        /// The session settings with the limits that come from the server's and the application's.
        func sessionSettings(largeRoomMembers: Int?) -> IMServerSessionMachine.Settings {
            var settings = session
            settings.maximumSendBody = maximumSendBody
            settings.limits = limits(largeRoomMembers: largeRoomMembers)
            return settings
        }
    }

    /// Bytes between the frame limit and the largest SEND body (``IMServerSessionMachine/deliverReserve``).
    public static let deliverReserve = IMServerSessionMachine.deliverReserve

    public let loop: RunLoop
    /// The limits in force: a change reaches connections accepted, logins checked and sessions
    /// opened after it (a node's configuration reload); sessions open keep what they started with.
    /// Loop thread.
    public var settings: Settings {
        didSet {
            listener.maximumConnections = settings.maximumConnections
            sharedSessionSettings = nil
        }
    }
    /// The session settings the sessions opened since the last change of ``settings`` share.
    var sharedSessionSettings: IMServerSessionMachine.SharedSettings?
    public let store: any IMServerStore
    public var logger: Logger
    /// A user came online (first session) or went offline (last session ended). Reported once per
    /// change that is still true at the end of the loop pass it happened in — when more than
    /// ``Settings/presenceChangesPerPass`` users changed at once, the others in the passes after.
    public var onPresenceChange: ((IMServer, String, Bool) -> Void)?
    /// A session ended, with why (after it was removed from ``sessions``).
    public var onSessionEnd: ((IMServer, IMServerSession, IMSessionEndReason) -> Void)?
    /// A message was stored for the first time.
    public var onMessageStored: ((IMServer, IMMessage) -> Void)?
    /// A SEND named a message stored before: its client resent it, and the store's answer to the first
    /// SEND may have been lost after its commit, in which case nobody was told of it — neither this
    /// server's sessions (they are, again, now) nor whoever ``onMessageStored`` tells.
    public var onStoredMessageResent: ((IMServer, IMMessage) -> Void)?
    /// Checks logins instead of the store, when set: for checks too slow for the loop's thread (a
    /// password hash), which run elsewhere and call `verdict` back **on the loop's thread** (hop with
    /// `RunLoop.perform(inModes:_:)`). The login deadline keeps running meanwhile.
    public var authenticator: ((IMLoginAttempt, @escaping (IMLoginVerdict) -> Void) -> Void)?
    /// Maps a user name a client wrote (a SEND's recipient, a HISTORY's other user) to the account's
    /// canonical name, for deployments whose names ignore case (``IMLoginVerdict/acceptedAs(user:)``
    /// names sessions the same way). `nil`: names are taken as written. Loop thread; must not block.
    public var canonicalUserName: ((String) -> String)?
    /// Asks the cluster this server is a node of whether one more session of a user may open, for a
    /// limit that holds across nodes (see IMServer+Cluster); `nil`: a server on its own decides alone.
    public var sessionAdmission: IMSessionAdmission?
    /// A session that ``sessionAdmission`` admitted ended (or never went online), with its user: the
    /// cluster counts it no more. Runs on the loop's thread.
    public var onAdmittedSessionEnd: ((String) -> Void)?
    /// Answers the application's requests (rooms, history) from logged-in sessions; `nil`: the server
    /// answers them as unknown commands (ERROR `unknownCommand`, close). Set it before ``listen(host:port:)``.
    public var applicationHandler: (any IMApplicationHandler)? {
        // Its large-room size is announced in LOGIN_ACK: sessions opened from now on announce the new one.
        didSet { sharedSessionSettings = nil }
    }

    /// The TLS identity of the server's own port: `nil` (the default), plaintext; set, every
    /// connection accepted from then on runs a TLS handshake with it before its first frame (one
    /// accepted earlier keeps what it started with — set a new context to reload a certificate
    /// without dropping sessions). Plaintext clients on a TLS port fail their handshake and are
    /// closed. Loop thread; a server context (``TLSConfiguration/server(certificateChainFile:privateKeyFile:)``).
    public var tlsContext: TLSContext? {
        didSet {
            // The refusal is written in plaintext before any handshake: on a TLS port it would
            // only be garbage to the client, so a full TLS server just closes.
            listener.refusalMessage = tlsContext == nil ? Self.serverFull.encoded() : nil
        }
    }

    let listener: TCPListener
    /// Where the links of the server's own port gather their frames until the end of the loop pass,
    /// to write each client's once per pass (a room's fan-out: every DELIVER of a read's SENDs).
    package let writeBatch: LinkWriteBatch
    /// Sessions, logins, messages and store latency, counted where they happen.
    let metrics: IMServerMetrics
    /// The modes its sources run in; work the server or its application defers runs in them too.
    public let modes: [RunLoop.Mode]
    var open = PlacedArray<OpenPlace>()
    /// Where an open session keeps its index in ``open``.
    enum OpenPlace: PlaceKeeper {
        static func place(of session: IMServerSession) -> UInt32 { session.placeInOpen }
        static func setPlace(_ place: UInt32, of session: IMServerSession) { session.placeInOpen = place }
    }
    var byUser: [String: UserSessions] = [:]
    /// Presence is announced once per loop pass, or once per ``Settings/presenceInterval``
    /// (IMServer+Presence): changes wait in the ledger, so many sessions ending at once cost one pass
    /// and never recurse.
    var presence = PresenceLedger()
    /// When the next announcement may go (``Settings/presenceInterval``, ``Settings/presenceWritesPerSecond``).
    var presenceCadence = PresenceCadence()
    /// Contacts the current announcement has gone through (``Settings/presenceAudiencePerPass``).
    var presenceAudienceOfThisPass = 0
    /// The snapshots' pages not sent yet, a page per session per pass (IMServer+Presence).
    var snapshots = PresenceSnapshots<IMServerSession>()
    /// The sessions' login and keepalive deadlines, one timer per set of modes (in practice one).
    var deadlinesByModes: [[RunLoop.Mode]: SessionDeadlines] = [:]
    /// The timers that read a session's inbox again after a failed read (IMServer+InboxRetries), made
    /// for the few sessions whose read failed: a field in every session cost each 8 bytes, and
    /// 16 of its heap chunk with them (issue 22).
    var inboxRetries: [ObjectIdentifier: ProtocolTimer] = [:]
    /// The frames of the announcement being made, while it asks for audiences.
    var presenceOutbox: PresenceOutbox?
    /// Audiences read for the logins since the last announcement, which the next one uses again
    /// (IMServer+Presence); a JOIN anywhere empties it.
    var audiencesOfThisPass: [String: IMPresenceAudience] = [:]
    /// Users the cluster says are online, on this node or another (IMServer+Cluster).
    var clusterOnline: Set<String> = []
    /// Whether ``shutdown(completion:)`` was called: the server's users are not gone, only moving.
    public private(set) var isShuttingDown = false
    /// What ``shutdown(completion:)`` runs once no session is left and no store call is out.
    private var shutdownCompletions: [() -> Void] = []
    /// Store calls (and application requests, which call the store) made and not answered yet.
    package private(set) var storeCallsOut = 0
    /// DELIVER_ACKs not handed to the store yet (IMServer+Acknowledgements).
    var pendingAcknowledgements = PendingAcknowledgements()
    /// Login admission state (IMServer+Logins).
    lazy var loginGate = LoginGate(limits: settings.logins, loop: loop, modes: listener.modes) { [weak self] event in
        self?.loginEventDue(event)
    }

    /// Must be called on the loop's thread.
    /// - Parameter metricsFactory: where the server's metrics go (``IMServerMetrics`` lists them): the
    ///   process-wide `MetricsSystem.factory` by default.
    public init(
        store: any IMServerStore, settings: Settings = Settings(), loop: RunLoop = .current,
        modes: [RunLoop.Mode] = [.common], logger: Logger = Logger(label: "RunLoopIM.server"),
        metricsFactory: any MetricsFactory = MetricsSystem.factory
    ) {
        metrics = IMServerMetrics(factory: metricsFactory)
        self.loop = loop
        self.modes = modes
        self.settings = settings
        self.store = store
        self.logger = logger
        listener = TCPListener(loop: loop, modes: modes, logger: logger)
        writeBatch = LinkWriteBatch(loop: loop, modes: modes)
        listener.maximumConnections = settings.maximumConnections
        listener.refusalMessage = Self.serverFull.encoded()
        listener.onAccept = { [weak self] _, connection in self?.accept(connection) }
    }

    /// What a connection beyond ``Settings/maximumConnections`` is told before it is closed.
    static let serverFull: IMFrame = {
        var notice = IMErrorNotice()
        notice.message = "server full"
        return IMFrame(command: .error, serial: 0, code: .tooManyConnections, message: notice)
    }()

    /// What a plaintext client on a TLS port is told, in plaintext, before it is closed.
    static let tlsOnly: IMFrame = {
        var notice = IMErrorNotice()
        notice.message = "this port speaks TLS only: connect with TLS"
        return IMFrame(command: .error, serial: 0, code: .badRequest, message: notice)
    }()

    /// Listens on an IP literal and port (0: the system picks; read ``port``).
    public func listen(host: String = "127.0.0.1", port: UInt16 = 0) throws(NetError) {
        try listener.listen(host: host, port: port)
    }

    /// The bound port while listening.
    public var port: UInt16 { listener.port }
    /// Open sessions (logged in or not).
    public var sessions: [IMServerSession] { open.all }
    /// How many sessions are open (logged in or not), without listing them.
    public var sessionCount: Int { open.count }
    /// Users with at least one logged-in session.
    public var onlineUsers: [String] { byUser.keys.sorted() }

    /// Stops accepting, tells every client the server is stopping (ERROR `shuttingDown`) and closes
    /// them gracefully. Loop thread only.
    /// - Parameter completion: runs on the loop's thread, in the server's modes, once the last session
    ///   has ended (``sessions`` is empty) and every store call out has been answered (a message whose
    ///   commit is under way is stored or refused before the server says it is done): on a later pass
    ///   of the loop, never inside this call.
    public func shutdown(completion: (() -> Void)? = nil) {
        isShuttingDown = true
        listener.close()
        for session in open.all { session.shutdown() }
        if let completion { shutdownCompletions.append(completion) }
        completeShutdownIfIdle()
    }

    /// Runs the shutdown's completions once no session is left and no store call is out.
    private func completeShutdownIfIdle() {
        guard open.isEmpty, storeCallsOut == 0, !shutdownCompletions.isEmpty else { return }
        let completions = shutdownCompletions
        shutdownCompletions.removeAll()
        // Loop thread by construction (every session callback and public call runs there).
        try? loop.performFromLoopThread(inModes: modes, label: "im.server shutdown") {
            for completion in completions { completion() }
        }
    }

    /// Stops at once, the way a crash would look to clients: no ERROR frame, no flush, every connection
    /// reset. For demos and fault tests; a real stop is ``shutdown()``.
    public func abort() {
        listener.close()
        for session in open.all { session.abort() }
    }

    // MARK: Session callbacks

    private func accept(_ connection: TCPConnection) {
        let (body, skippable) = (settings.maximumFrameBody, settings.maximumSkippedSendBody)
        guard let tlsContext else {
            return adopt(TCPFrameLink(connection: connection, maximumBodyLength: body, skippableSendLength: skippable, batch: writeBatch))
        }
        // The session starts at once; its login deadline covers the handshake as well.
        let session = TLSConnection(accepted: connection, context: tlsContext, logger: logger)
        session.answerToPlaintext = Self.tlsOnly.encoded()
        adopt(TLSFrameLink(connection: session, maximumBodyLength: body, skippableSendLength: skippable, batch: writeBatch))
    }

    /// Runs a session over a link accepted elsewhere — a WebSocket upgrade on an HTTP listener, the
    /// server end of an in-memory link pair in a test — exactly as over the server's own TCP listener:
    /// same login, limits, delivery and reports. The link must be connected already (accepted) and not
    /// yet opened with events: the session opens it. Beyond ``Settings/maximumConnections`` sessions in all, the link
    /// gets ERROR `tooManyConnections` and is closed. Must be called on the loop's thread.
    public func adopt(_ link: any IMFrameLink) {
        if let limit = settings.maximumConnections, open.count >= limit {
            try? link.send(Self.serverFull)
            return link.close(for: .protocolError(.tooManyConnections, "server full"))
        }
        guard admitConnection(link) else { return }
        let session = IMServerSession(link: link, server: self)
        open.insert(session)
    }

    func sessionOnline(_ session: IMServerSession, user: String) {
        byUser[user, default: []].append(session)
        metrics.sessionOnline(on: session.link.transport)
        logger.debug("\(user) online from \(session.remoteAddress?.description ?? "?")")
        presenceChanged(user)
        sendPresenceSnapshot(to: [session], of: user)
        session.startDelivery()
    }

    func sessionEnded(_ session: IMServerSession, reason: IMSessionEndReason) {
        open.remove(session)
        loginSessionEnded(session)
        if let user = session.user {
            byUser[user]?.remove(session)
            metrics.sessionOffline(on: session.link.transport)
            if byUser[user]?.isEmpty == true {
                byUser[user] = nil
                byUser.shrinkIfSparse()
                presenceChanged(user)
            }
            logger.debug("\(user) session ended: \(reason)")
            if sessionAdmission != nil { onAdmittedSessionEnd?(user) }
        }
        onSessionEnd?(self, session, reason)
        completeShutdownIfIdle()
    }

    /// A logged-in client's request: SEND, DELIVER_ACK and ABANDON here; the application's (rooms,
    /// history) go to the ``applicationHandler``.
    /// - Throws: an undecodable body, which ends that session with a protocol error.
    func handleRequest(_ frame: IMFrame, from session: IMServerSession) throws(IMFrameError) {
        guard let user = session.user else { return }
        switch frame.command {
        case .send:
            handleSend(try frame.decode(IMChatMessage.self), serial: frame.serial, from: session, user: user)
        case .deliverAck:
            let seqs = try frame.decode(IMDeliverAck.self).seqs
            acknowledgementReceived(seqs, from: user)
            session.acknowledged(seqs)
        case .abandon:
            let ids = try frame.decode(IMAbandonRequest.self).ids
            callStore(timed: .abandon, { self.store.abandon(ids, from: user, completion: $0) }) { [weak self, session] result in
                var response = IMAbandonResponse()
                switch result {
                case .success(let outcomes): response.results = outcomes.map(\.wire)
                case .failure(let failure):
                    // No outcome for any id: the client asks again, as after a lost answer.
                    self?.logger.error("abandon from \(user) not settled: \(failure)")
                }
                session.write(IMFrame(command: .abandonAck, serial: frame.serial, message: response))
            }
        case let command? where command.isApplicationRequest:
            guard let applicationHandler else {
                return session.end(with: .unknownCommand, "no application serves \(command)", serial: frame.serial)
            }
            storeCallsOut += 1
            do {
                try applicationHandler.answer(frame, from: user, on: self) { [weak self, session] answer in
                    session.write(answer)
                    self?.storeCallAnswered()
                }
            } catch {
                storeCallAnswered()
                throw error
            }
        default:
            break
        }
    }

    /// Makes a store call and hands its answer to `then`, counting the call out until it is answered
    /// (``shutdown(completion:)`` waits for every answer). The answer may come before this returns.
    /// Answers capture their session strongly, never weakly (a weak reference gives a session a side
    /// table for life, 48 bytes, issue 22): the store answers on the loop's thread, and a session that
    /// ended meanwhile drops what it is given.
    /// - Parameter timed: the kind of call `im_store_call_duration_seconds` files its time under, from
    ///   the call to its answer on the loop's clock; `nil`: not timed.
    func callStore<Answer>(timed kind: IMServerMetrics.StoreCall?, _ call: (@escaping (Answer) -> Void) -> Void, then: @escaping (Answer) -> Void) {
        storeCallsOut += 1
        let start = kind == nil ? nil : loop.now
        call { [weak self] answer in
            if let self, let kind, let start { self.metrics.storeCallAnswered(kind, after: self.loop.now - start) }
            then(answer)
            self?.storeCallAnswered()
        }
    }

    private func storeCallAnswered() {
        storeCallsOut -= 1
        completeShutdownIfIdle()
    }

    // MARK: Messages

    private func handleSend(_ message: IMChatMessage, serial: UInt32, from session: IMServerSession, user: String) {
        var ack = IMSendAck()
        ack.id = message.id
        guard message.id.utf8.count <= settings.maximumMessageIDBytes else {
            ack.id = ""
            return session.write(IMFrame(command: .sendAck, serial: serial, code: .badRequest, message: ack))
        }
        // A message for nobody is never stored (the stores' domain type always has a recipient).
        guard var recipient = IMRecipient(message.to) else {
            return session.write(IMFrame(command: .sendAck, serial: serial, code: .badRequest, message: ack))
        }
        if case .user(let name) = recipient, let canonicalUserName { recipient = .user(canonicalUserName(name)) }
        // Only what the client may set is kept: `from`, `seq`, `sent_at_ms` are the server's, and
        // unknown fields would be stored and delivered to every recipient unchecked.
        let sent = IMMessage(id: message.id, from: "", recipient: recipient, text: message.text, seq: 0, sentAtMilliseconds: 0)
        let now = wallClockMilliseconds()
        callStore(timed: .store, { self.store.store(sent, from: user, nowMilliseconds: now, completion: $0) }) { [weak self, session] result in
            // SEND_ACK only now, after the commit. A session that ended meanwhile gets nothing: its
            // client sends the message again on its next connection, and storing is idempotent.
            self?.sendStored(result, ack: ack, serial: serial, to: session)
        }
    }

    /// A SEND's answer from the store: SEND_ACK to the sender, and a new message live to every
    /// recipient online here, in the order the store answers.
    private func sendStored(_ result: IMStoreResult, ack: IMSendAck, serial: UInt32, to session: IMServerSession) {
        var ack = ack
        switch result {
        case .stored(let stored, let recipients, let isNew):
            ack.seq = stored.seq
            ack.sentAtMs = stored.sentAtMilliseconds
            session.write(IMFrame(command: .sendAck, serial: serial, message: ack))
            if isNew {
                metrics.messageStored()
                onMessageStored?(self, stored)
                conversationMayHaveStarted(stored)
            } else {
                onStoredMessageResent?(self, stored)
            }
            // A resend too: when the store's answer to the first SEND was lost after its commit, nobody
            // was told of the message. The store names only recipients who have not acknowledged it,
            // and a session that sent it already does not send it again.
            deliverStored(stored, to: recipients)
        case .refused(let code):
            session.write(IMFrame(command: .sendAck, serial: serial, code: code, message: ack))
        }
    }

    /// Wall-clock time for the timestamps clients show (the loop's clock is monotonic, not a date).
    func wallClockMilliseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(max(0, now.tv_sec)) * 1000 + UInt64(max(0, now.tv_nsec)) / 1_000_000
    }
}
