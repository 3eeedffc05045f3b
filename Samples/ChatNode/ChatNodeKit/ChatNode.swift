import Dispatch
import Logging
import RunLoopIM
import RunLoopIMSQLite
import RunLoopKit
import RunLoopNet

/// The demo chat node: an ``IMServer`` with accounts (scrypt), rooms, history and offline delivery in
/// one SQLite file, and limits on everything a client can overuse.
///
/// Loop thread only: create it, start it, stop it and read it on one thread, whose loop must run.
public final class ChatNode {
    /// Everything a node can be told.
    public struct Configuration: Sendable {
        public var host = "127.0.0.1"
        /// 0: the system picks (read ``ChatNode/port``).
        public var port: UInt16 = 7100
        /// The HTTP listener for the browser page and its WebSocket (`/ws`), on the same host; 0: the
        /// system picks (read ``ChatNode/webPort``); `nil` (the default): none. `chat-node serve`
        /// uses 7101.
        public var httpPort: UInt16?
        /// How often the node pings each WebSocket client.
        public var webSocketPingInterval: Duration = .seconds(20)
        /// The SQLite file (created if missing).
        public var databasePath: String
        /// Create an account at the first login of an unknown name (with that password); otherwise
        /// only accounts made with `chat-node account add` log in.
        public var registersOnFirstLogin = true
        public var passwordHasher = PasswordHasher()
        /// Session rules: login deadline, keepalive bounds, messages per second per connection.
        public var session = IMServerSessionMachine.Settings()
        public var maximumFrameBody = 64 * 1024
        public var maximumConnections = 1024
        public var maximumSessionsPerUser = 4
        /// Rooms one user may be a member of (`nil`: no limit).
        public var maximumRoomsPerUser: Int? = 100
        /// Password checks (scrypt, deliberately slow) queued or running at once; a login over it is
        /// refused for now with `rateLimited`, which clients retry after a backoff. Without a bound a
        /// flood of wrong passwords queued so much work that real logins timed out for a minute.
        public var maximumPendingLogins = 16
        /// How long a stop waits for sessions to close gracefully before it closes the database anyway.
        public var shutdownGrace: Duration = .seconds(5)

        public init(databasePath: String) {
            self.databasePath = databasePath
            session.loginTimeout = .seconds(10)
            session.maximumMessagesPerSecond = 50
            session.messageBurst = 100
        }
    }

    public let configuration: Configuration
    public let loop: RunLoop
    public let store: SQLiteIMStore
    public let accounts: AccountStore
    public let server: IMServer
    /// The page and WebSocket listener, when ``Configuration/httpPort`` is set.
    public let web: ChatWebServer?
    public var logger: Logger
    /// What the node reports: presence changes, refused logins, session ends (for the demo's narration).
    public var onEvent: ((String) -> Void)?
    private let hashing = DispatchQueue(label: "chat-node.passwords", attributes: .concurrent)
    private var isStopping = false
    /// Password checks handed to `hashing` and not answered yet (loop thread only).
    private var pendingLogins = 0

    /// Opens the database and prepares the server; ``start()`` listens.
    public init(configuration: Configuration, loop: RunLoop = .current, logger: Logger = Logger(label: "chat-node")) throws {
        precondition(loop.isCurrentThread, "ChatNode must be created on its run loop's thread")
        self.configuration = configuration
        self.loop = loop
        self.logger = logger
        store = try SQLiteIMStore(path: configuration.databasePath, logger: logger)
        store.requiresKnownRecipients = true
        accounts = try AccountStore(database: store.database)
        var settings = IMServer.Settings()
        settings.session = configuration.session
        settings.maximumFrameBody = configuration.maximumFrameBody
        settings.maximumConnections = configuration.maximumConnections
        settings.maximumSessionsPerUser = configuration.maximumSessionsPerUser
        settings.maximumRoomsPerUser = configuration.maximumRoomsPerUser
        server = IMServer(store: store, settings: settings, loop: loop, logger: logger)
        if configuration.httpPort != nil {
            let web = ChatWebServer(server: server, loop: loop, pingInterval: configuration.webSocketPingInterval, logger: logger)
            web.webSocket.listener.maxConnections = configuration.maximumConnections
            self.web = web
        } else {
            web = nil
        }
        server.authenticator = { [weak self] request, verdict in
            guard let self else { return verdict(.refused(.shuttingDown, reason: "node stopped")) }
            self.authenticate(request, verdict: verdict)
        }
        server.onPresenceChange = { [weak self] _, user, online in self?.report("\(user) is \(online ? "online" : "offline")") }
        server.onSessionEnd = { [weak self] _, session, reason in
            guard let user = session.user else { return }
            switch reason {
            case .loggedOut, .serverShutdown: break
            default: self?.report("\(user)'s session ended: \(reason)")
            }
        }
    }

    /// The bound port while listening.
    public var port: UInt16 { server.port }

    /// The HTTP listener's bound port while listening.
    public var webPort: UInt16? { web?.port }

    /// The browser page's address, when the node serves it.
    public var pageURL: String? {
        guard let webPort else { return nil }
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return "http://\(host):\(webPort)/"
    }

