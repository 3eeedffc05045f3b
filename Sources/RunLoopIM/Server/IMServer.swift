import Logging
import RunLoopKit
import RunLoopNet
import SwiftProtobuf
#if canImport(Glibc)
import Glibc
#endif

/// An IM server on a ``RunLoop``: a ``TCPListener`` whose connections become ``IMServerSession``s.
///
/// It answers heartbeats at once, drops clients silent for 1.5 × their announced keepalive (and
/// reports them offline), stores each sent message once through its ``IMServerStore`` and acknowledges
/// it with its sequence, delivers it to every online recipient at once and to the others from their
/// inbox at their next login, in sequence order, until they acknowledge it.
///
/// Threads: confined to its loop's thread, like ``TCPListener``; every callback runs there.
public final class IMServer {
    /// Server-wide settings.
    public struct Settings: Sendable {
        /// Login deadline and keepalive rules for each session.
        public var session = IMServerSessionMachine.Settings()
        /// The largest frame body accepted from a client.
        public var maximumFrameBody = 64 * 1024
        /// At most this many connections at once (`nil`: no limit); the next ones get ERROR
        /// `tooManyConnections` and are closed.
        public var maximumConnections: Int?
        /// At most this many logged-in sessions per user (`nil`: no limit); a login beyond it is
        /// refused with `tooManyConnections`.
        public var maximumSessionsPerUser: Int?
        /// Messages in a HISTORY page when the client asks for 0, and the most it may ask for.
        public var historyPageSize = 50
        public var maximumHistoryPageSize = 500
        /// Whether PRESENCE notices go to every logged-in session when a user comes online or goes
        /// offline (fine for a demo node; a large service would send them to contacts only).
        public var broadcastsPresence = true
        /// Login admission: checks at once, per-address limits, failure delays (``IMLoginLimits``).
        public var logins = IMLoginLimits()

        public init() {}
    }

    public let loop: RunLoop
    public let settings: Settings
    public let store: IMServerStore
    public var logger: Logger
    /// A user came online (first session) or went offline (last session ended).
    public var onPresenceChange: ((IMServer, String, Bool) -> Void)?
    /// A session ended, with why (after it was removed from ``sessions``).
    public var onSessionEnd: ((IMServer, IMServerSession, IMSessionEndReason) -> Void)?
    /// A message was stored for the first time.
    public var onMessageStored: ((IMServer, IMChatMessage) -> Void)?
    /// Checks logins instead of the store, when set: for checks too slow for the loop's thread (a
    /// password hash), which run elsewhere and call `verdict` back **on the loop's thread** (hop with
    /// `RunLoop.perform(inModes:_:)`). The login deadline keeps running meanwhile.
    public var authenticator: ((IMLoginRequest, @escaping (IMLoginVerdict) -> Void) -> Void)?

    let listener: TCPListener
    var open: [ObjectIdentifier: IMServerSession] = [:]
    var byUser: [String: [IMServerSession]] = [:]
    /// Login admission state (IMServer+Logins).
    lazy var loginGate = LoginGate(limits: settings.logins, loop: loop, modes: listener.modes) { [weak self] event in
        self?.loginEventDue(event)
    }

    /// Must be called on the loop's thread.
    public init(store: IMServerStore, settings: Settings = Settings(), loop: RunLoop = .current,
                modes: [RunLoop.Mode] = [.common], logger: Logger = Logger(label: "RunLoopIM.server")) {
        self.loop = loop
        self.settings = settings
        self.store = store
        self.logger = logger
        listener = TCPListener(loop: loop, modes: modes, logger: logger)
        listener.maxConnections = settings.maximumConnections
        listener.refusalMessage = Self.serverFull.encoded()
        listener.onAccept = { [weak self] _, connection in self?.accept(connection) }
    }

    /// What a connection beyond ``Settings/maximumConnections`` is told before it is closed.
    static let serverFull: IMFrame = {
        var notice = IMErrorNotice()
        notice.message = "server full"
        return IMFrame(command: .error, serial: 0, code: .tooManyConnections, message: notice)
    }()

    /// Listens on an IP literal and port (0: the system picks; read ``port``).
    public func listen(host: String = "127.0.0.1", port: UInt16 = 0) throws(NetError) {
        try listener.listen(host: host, port: port)
    }

    /// The bound port while listening.
    public var port: UInt16 { listener.port }
    /// Open sessions (logged in or not).
    public var sessions: [IMServerSession] { Array(open.values) }
    /// Users with at least one logged-in session.
    public var onlineUsers: [String] { byUser.keys.sorted() }

    /// Stops accepting, tells every client the server is stopping and closes them gracefully.
    public func shutdown() {
        listener.close()
        for session in open.values { session.shutdown() }
    }

    /// Stops at once, the way a crash would look to clients: no ERROR frame, no flush, every connection
    /// reset. For demos and fault tests; a real stop is ``shutdown()``.
    public func abort() {
        listener.close()
        for session in open.values { session.abort() }
    }

    // MARK: Session callbacks

    private func accept(_ connection: TCPConnection) {
        adopt(TCPSessionLink(connection: connection, maxBodyLength: settings.maximumFrameBody))
    }

