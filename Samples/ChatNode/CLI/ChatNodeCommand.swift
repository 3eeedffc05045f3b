import ArgumentParser
import ChatNodeKit
import Glibc
import Logging
import RunLoopChat
import RunLoopChatCluster
import RunLoopChatPostgres
import RunLoopIM
import RunLoopIMCore
import RunLoopIMSQLite
import RunLoopKit
import RunLoopNet
import RunLoopRedis

/// `chat-node`: the demo chat node on RunLoopKit — a thin main over ChatNodeKit.
@main
struct ChatNodeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chat-node",
        abstract: "A small chat service on RunLoopKit's run loop: server, terminal client, demo.",
        subcommands: [Demo.self, Serve.self, CheckConfig.self, Client.self, Account.self, Migrate.self, Backup.self]
    )

    /// A first word that is no subcommand: usage on standard error and a failure, with the nearest
    /// command when one is close ("did you mean serve?"). ArgumentParser would only call it unexpected.
    static func main() {
        let names = configuration.subcommands.map { $0._commandName } + ["help"]
        if let word = CommandLine.arguments.dropFirst().first, !word.hasPrefix("-"), !names.contains(word) {
            let guess = closestWord(to: word, among: names).map { " — did you mean \($0)?" } ?? ""
            printError("chat-node: no command \(word)\(guess)")
            printError(helpMessage())
            Self.exit(withError: ExitCode.validationFailure)
        }
        main(nil)
    }

    /// No subcommand: usage on standard error and a failure, as git and systemctl do, so a script
    /// that forgot the command does not go on as if it had run.
    func run() throws {
        printError(Self.helpMessage())
        throw ExitCode.validationFailure
    }
}

/// The candidate within two edits of `word` (insert, delete, replace a letter), the nearest first;
/// none if none is that close.
func closestWord(to word: String, among candidates: [String]) -> String? {
    let typed = Array(word.lowercased())
    let scored = candidates.map { candidate -> (String, Int) in
        let target = Array(candidate)
        var previous = Array(0...target.count)
        for (i, letter) in typed.enumerated() {
            var row = [i + 1]
            for (j, other) in target.enumerated() {
                row.append(min(previous[j + 1] + 1, row[j] + 1, previous[j] + (letter == other ? 0 : 1)))
            }
            previous = row
        }
        return (candidate, previous[target.count])
    }
    guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= 2 else { return nil }
    return best.0
}

/// Options every subcommand that logs shares.
struct LogOptions: ParsableArguments {
    @Option(help: "Log level: trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown log level \(logLevel)") }
    }

    func bootstrap() {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a chat node until SIGTERM or SIGINT; SIGHUP reloads its settings (--config, see check-config).")

    @OptionGroup var options: ServeOptions

    func run() throws {
        let settings: NodeSettings
        do throws(ConfigErrors) {
            settings = try options.resolve().settings
        } catch {
            error.problems.forEach { printError("chat-node: \($0)") }
            throw configurationErrorExit
        }
        let logLevel = LiveLogLevel(settings.logLevel)
        NodeLogging.bootstrap(format: settings.logFormat, level: logLevel)
        unblockStopSignals()
        // Every client is a descriptor: the stock soft limit (1024) is usually far below the hard one,
        // and the node fits its connection limit to the limit in force when it starts listening.
        let softLimitBefore = DescriptorLimit.current.soft
        let softLimit = DescriptorLimit.raiseSoftLimitToHard()
        let loop = RunLoop.current
        let service = ServiceNotifier.fromEnvironment(environment, loop: loop, logger: Logger(label: "chat-node"))
        // A port in use is refused before the database file is created or opened.
        try StartupFailure.checkListen(.im, host: settings.host, port: settings.port)
        if settings.http { try StartupFailure.checkListen(.http, host: settings.host, port: settings.httpPort) }
        var configuration = try settings.nodeConfiguration()
        do {
            configuration.tls = try settings.tlsContext()
        } catch {
            printError("chat-node: \(error)")
            throw ExitCode.failure
        }
        configuration.metrics.bootstrapProcess()
        var lock: InstanceLock?
        let node = try StartupFailure.openingDatabase(configuration.storage) {
            lock = try InstanceLock(storage: configuration.storage)
            return try ChatNode(configuration: configuration, loop: loop)
        }
        defer { lock?.release() }
        if softLimit != softLimitBefore { node.logger.info("descriptor limit raised from \(softLimitBefore) to \(softLimit)") }
        if case .failure(let refusal) = try loop.runUntilFinished(node.connectStorage) {
            printError("chat-node: \(refusal)")
            throw ExitCode.failure
        }
        var refusal: ChatSchemaError?
        node.onStorageRefused = { refused in
            refusal = refused
            loop.stopAll()
        }
        try node.start()
        var signals: [RunLoopSignalSource] = []
        for signal in [SIGTERM, SIGINT] {
            let source = try RunLoopSignalSource(signal: signal) { _, _ in
                node.logger.info("signal \(signal): stopping")
                service?.stopping(status: "stopping on signal \(signal): closing \(node.server.sessions.count) sessions")
                node.stop { loop.stopAll() }
            }
            try loop.add(source, forMode: .common)
            signals.append(source)
        }
        let reloader = NodeReloader(node: node, running: settings, logLevel: logLevel) {
            Result { () throws(ConfigErrors) in try options.resolve().settings }
        }
        reloader.willReload = { service?.reloading() }
        reloader.didReload = { service?.reloaded(status: "serving IM on \(settings.host):\(node.port), settings reloaded") }
        signals.append(try reloader.reloadOnHangup(loop: loop))
        let stallDetector = configuration.metrics.watchStalls(of: loop, logger: node.logger)
        // Announced once a stop signal would be handled: whoever read the port may send SIGTERM at once.
        print("listening on \(settings.host):\(node.port)")
        if let page = node.pageURL { print("page: \(page)") }
        fflush(nil)  // a script or test reads the port from a pipe
        service?.ready(status: "serving IM on \(settings.host):\(node.port)\(node.pageURL.map { ", page \($0)" } ?? "")")
        try loop.run()
        stallDetector.detach()
        signals.forEach { $0.invalidate() }
        if let refusal {
            printError("chat-node: \(refusal)")
            throw ExitCode.failure
        }
    }
}

