public import Logging
public import RunLoopChat
public import RunLoopChatCluster
public import RunLoopChatPostgres
public import RunLoopIM
public import RunLoopIMCore
public import RunLoopIMSQLite
public import RunLoopKit
public import RunLoopNet
public import RunLoopRedis
import RunLoopTLS
import RunLoopWebSocket

#if canImport(Glibc)
import Glibc
#endif

/// The demo chat node: an ``IMServer`` with accounts (scrypt), rooms, history and offline delivery in
/// one SQLite file or in a PostgreSQL database (``ChatNodeStorage``), and limits on everything a
/// client can overuse. On PostgreSQL with a Redis (``Configuration/redis``) it is a node of a
/// cluster (``ChatCluster``): the nodes on one database and one Redis deliver each other's messages
/// live and share presence and the per-user session limit.
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
        /// Where accounts, rooms, history and undelivered messages live.
        public var storage: ChatNodeStorage
        /// How the PostgreSQL link waits between attempts after a failure (its backoff).
        public var postgresReconnect = ReconnectingLinkPolicy()
        /// The Redis of a cluster of nodes (PostgreSQL storage only): set, the node joins the cluster
        /// of every node on the same database and Redis when it starts; `nil`: it serves alone.
        public var redis: RedisConfiguration?
        /// This node's name in its cluster, unique among the live nodes: by default the host's name,
        /// the process id and a random suffix, so two nodes in one process differ too.
        public var nodeID = ChatNode.uniqueNodeID()
        /// The cluster lease's period, refreshes and reaping (tests shorten it).
        public var lease = NodeLeasePolicy()
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
        /// Members past which a room is large (``ChatService/Settings/largeRoomMembers``): announced
        /// in LOGIN_ACK; read when the node starts.
        public var largeRoomMembers = ChatService.Settings().largeRoomMembers
        /// The shortest time between two announcements of presence changes
        /// (``IMServer/Settings/presenceInterval``): a crowd's arrivals reach each member of their
        /// audience in one write per interval, not one per arrival.
        public var presenceInterval: Duration = .milliseconds(100)
        /// The sessions a second presence announcements may write to on average
        /// (``IMServer/Settings/presenceWritesPerSecond``): while a crowd changes in many rooms, each
        /// contact gets the arrivals of up to ``longestPresenceInterval`` in one write.
        public var presenceWritesPerSecond = 10_000
        /// The longest wait the write budget puts between two announcements.
        public var longestPresenceInterval: Duration = .seconds(1)
        /// Login admission (``IMLoginLimits``): `concurrentChecks` is also the number of threads that
        /// hash passwords (default: one per online processor); per-address limits keep a flood of
        /// wrong passwords from starving real logins, failure delays keep guessing slow.
        public var logins = IMLoginLimits()
        /// How long a stop waits for sessions to close gracefully before it closes the database anyway.
        public var shutdownGrace: Duration = .seconds(5)
        /// The node's TLS identity (certificate chain and key, loaded when it was made, so a bad file
        /// fails before the node exists): set, the IM port and the web port (HTTPS, `wss://`) speak
        /// TLS only; `nil` (the default): plaintext, and LOGIN's password crosses the network in
        /// clear. ``ChatNode/reloadTLS(_:)`` replaces it for later connections.
        public var tls: ChatNodeTLS?
        /// How long history is kept (`chat-node serve --keep-days`): set, the node deletes older
        /// messages that everyone has acknowledged, in small batches on its loop; `nil` (the
        /// default): it keeps everything.
        public var retention: HistoryRetentionPolicy?

        /// Where the node's metrics go, and what its `/metrics` shows: a registry of its own by default.
        public var metrics = NodeMetrics()

        /// A node on one SQLite file (created if missing).
        public init(databasePath: String) {
            self.init(storage: .sqlite(path: databasePath))
        }

        public init(storage: ChatNodeStorage) {
            self.storage = storage
            session.loginTimeout = .seconds(10)
            session.maximumMessagesPerSecond = 50
            session.messageBurst = 100
            logins.concurrentChecks = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        }
    }

    /// The store a node runs on, opened.
    public enum Backend {
        /// The file's store and its accounts table, read and written at once.
        case sqlite(SQLiteIMStore, AccountStore)
        /// The shared database, answered later.
        case postgres(PostgresNodeDatabase)
    }

    /// What the node was told; a reload changes its limits (ChatNode+Reload).
    public internal(set) var configuration: Configuration
    public let loop: RunLoop
    public let backend: Backend
    public let server: IMServer
    /// The page and WebSocket listener, when ``Configuration/httpPort`` is set.
    public let web: ChatWebServer?
    /// The node's membership in its cluster, when ``Configuration/redis`` is set.
    public let cluster: ChatCluster?
    public var logger: Logger
    /// What the node reports: presence changes, refused logins, session ends (for the demo's narration).
    public var onEvent: ((String) -> Void)?
    /// Runs on the loop's thread after the node stopped itself because its PostgreSQL database holds
    /// a schema it cannot run against (older: `chat-node migrate`; newer: a newer node).
    public var onStorageRefused: ((ChatSchemaError) -> Void)?
    /// The threads that hash passwords: as many as the server runs checks at once.
    let passwordWorkers: PasswordWorkers
    let accounts: any NodeAccounts
    /// The history sweeps, from ``start()`` on when ``Configuration/retention`` is set.
    private var retention: HistoryRetention?
    /// Gives back the heap a crowd of sessions left behind, from ``start()`` on.
    private var heapTrimmer: HeapTrimmer?
    private(set) var isStopping = false

    /// Opens the database and prepares the server; ``start()`` listens.
    /// - Throws: ``PasswordHashingUnavailable`` when OpenSSL here cannot derive scrypt (a node that
    ///   started would refuse every password as wrong); the store's errors.
    public init(configuration: Configuration, loop: RunLoop = .current, logger: Logger = Logger(label: "chat-node")) throws {
        precondition(loop.isCurrentThread, "ChatNode must be created on its run loop's thread")
        try PasswordHasher.checkAvailable()
        // Before the password threads first allocate, so the heap trim after a crowd reaches theirs.
        GlibcMalloc.shareMainArena()
        self.configuration = configuration
        self.loop = loop
        self.logger = logger
        passwordWorkers = PasswordWorkers(count: configuration.logins.concurrentChecks, loop: loop)
        let store: any ChatStore
        if configuration.redis != nil, case .sqlite = configuration.storage { throw ChatNodeError.clusterNeedsPostgres }
        switch configuration.storage {
        case .sqlite(let path):
            let sqlite = try SQLiteIMStore(path: path, logger: logger)
            sqlite.requiresKnownRecipients = true
            let accounts = try AccountStore(database: sqlite.database)
            backend = .sqlite(sqlite, accounts)
            self.accounts = SQLiteNodeAccounts(accounts: accounts, passwordWorkers: passwordWorkers, logger: logger)
            store = sqlite
        case .postgres(let postgres):
            let database = PostgresNodeDatabase(
                configuration: postgres, loop: loop, policy: configuration.postgresReconnect,
                passwordCheckThreads: configuration.logins.concurrentChecks, logger: logger)
            backend = .postgres(database)
            accounts = PostgresNodeAccounts(database: database)
            store = database.store
        }
        server = IMServer(
            store: store, settings: Self.serverSettings(for: configuration), loop: loop, logger: logger,
            metricsFactory: configuration.metrics.factory)
        var chat = ChatService()
        chat.settings.largeRoomMembers = configuration.largeRoomMembers
        server.applicationHandler = chat
        server.tlsContext = configuration.tls?.im
        // After the application handler, which the cluster wraps to see JOIN and LEAVE.
        if let redis = configuration.redis {
            let membership = ChatCluster.Configuration(nodeID: configuration.nodeID, redis: redis, lease: configuration.lease)
            cluster = ChatCluster(server: server, configuration: membership, logger: logger)
        } else {
            cluster = nil
        }
        if configuration.httpPort != nil {
            let web = ChatWebServer(server: server, loop: loop, pingInterval: configuration.webSocketPingInterval, logger: logger)
            web.webSocket.listener.maximumConnections = configuration.maximumConnections
            web.metricsText = { [metrics = configuration.metrics] in metrics.text }
            web.webSocket.tlsContext = configuration.tls?.web
            self.web = web
        } else {
            web = nil
        }
        web?.readiness = { [weak self] in self?.readiness ?? .notReady(reason: "the node is gone") }
        server.authenticator = { [weak self] request, verdict in
            guard let self else { return verdict(.refused(.shuttingDown, reason: "node stopped")) }
            self.authenticate(request, verdict: verdict)
        }
        switch backend {
        case .sqlite(_, let accounts):
            // Names ignore case: a message to "ALICE" reaches the account alice (or a legacy "Alice").
            // The server asks synchronously, which only a local file can answer.
            server.canonicalUserName = { name in
                guard AccountStore.isValidName(name), let account = try? accounts.account(named: name) else { return name }
                return account.name
            }
        case .postgres(let database):
            database.onIncompatibleSchema = { [weak self] refusal in self?.refuse(refusal) }
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

    /// The server's share of a node's configuration.
    static func serverSettings(for configuration: Configuration) -> IMServer.Settings {
        var settings = IMServer.Settings()
        settings.session = configuration.session
        settings.maximumFrameBody = configuration.maximumFrameBody
        settings.maximumConnections = configuration.maximumConnections
        settings.maximumSessionsPerUser = configuration.maximumSessionsPerUser
        settings.maximumRoomsPerUser = configuration.maximumRoomsPerUser
        settings.logins = configuration.logins
        settings.presenceInterval = configuration.presenceInterval
        settings.presenceWritesPerSecond = configuration.presenceWritesPerSecond
        settings.longestPresenceInterval = configuration.longestPresenceInterval
        return settings
    }

    /// The bound port while listening.
    public var port: UInt16 { server.port }

    /// Whether the node's ports speak TLS.
    public var isTLS: Bool { server.tlsContext != nil }

    /// Serves connections accepted from now on, on both ports, with `tls` (a certificate renewed on
    /// disk and loaded again): sessions open on the old one carry on with it. Loop thread; on a node
    /// whose ports speak TLS.
    public func reloadTLS(_ tls: ChatNodeTLS) {
        precondition(isTLS, "reloadTLS on a node without TLS")
        server.tlsContext = tls.im
        web?.webSocket.tlsContext = tls.web
        logger.info("TLS certificate reloaded for new connections")
    }

    /// The HTTP listener's bound port while listening.
    public var webPort: UInt16? { web?.port }

    /// The browser page's address, when the node serves it.
    public var pageURL: String? {
        guard let webPort else { return nil }
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return "\(isTLS ? "https" : "http")://\(host):\(webPort)/"
    }

    /// The SQLite store, on a node that keeps its data in a file (tests and tools read it directly).
    public var sqliteStore: SQLiteIMStore? {
        guard case .sqlite(let store, _) = backend else { return nil }
        return store
    }

    /// The SQLite file's accounts, on a node that keeps its data in a file.
    public var sqliteAccounts: AccountStore? {
        guard case .sqlite(_, let accounts) = backend else { return nil }
        return accounts
    }

    /// The PostgreSQL link and store, on a node that keeps its data there.
    public var postgres: PostgresNodeDatabase? {
        guard case .postgres(let database) = backend else { return nil }
        return database
    }

    /// Connects to the store before ``start()``, so a node that must not run is refused before it
    /// listens: `ready` runs on the loop's thread with success once PostgreSQL answered with a schema
    /// this node runs against, or once the first attempt failed (the node serves while it is down,
    /// SENDs refused as temporary, and checks the schema when it comes), or with the schema's
    /// refusal. A SQLite node was opened already: `ready` runs at once.
    public func connectStorage(_ ready: @escaping (Result<Void, ChatSchemaError>) -> Void) {
        guard let postgres else { return ready(.success(())) }
        postgres.onFirstOutcome = ready
        postgres.start()
    }

    /// Listens: IM over TCP, and HTTP (page and WebSocket) when configured; connects to PostgreSQL
    /// unless ``connectStorage(_:)`` did.
    public func start() throws(NetError) {
        postgres?.start()
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
            "chat node listening on \(configuration.host):\(server.port)\(isTLS ? " (TLS)" : "")\(pageURL.map { ", page \($0)" } ?? ""), \(configuration.storage)"
        )
        if let cluster, let redis = configuration.redis { join(cluster, redis: redis) }
        if let policy = configuration.retention { startRetention(policy) }
        let sqlite = sqliteStore
        let heapTrimmer = HeapTrimmer(
            loop: loop, logger: logger, sessions: { [weak server] in server?.sessionCount ?? 0 },
            releaseCaches: { [weak sqlite] in sqlite?.releaseMemory() })
        self.heapTrimmer = heapTrimmer
        heapTrimmer.start()
    }

    private func startRetention(_ policy: HistoryRetentionPolicy) {
        let prune: HistoryRetention.Prune
        switch backend {
        case .sqlite(let store, _):
            prune = { cutoff, after, limit, completion in completion(store.pruneHistory(sentBefore: cutoff, after: after, limit: limit)) }
        case .postgres(let database):
            prune = { cutoff, after, limit, completion in
                database.store.pruneHistory(sentBefore: cutoff, after: after, limit: limit, completion: completion)
            }
        }
        let retention = HistoryRetention(policy: policy, loop: loop, logger: logger, prune: prune)
        self.retention = retention
        retention.start()
    }

    private func join(_ cluster: ChatCluster, redis: RedisConfiguration) {
        // The cluster reacts to its presence's events itself; the node only adds the operator's line.
        let clusterHandler = cluster.presence.onEvent
        cluster.presence.onEvent = { [weak self] event in
            clusterHandler?(event)
            guard case .lease(.held(let epoch)) = event, let self else { return }
            self.logger.notice("joined the cluster as \(self.configuration.nodeID), epoch \(epoch), Redis \(RedisURL.describe(redis))")
        }
        cluster.start()
    }

    /// A node name no other live process uses: host, process id, and a random suffix.
    public static func uniqueNodeID() -> String {
        var host = [CChar](repeating: 0, count: 256)
        let name = gethostname(&host, 255) == 0 ? String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "node"
        return "\(name)-\(getpid())-\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"
    }

    /// Stops at once, the way a crash looks to clients (``IMServer/abort()``) and to the cluster (its
    /// lease lapses and another node reaps it), and frees both ports and the PostgreSQL and Redis
    /// connections (a SQLite file stays open for the caller to close). For demos and fault tests; a
    /// real stop is ``stop(_:)``.
    public func abort() {
        retention?.stop()
        heapTrimmer?.stop()
        web?.close()
        server.abort()
        cluster?.close()
        postgres?.close()
    }

    /// Creates an account (for `chat-node account add` and tests); hashes on this thread. The name is
    /// stored in lower case; `completion` gets false if an account of that name exists in any case.
    /// Loop thread only; `completion` runs there once (at once on a SQLite node).
    public func addAccount(user: String, password: String, completion: @escaping (Result<Bool, any Error>) -> Void) {
        guard AccountStore.isValidName(user) else { return completion(.failure(ChatNodeError.invalidUserName(user))) }
        accounts.create(user, passwordHash: configuration.passwordHasher.hash(password)) { completion($0.mapError { $0 as any Error }) }
    }

    /// ``addAccount(user:password:completion:)`` on a SQLite node, whose answer is ready at once.
    public func addAccount(user: String, password: String) throws -> Bool {
        // Refused before it starts: a creation answered later would still happen, unseen.
        guard sqliteStore != nil else { throw ChatNodeError.asynchronousStorage }
        var answer: Result<Bool, any Error>?
        addAccount(user: user, password: password) { answer = $0 }
        guard let answer else { throw ChatNodeError.asynchronousStorage }
        return try answer.get()
    }

    /// Every account's name. Loop thread only; `completion` runs there once (at once on a SQLite node).
    public func accountNames(completion: @escaping (Result<[String], IMStoreFailure>) -> Void) {
        accounts.names(completion: completion)
    }

    /// Gives the account `user` names (any case) a new password, hashed on this thread; sessions
    /// online stay, the next login needs the new one. Loop thread only; `completion` runs there once.
    public func setPassword(user: String, password: String, completion: @escaping (Result<AccountChange, IMStoreFailure>) -> Void) {
        accounts.setPasswordHash(configuration.passwordHasher.hash(password), of: user, completion: completion)
    }

    /// Disables (or enables again) the account `user` names: a disabled account's logins are refused
    /// with `authenticationFailed` ("account disabled") and never make a new account; sessions online
    /// carry on until they end, and their next login is refused. Its data stays. Loop thread only;
    /// `completion` runs there once (`.unchanged`: it was so already).
    public func setAccountDisabled(_ disabled: Bool, user: String, completion: @escaping (Result<AccountChange, IMStoreFailure>) -> Void) {
        accounts.setDisabled(disabled, user: user, completion: completion)
    }

    /// Removes the account `user` names and what is the user's: memberships and inbox, every message
    /// they sent, their direct conversations (both sides), so a later account of the name starts
    /// empty. Room messages of others stay. Loop thread only; `completion` runs there once.
    public func removeAccount(user: String, completion: @escaping (Result<AccountChange, IMStoreFailure>) -> Void) {
        accounts.remove(user, completion: completion)
    }

    /// Stops gracefully: no new connections, every client told the node is stopping (ERROR
    /// `shuttingDown`, after which they reconnect with backoff), their connections flushed and closed
    /// (a WebSocket's with 1001, its close handshake finished).
    /// Each SEND_ACK already went out after its transaction committed, so nothing acknowledged is lost.
    /// Calls `done` on the loop's thread once every session ended or the grace period passed, after
    /// leaving the cluster (its users with no session elsewhere go offline everywhere at once) and
    /// closing the database.
    public func stop(_ done: @escaping () -> Void = {}) {
        guard !isStopping else { return }
        isStopping = true
        retention?.stop()
        heapTrimmer?.stop()
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
            // A session's end only starts its WebSocket's close handshake (1001): stopping before
            // the browsers answered would reset their connections, and they would see 1006.
            self?.afterWebSocketsClosed {
                guard grace.isValid else { return }
                grace.invalidate()
                self?.stopped(done)
            }
        }
    }

    private func afterWebSocketsClosed(_ next: @escaping () -> Void) {
        guard let web else { return next() }
        web.webSocket.whenConnectionsClosed(next)
    }

    /// Leaves the cluster once the server is down (no session opens meanwhile), then closes the store.
    private func stopped(_ done: @escaping () -> Void) {
        guard let cluster else { return closed(done) }
        cluster.leave { [weak self] in self?.closed(done) }
    }

    private func closed(_ done: () -> Void) {
        closeStorage()
        logger.info("chat node stopped")
        done()
    }

    private func closeStorage() {
        switch backend {
        case .sqlite(let store, _): store.database.close()
        case .postgres(let database): database.close()
        }
    }

    /// The database holds a schema this node must not use: stop at once (what was stored stays
    /// stored; clients reconnect elsewhere or later) and say why.
    private func refuse(_ refusal: ChatSchemaError) {
        guard !isStopping else { return }
        isStopping = true
        abort()
        onStorageRefused?(refusal)
    }

    // MARK: Logins

    /// The server's authenticator: the server calls it when a check may start (its login limits
    /// decide when) and logs every failure itself, with the peer's address.
    private func authenticate(_ request: IMLoginAttempt, verdict: @escaping (IMLoginVerdict) -> Void) {
        guard AccountStore.isValidName(request.user) else {
            return verdict(.refused(.authenticationFailed, reason: "user names are 1-32 letters, digits, _ - ."))
        }
        accounts.check(request) { [weak self] outcome in
            guard let self else { return verdict(Self.stopped) }
            if let known = self.verdict(for: outcome) { return verdict(known) }
            guard self.configuration.registersOnFirstLogin else {
                self.onEvent?("login refused for \(request.user): no such account")
                return verdict(Self.unknownOrWrong)
            }
            // The client confirms a new account's password with its person before it asks again.
            if request.existingAccountOnly { return verdict(.accountUnknown) }
            self.register(request, verdict: verdict)
        }
    }

    /// A first login's account, made unless another first login of the same name made it meanwhile
    /// (here or on another node): then this login is checked against the account that won, so two
    /// first logins with the same password both succeed.
    private func register(_ request: IMLoginAttempt, verdict: @escaping (IMLoginVerdict) -> Void) {
        let name = request.user.lowercased()
        let password = request.password
        let hasher = configuration.passwordHasher
        passwordWorkers.run({ hasher.hash(password) }) { [weak self] hash in
            guard let self else { return verdict(Self.stopped) }
            self.accounts.create(name, passwordHash: hash) { [weak self] created in
                guard let self else { return verdict(Self.stopped) }
                switch created {
                case .success(true):
                    self.report("account \(name) created at first login")
                    verdict(.created(user: name))
                case .success(false):
                    self.accounts.check(request) { [weak self] outcome in
                        verdict(self?.verdict(for: outcome) ?? .refused(.internalError, reason: "account vanished while being created"))
                    }
                case .failure(let failure):
                    self.logger.error("account \(name) not created: \(failure)")
                    verdict(Self.storageFailure)
                }
            }
        }
    }

    /// The verdict an account check gives; `nil` when there is no such account.
    private func verdict(for outcome: AccountCheck) -> IMLoginVerdict? {
        switch outcome {
        case .accepted(let name): return .acceptedAs(user: name)
        case .wrongPassword(let name): return wrongPassword(name)
        case .disabled(let name):
            onEvent?("login refused for \(name): account disabled")
            return IMLoginVerdict.accountDisabled
        case .failed: return Self.storageFailure
        case .noSuchAccount: return nil
        }
    }

    private func wrongPassword(_ user: String) -> IMLoginVerdict {
        // The server logs the failure with the address; this is the demo's narration only.
        onEvent?("login refused for \(user): wrong password")
        return Self.unknownOrWrong
    }

    private static let unknownOrWrong = IMLoginVerdict.refused(.authenticationFailed, reason: "unknown user or wrong password")
    private static let stopped = IMLoginVerdict.refused(.shuttingDown, reason: "node stopped")
    private static let storageFailure = IMLoginVerdict.refused(.internalError, reason: "storage failure")

    private func report(_ text: String) {
        logger.info("\(text)")
        onEvent?(text)
    }
}

/// Why a node operation was refused.
public enum ChatNodeError: Error, Equatable, CustomStringConvertible {
    case invalidUserName(String)
    /// A call that answers at once was made on a node whose store answers later (PostgreSQL): use
    /// the one with a completion.
    case asynchronousStorage
    /// A cluster (``ChatNode/Configuration/redis``) shares its store: it needs PostgreSQL, not a file.
    case clusterNeedsPostgres

    public var description: String {
        switch self {
        case .invalidUserName(let name): return "invalid user name \"\(name)\": use 1-32 letters, digits, _ - ."
        case .asynchronousStorage: return "this node's store answers later: use the call with a completion"
        case .clusterNeedsPostgres: return "a cluster's nodes share their store: --redis needs --postgres (or CHAT_NODE_POSTGRES), not a SQLite file"
        }
    }
}
