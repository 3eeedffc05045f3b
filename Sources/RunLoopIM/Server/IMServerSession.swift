import Logging
import RunLoopKit
import RunLoopNet

/// One client's connection on an ``IMServer``: its ``IMSessionLink`` (TCP,
/// or WebSocket through `RunLoopIMWebSocket`), the session's ``IMServerSessionMachine`` and its timer.
/// Created by the server; loop thread only.
public final class IMServerSession {
    /// The logged-in user, once logged in (still set after the session ended, for its last reports).
    public private(set) var user: String?
    /// The client's address.
    public let remoteAddress: SocketAddress?
    /// How long the client may stay silent (1.5 × its keepalive), once logged in.
    public var silenceLimit: Duration? { machine.silenceLimit }
    /// The connection underneath: frames in and out, in the client's encoding.
    public let link: IMSessionLink

    weak var server: IMServer?
    private(set) var machine: IMServerSessionMachine
    private var timer: ProtocolTimer!
    /// Sequences delivered on this connection and not yet acknowledged: never sent twice per connection.
    private var inFlight: Set<UInt64> = []
    private(set) var isEnded = false

    init(link: IMSessionLink, server: IMServer) {
        self.link = link
        self.server = server
        remoteAddress = link.remoteAddress
        machine = IMServerSessionMachine(settings: server.settings.session, now: link.loop.now)
        timer = ProtocolTimer(loop: link.loop, modes: link.modes, label: "im.session") { [weak self] in
            guard let self else { return }
            self.apply(self.machine.timerFired(now: self.link.loop.now, inputWaiting: self.link.hasUnreadInput))
        }
        link.start(IMSessionLinkEvents(
            received: { [weak self] frame in
                guard let self, !self.isEnded else { return }
                self.apply(self.machine.frameReceived(frame, now: self.link.loop.now))
            },
            failed: { [weak self] code, reason, serial in
                self?.apply(self?.machine.protocolError(code, reason, serial: serial) ?? [])
            },
            closed: { [weak self] why in
                guard let self else { return }
                self.apply(self.machine.transportClosed(why))
            }
        ))
        timer.schedule(at: machine.nextDeadline)
    }

    /// Sends a stored message to this client unless it is already on its way on this connection.
    func deliver(_ message: IMChatMessage) {
        guard !isEnded, machine.user != nil, inFlight.insert(message.seq).inserted else { return }
        write(IMFrame(command: .deliver, serial: machine.takeSerial(), message: message))
    }

    /// Tells the client the server is stopping, then closes gracefully.
    func shutdown() { apply(machine.shutdown()) }

    func acknowledged(_ seqs: [UInt64]) { inFlight.subtract(seqs) }

    /// Resets the connection without a word (``IMServer/abort()``).
    func abort() {
        link.abort()
        apply(machine.transportClosed("aborted by the server"))
    }

    func write(_ frame: IMFrame) {
        guard !isEnded else { return }
        do {
            try link.send(frame)
        } catch {
            // A client that does not read fills its output limit: it is dropped, not buffered forever.
            link.abort()
            apply(machine.transportClosed("write failed: \(error)"))
        }
    }

    private func apply(_ actions: [IMServerSessionAction]) {
        for action in actions {
            switch action {
            case .write(let frame):
                write(frame)
            case .authenticate(let request):
                server?.authenticate(request, for: self)
            case .online(let user):
                self.user = user
                server?.sessionOnline(self, user: user)
            case .request(let frame):
                do {
                    try server?.handleRequest(frame, from: self)
                } catch {
                    apply(machine.protocolError(error))
                }
            case .end(let reason):
                end(reason)
            }
        }
        timer.schedule(at: machine.nextDeadline)
    }

    /// The server's answer to the LOGIN (IMServer+Logins), maybe much later (an authenticator hashing a
    /// password off the loop, a failure delay); a session that ended meanwhile ignores it.
    func loginAccepted(as user: String) {
        guard !isEnded, let server else { return }
        apply(machine.loginAccepted(user: user, sessionID: UUIDText.random(),
                                    serverTimeMilliseconds: server.wallClockMilliseconds(), now: link.loop.now))
    }

    func loginRefused(_ code: IMStatusCode, reason: String, retryAfter: Duration? = nil) {
        guard !isEnded else { return }
        apply(machine.loginRefused(code, reason: reason, retryAfter: retryAfter, now: link.loop.now))
    }

    /// Ends the session with ERROR `code` (serial 0), then a close: one replaced by a newer login of
    /// its client instance.
    func end(with code: IMStatusCode, _ text: String) {
        apply(machine.protocolError(code, text, serial: 0))
    }

    private func end(_ reason: IMSessionEndReason) {
        guard !isEnded else { return }
        isEnded = true
        timer.cancel()
        link.close(for: reason)
        server?.sessionEnded(self, reason: reason)
    }
}