    /// Runs a session over a connection accepted elsewhere — a WebSocket upgrade on an HTTP listener —
    /// exactly as over the server's own TCP listener: same login, limits, delivery and reports.
    /// Beyond ``Settings/maximumConnections`` sessions in all, the link gets ERROR `tooManyConnections`
    /// and is closed. Must be called on the loop's thread.
    public func adopt(_ link: IMSessionLink) {
        if let limit = settings.maximumConnections, open.count >= limit {
            try? link.send(Self.serverFull)
            return link.close(for: .protocolError(.tooManyConnections, "server full"))
        }
        guard admitConnection(link) else { return }
        let session = IMServerSession(link: link, server: self)
        open[ObjectIdentifier(session)] = session
    }

    func sessionOnline(_ session: IMServerSession, user: String) {
        let first = byUser[user]?.isEmpty ?? true
        byUser[user, default: []].append(session)
        logger.debug("\(user) online from \(session.remoteAddress?.description ?? "?")")
        if first { presenceChanged(user, online: true, except: session) }
        if settings.broadcastsPresence {
            // A snapshot: who else is online now, so a new session need not wait for changes.
            for other in byUser.keys.sorted() where other != user {
                var notice = IMPresenceNotice()
                notice.user = other
                notice.online = true
                session.write(IMFrame(command: .presence, serial: 0, message: notice))
            }
        }
        for message in store.undelivered(for: user) { session.deliver(message) }
    }

    func sessionEnded(_ session: IMServerSession, reason: IMSessionEndReason) {
        open[ObjectIdentifier(session)] = nil
        loginSessionEnded(session)
        if let user = session.user {
            byUser[user]?.removeAll { $0 === session }
            if byUser[user]?.isEmpty == true {
                byUser[user] = nil
                presenceChanged(user, online: false, except: session)
            }
            logger.debug("\(user) session ended: \(reason)")
        }
        onSessionEnd?(self, session, reason)
    }

    /// A logged-in client's SEND, DELIVER_ACK or ABANDON.
    /// - Throws: an undecodable body, which ends that session with a protocol error.
    func handleRequest(_ frame: IMFrame, from session: IMServerSession) throws(IMFrameError) {
        guard let user = session.user else { return }
        switch frame.command {
        case .send:
            handleSend(try frame.decode(IMChatMessage.self), serial: frame.serial, from: session, user: user)
        case .deliverAck:
            let seqs = try frame.decode(IMDeliverAck.self).seqs
            store.acknowledge(seqs, for: user)
            session.acknowledged(seqs)
        case .abandon:
            let ids = try frame.decode(IMAbandonRequest.self).ids
            var response = IMAbandonResponse()
            response.results = store.abandon(ids, from: user)
            session.write(IMFrame(command: .abandonAck, serial: frame.serial, message: response))
        case .join, .leave:
            let room = try frame.decode(IMRoomRequest.self).room
            let result = frame.command == .join ? store.join(room: room, user: user) : store.leave(room: room, user: user)
            reply(to: frame, on: session, with: result, as: frame.command == .join ? .joinAck : .leaveAck)
        case .listRooms:
            var list = IMRoomList()
            list.rooms = store.rooms(for: user)
            session.write(IMFrame(command: .roomList, serial: frame.serial, message: list))
        case .history:
            let request = try frame.decode(IMHistoryRequest.self)
            let asked = Int(request.limit)
            let limit = asked == 0 ? settings.historyPageSize : min(asked, settings.maximumHistoryPageSize)
            reply(to: frame, on: session, with: store.history(request, for: user, limit: limit), as: .historyPage)
        default:
            break
        }
    }

    private func reply<M: SwiftProtobuf.Message>(to frame: IMFrame, on session: IMServerSession, with result: Result<M, IMStatusCode>, as command: IMCommand) {
        switch result {
        case .success(let message): session.write(IMFrame(command: command, serial: frame.serial, message: message))
        case .failure(let code): session.write(IMFrame(command: command, serial: frame.serial, code: code))
        }
    }

    private func presenceChanged(_ user: String, online: Bool, except changed: IMServerSession) {
        onPresenceChange?(self, user, online)
        guard settings.broadcastsPresence else { return }
        var notice = IMPresenceNotice()
        notice.user = user
        notice.online = online
        let frame = IMFrame(command: .presence, serial: 0, message: notice)
        for sessions in byUser.values {
            for session in sessions where session !== changed { session.write(frame) }
        }
    }

    private func handleSend(_ message: IMChatMessage, serial: UInt32, from session: IMServerSession, user: String) {
        var ack = IMSendAck()
        ack.id = message.id
        switch store.store(message, from: user, nowMilliseconds: wallClockMilliseconds()) {
        case .stored(let stored, let recipients, let isNew):
            ack.seq = stored.seq
            ack.sentAtMs = stored.sentAtMs
            session.write(IMFrame(command: .sendAck, serial: serial, message: ack))
            guard isNew else { return }
            onMessageStored?(self, stored)
            for recipient in recipients {
                for target in byUser[recipient] ?? [] { target.deliver(stored) }
            }
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
