public import Logging
public import RunLoopChat
public import RunLoopIM
public import RunLoopIMCore
public import RunLoopIMSQLite
public import RunLoopKit
public import RunLoopNet
import RunLoopWebSocket

#if canImport(Glibc)
import Glibc
#endif

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
        /// Login admission (``IMLoginLimits``): `concurrentChecks` is also the number of threads that
        /// hash passwords (default: one per online processor); per-address limits keep a flood of
        /// wrong passwords from starving real logins, failure delays keep guessing slow.
        public var logins = IMLoginLimits()
        /// How long a stop waits for sessions to close gracefully before it closes the database anyway.
        public var shutdownGrace: Duration = .seconds(5)

        public init(databasePath: String) {
            self.databasePath = databasePath
            session.loginTimeout = .seconds(10)
            session.maximumMessagesPerSecond = 50
            session.messageBurst = 100
            logins.concurrentChecks = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
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
    /// The threads that hash passwords: as many as the server runs checks at once.
    let passwordWorkers: PasswordWorkers
    private var isStopping = false

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
        settings.logins = configuration.logins
        passwordWorkers = PasswordWorkers(count: configuration.logins.concurrentChecks, loop: loop)
        server = IMServer(store: store, settings: settings, loop: loop, logger: logger)
        server.applicationHandler = ChatService()
        if configuration.httpPort != nil {
            let web = ChatWebServer(server: server, loop: loop, pingInterval: configuration.webSocketPingInterval, logger: logger)
            web.webSocket.listener.maximumConnections = configuration.maximumConnections
            self.web = web
        } else {
            web = nil
        }
        server.authenticator = { [weak self] request, verdict in
            guard let self else { return verdict(.refused(.shuttingDown, reason: "node stopped")) }
            self.authenticate(request, verdict: verdict)
        }
        // Names ignore case: a message to "ALICE" reaches the account alice (or a legacy "Alice").
        server.canonicalUserName = { [weak self] name in
            guard AccountStore.isValidName(name), let account = try? self?.accounts.account(named: name) else { return name }
            return account.name
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
        logger.info(
            "chat node listening on \(configuration.host):\(server.port)\(pageURL.map { ", page \($0)" } ?? ""), database \(configuration.databasePath)"
        )
    }

    /// Stops at once, the way a crash looks to clients (``IMServer/abort()``), and frees both ports.
    /// For demos and fault tests; a real stop is ``stop(_:)``.
    public func abort() {
        web?.close()
        server.abort()
    }

    /// Creates an account (for `chat-node account add` and tests); hashes on this thread. The name is
    /// stored in lower case; false if an account of that name exists in any case.
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
        // Whichever comes first stops the node: the last session's end, or the grace period (a
        // one-shot timer, invalid once it fired).
        let grace = RunLoopTimer(after: configuration.shutdownGrace, label: "chat-node.stop") { [weak self] _ in
            guard let self else { return }
            self.logger.warning("\(self.server.sessions.count) sessions still open after the grace period")
            self.stopped(done)
        }
        loop.add(grace, forMode: .common)
        server.shutdown { [weak self] in
            guard grace.isValid else { return }
            grace.invalidate()
            self?.stopped(done)
        }
    }

    private func stopped(_ done: () -> Void) {
        store.database.close()
        logger.info("chat node stopped")
        done()
    }

    // MARK: Logins

    /// The server's authenticator: the server calls it when a check may start (its login limits
    /// decide when) and logs every failure itself, with the peer's address.
    private func authenticate(_ request: IMLoginAttempt, verdict: @escaping (IMLoginVerdict) -> Void) {
        guard AccountStore.isValidName(request.user) else {
            return verdict(.refused(.authenticationFailed, reason: "user names are 1-32 letters, digits, _ - ."))
        }
        let account: AccountStore.Account?
        do {
            account = try accounts.account(named: request.user)
        } catch {
            logger.error("account \(request.user) not read: \(error)")
            return verdict(.refused(.internalError, reason: "storage failure"))
        }
        let password = request.password
        if let account {
            let stored = account.passwordHash
            return passwordWorkers.run({ PasswordHasher.verify(password, against: stored) }) { [weak self] matched in
                verdict(matched ? .acceptedAs(user: account.name) : self?.wrongPassword(account.name) ?? Self.stopped)
            }
        }
        guard configuration.registersOnFirstLogin else {
            onEvent?("login refused for \(request.user): no such account")
            return verdict(Self.unknownOrWrong)
        }
        let name = request.user.lowercased()
        let hasher = configuration.passwordHasher
        passwordWorkers.run({ hasher.hash(password) }) { [weak self] hash in
            guard let self else { return verdict(Self.stopped) }
            self.register(name, hash: hash, password: password, verdict: verdict)
        }
    }

    /// A first login's account, made unless another first login of the same name made it meanwhile:
    /// then this login is checked against the hash that won, so two first logins with the same
    /// password both succeed.
    private func register(_ name: String, hash: String, password: String, verdict: @escaping (IMLoginVerdict) -> Void) {
        let winner: AccountStore.Account?
        do {
            if try accounts.create(user: name, passwordHash: hash) {
                report("account \(name) created at first login")
                return verdict(.acceptedAs(user: name))
            }
            winner = try accounts.account(named: name)
        } catch {
            logger.error("account \(name) not created: \(error)")
            return verdict(.refused(.internalError, reason: "storage failure"))
        }
        guard let winner else { return verdict(.refused(.internalError, reason: "account vanished while being created")) }
        let stored = winner.passwordHash
        passwordWorkers.run({ PasswordHasher.verify(password, against: stored) }) { [weak self] matched in
            verdict(matched ? .acceptedAs(user: winner.name) : self?.wrongPassword(winner.name) ?? Self.stopped)
        }
    }

    private func wrongPassword(_ user: String) -> IMLoginVerdict {
        // The server logs the failure with the address; this is the demo's narration only.
        onEvent?("login refused for \(user): wrong password")
        return Self.unknownOrWrong
    }

    private static let unknownOrWrong = IMLoginVerdict.refused(.authenticationFailed, reason: "unknown user or wrong password")
    private static let stopped = IMLoginVerdict.refused(.shuttingDown, reason: "node stopped")

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