/// A process inherits its parent's signal mask, and some parents block everything (Swift
/// concurrency's threads do, and a program they spawn starts so): a SIGTERM would then wait
/// unseen for ever. The node stops on SIGTERM and SIGINT whoever started it; threads made later
/// inherit the unblocked mask.
private func unblockStopSignals() {
    var stopSignals = sigset_t()
    sigemptyset(&stopSignals)
    sigaddset(&stopSignals, SIGTERM)
    sigaddset(&stopSignals, SIGINT)
    pthread_sigmask(SIG_UNBLOCK, &stopSignals, nil)
}

struct Account: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage accounts in a node's database.",
        subcommands: [Add.self, List.self, Passwd.self, Remove.self, Disable.self, Enable.self]
    )

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an account; the password is read from standard input (asked twice at a terminal).")

        @OptionGroup var storage: StorageOptions
        @OptionGroup var log: LogOptions

        @Option(help: "The user name (1-32 letters, digits, _ - .).")
        var user: String

        func run() throws {
            log.bootstrap()
            let node = try Account.node(storage)
            let password = try PasswordInput.read()
            let created = try RunLoop.current.runUntilFinished { node.addAccount(user: user, password: password, completion: $0) }.get()
            guard created else { throw Account.NothingDone("\(user) exists already") }
            print("created \(user)")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the accounts.")

        @OptionGroup var storage: StorageOptions
        @OptionGroup var log: LogOptions

        func run() throws {
            log.bootstrap()
            let node = try Account.node(storage)
            for name in try RunLoop.current.runUntilFinished(node.accountNames).get() { print(name) }
        }
    }

    /// A node that does not listen, its store open (PostgreSQL: connected, its schema checked). A
    /// SQLite file that does not exist is refused, not created.
    static func node(_ storage: StorageOptions) throws -> ChatNode {
        let configuration = ChatNode.Configuration(storage: try storage.storage())
        try StartupFailure.requireExistingDatabase(configuration.storage)
        let node = try StartupFailure.openingDatabase(configuration.storage) { try ChatNode(configuration: configuration) }
        if case .failure(let refusal) = try RunLoop.current.runUntilFinished(node.connectStorage) {
            throw ValidationError(refusal.description)
        }
        return node
    }
}

/// A line on standard error, for what an operator must read even when stdout is piped away.
func printError(_ line: String) {
    let text = line + "\n"
    _ = text.withCString { write(STDERR_FILENO, $0, strlen($0)) }
}
