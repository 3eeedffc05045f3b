import ArgumentParser
import Glibc
import Logging
import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopIMSQLite
import RunLoopKit

/// A minimal RunLoopIM server: any user name logs in (or only those given with `--user`), direct
/// messages and rooms are relayed, undelivered messages wait in memory for their recipient's next
/// login. With `--database FILE` messages and inboxes live in SQLite and survive a crash of the
/// process (the fault tests kill it with SIGKILL); without it they are in memory only.
@main
struct IMRelay: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "im-relay",
        abstract: "A RunLoopIM relay server on RunLoopKit's run loop (in-memory storage)."
    )

    @Option(help: "Address to listen on (an IPv4 or IPv6 literal).")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on; 0 lets the system choose. The bound port is printed on stdout as 'listening on HOST:PORT'.")
    var port: UInt16 = 7100

    @Option(name: .customLong("user"), help: "An account as NAME:PASSWORD (repeatable). Without any, every name logs in.")
    var users: [String] = []

    @Option(help: "SQLite file for messages and inboxes (WAL mode); without it everything is kept in memory and lost with the process.")
    var database: String?

    @Option(help: "Room to create with every logged-in user as a member (repeatable).")
    var room: [String] = []

    @Option(help: "Seconds a client has to log in after connecting.")
    var loginSeconds = 10

    @Option(help: "Log level: trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown log level \(logLevel)") }
        for user in users where !user.contains(":") { throw ValidationError("--user takes NAME:PASSWORD, got \(user)") }
        guard loginSeconds > 0 else { throw ValidationError("--login-seconds must be positive") }
    }

    func run() throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "im-relay")
        let loop = RunLoop.current
        var accounts: [String: String]?
        if !users.isEmpty {
            accounts = Dictionary(
                users.map { entry in
                    let parts = entry.split(separator: ":", maxSplits: 1).map(String.init)
                    return (parts[0], parts.count > 1 ? parts[1] : "")
                }, uniquingKeysWith: { _, last in last })
        }
        let store: any SynchronousChatStore =
            try database.map { try SQLiteIMStore(path: $0, accounts: accounts, logger: logger) }
            ?? InMemoryIMStore(accounts: accounts)
        var settings = IMServer.Settings()
        settings.session.loginTimeout = .seconds(loginSeconds)
        let server = IMServer(store: store, settings: settings, logger: logger)
        server.applicationHandler = ChatService()
        let rooms = room
        server.onPresenceChange = { _, user, online in
            logger.info("\(user) \(online ? "online" : "offline")")
            if online { for name in rooms { _ = store.join(room: name, user: user) } }
        }
        server.onSessionEnd = { _, session, reason in
            logger.debug("session \(session.user ?? "(not logged in)") ended: \(reason)")
        }
        try server.listen(host: host, port: port)
        print("listening on \(host):\(server.port)")
        fflush(nil)  // all output streams: a test reads the port from a pipe

        let stop: (RunLoopSignalSource, Int32) -> Void = { _, signal in
            logger.info("signal \(signal): shutting down")
            server.shutdown()
            loop.stopAll()
        }
        let term = try RunLoopSignalSource(signal: SIGTERM) { source, _ in stop(source, SIGTERM) }
        let interrupt = try RunLoopSignalSource(signal: SIGINT) { source, _ in stop(source, SIGINT) }
        try loop.add(term, forMode: .common)
        try loop.add(interrupt, forMode: .common)
        try loop.run()
        // Let the graceful closes flush (ERROR frames to the clients) before the process ends.
        _ = try loop.run(.default, timeout: .milliseconds(200))
    }
}