    /// Listens: IM over TCP, and HTTP (page and WebSocket) when configured.
    public func start() throws(NetError) {
        try server.listen(host: configuration.host, port: configuration.port)
        if let web, let httpPort = configuration.httpPort {
            do {
                try web.listen(host: configuration.host, port: httpPort)
            } catch {
                server.abort()
                throw error
            }
        }
        logger.info("chat node listening on \(configuration.host):\(server.port)\(pageURL.map { ", page \($0)" } ?? ""), database \(configuration.databasePath)")
    }

    /// Stops at once, the way a crash looks to clients (``IMServer/abort()``), and frees both ports.
    /// For demos and fault tests; a real stop is ``stop(_:)``.
    public func abort() {
        web?.close()
        server.abort()
    }

    /// Creates an account (for `chat-node account add` and tests); hashes on this thread.
    public func addAccount(user: String, password: String) throws -> Bool {
        guard AccountStore.isValidName(user) else { throw ChatNodeError.invalidUserName(user) }
        return try accounts.create(user: user, passwordHash: configuration.passwordHasher.hash(password))
    }

    /// Stops gracefully: no new connections, every client told the node is stopping (ERROR
    /// `shuttingDown`, after which they reconnect with backoff), their connections flushed and closed.
    /// Each SEND_ACK already went out after its transaction committed, so nothing acknowledged is lost.
    /// Calls `done` on the loop's thread once every session ended or the grace period passed, after
    /// closing the database.
    public func stop(_ done: @escaping () -> Void = {}) {
        guard !isStopping else { return }
        isStopping = true
        web?.close()
        server.shutdown()
        let deadline = loop.now + configuration.shutdownGrace
        let timer = RunLoopTimer(after: .milliseconds(10), repeating: .milliseconds(10), label: "chat-node.stop") { [weak self] timer in
            guard let self else { return timer.invalidate() }
            guard self.server.sessions.isEmpty || self.loop.now >= deadline else { return }
            timer.invalidate()
            if !self.server.sessions.isEmpty { self.logger.warning("\(self.server.sessions.count) sessions still open after the grace period") }
            self.store.database.close()
            self.logger.info("chat node stopped")
            done()
        }
        loop.add(timer, forMode: .common)
    }

    // MARK: Logins

    private func authenticate(_ request: IMLoginRequest, verdict: @escaping (IMLoginVerdict) -> Void) {
        guard AccountStore.isValidName(request.user) else {
            return verdict(.refused(.authenticationFailed, reason: "user names are 1-32 letters, digits, _ - ."))
        }
        let stored: String?
        do {
            stored = try accounts.passwordHash(of: request.user)
        } catch {
            logger.error("account \(request.user) not read: \(error)")
            return verdict(.refused(.internalError, reason: "storage failure"))
        }
        if stored == nil, !configuration.registersOnFirstLogin {
            report("login refused for \(request.user): no such account")
            return verdict(.refused(.authenticationFailed, reason: "unknown user or wrong password"))
        }
        guard pendingLogins < configuration.maximumPendingLogins else {
            report("login refused for now for \(request.user): \(pendingLogins) password checks pending")
            return verdict(.refused(.rateLimited, reason: "too many logins in progress; try again shortly"))
        }
        pendingLogins += 1
        let answer: (IMLoginVerdict) -> Void = { [weak self] result in
            self?.pendingLogins -= 1
            verdict(result)
        }
        // The hash runs on a worker: scrypt is deliberately slow and must not stall the loop.
        let reply = LoopThreadOnly(answer)
        let hasher = configuration.passwordHasher
        let password = request.password
        let loop = self.loop
        let user = request.user
        let decide = LoopThreadOnly { [weak self] (matched: Bool, newHash: String?) -> IMLoginVerdict in
            self?.decide(user: user, matched: matched, newHash: newHash) ?? .refused(.shuttingDown, reason: "node stopped")
        }
        let finish: @Sendable (Bool, String?) -> Void = { matched, newHash in
            loop.perform(inModes: [.common]) { reply.value(decide.value(matched, newHash)) }
        }
        hashing.async {
            if let stored {
                finish(PasswordHasher.verify(password, against: stored), nil)
            } else {
                finish(true, hasher.hash(password))
            }
        }
    }

    private func decide(user: String, matched: Bool, newHash: String?) -> IMLoginVerdict {
        guard matched else {
            report("login refused for \(user): wrong password")
            return .refused(.authenticationFailed, reason: "unknown user or wrong password")
        }
        guard let newHash else { return .accepted }
        do {
            if try accounts.create(user: user, passwordHash: newHash) {
                report("account \(user) created at first login")
                return .accepted
            }
            // Two first logins raced and the other one won: its password is the account's now.
            return .refused(.authenticationFailed, reason: "account was just created; log in again")
        } catch {
            logger.error("account \(user) not created: \(error)")
            return .refused(.internalError, reason: "storage failure")
        }
    }

    private func report(_ text: String) {
        logger.info("\(text)")
        onEvent?(text)
    }
}

/// Why a node operation was refused.
public enum ChatNodeError: Error, Equatable, CustomStringConvertible {
    case invalidUserName(String)

    public var description: String {
        switch self {
        case .invalidUserName(let name): return "invalid user name \"\(name)\": use 1-32 letters, digits, _ - ."
        }
    }
}

/// A value that may only be used on one loop's thread, carried through a `@Sendable` hop that ends on
/// that thread (`RunLoop.perform`). The compiler cannot see that the hop returns to the same thread.
final class LoopThreadOnly<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
