import ArgumentParser
import ChatNodeKit
import Glibc
import Logging
import RunLoopIM
import RunLoopKit
import RunLoopTLS

/// `chat-node client`: wires standard input, standard output and signals to a ``TerminalClient``.
struct Client: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A terminal client: rooms, direct messages, history, and each message's delivery.",
        discussion: """
            Type /help for the commands. Own messages are numbered m1, m2, … and each one's progress is \
            shown: queued, sent, stored (seq N) or failed. With standard input or output not a \
            terminal it runs line by line (no prompt, no escape codes); at the end of input it waits up \
            to --drain-seconds for its messages to settle, then exits 0 if nothing failed, 1 otherwise.

            The password comes from --password, the CHAT_NODE_PASSWORD environment variable, or a \
            prompt on the terminal.
            """
    )

    @Option(help: "The user to log in as (created at the first login if the node allows it).")
    var user: String

    @Option(help: "The password (other local users can read it with ps: prefer CHAT_NODE_PASSWORD or the prompt).")
    var password: String?

    @Option(help: "The node's address.")
    var host = "127.0.0.1"

    @Option(help: "The node's port.")
    var port: UInt16 = 7100

    @OptionGroup var tls: ClientTLSOptions

    @Option(help: "Seconds between heartbeats while idle.")
    var heartbeatSeconds = 30

    @Option(help: "At the end of input, seconds to wait for own messages to be delivered before closing anyway.")
    var drainSeconds = 10.0

    @Option(help: "Messages per /history page.")
    var historyPage = 20

    @Option(help: "Log level on standard error: trace, debug, info, notice, warning, error or critical.")
    var logLevel = "warning"

    func validate() throws {
        guard heartbeatSeconds > 0 else { throw ValidationError("--heartbeat-seconds must be positive") }
        guard drainSeconds >= 0, drainSeconds.isFinite else { throw ValidationError("--drain-seconds must be zero or more") }
        guard historyPage > 0 else { throw ValidationError("--history-page must be positive") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown log level \(logLevel)") }
    }

    func run() throws {
        let level = Logger.Level(rawValue: logLevel) ?? .warning
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        // A reader that goes away (`| head`) must end the output, not the process mid-close.
        signal(SIGPIPE, SIG_IGN)

        let console = TerminalConsole()
        let (password, typed) = try resolvedPassword()
        var settings = TerminalClient.Configuration(user: user, password: password)
        if typed {
            // A person typed it: a new account is made only once they typed it twice alike.
            settings.confirmNewAccountPassword = { user in TerminalConsole.readPassword(prompt: "password for \(user) again: ") }
        }
        settings.host = host
        settings.port = port
        settings.heartbeat = .seconds(heartbeatSeconds)
        settings.drainTimeout = .milliseconds(Int64((drainSeconds * 1000).rounded()))
        settings.historyPageSize = historyPage
        settings.isInteractive = console.isInteractive

        let loop = RunLoop.current
        let connector: IMConnector
        do {
            connector =
                try tls.clientContext().map { TLSFrameLink.connector(host: host, port: port, context: $0) }
                ?? TCPFrameLink.connector(host: host, port: port)
        } catch {
            printError("chat-node: \(error)")
            throw ExitCode.failure
        }
        let terminal = TerminalClient(configuration: settings, connector: connector, loop: loop) { line in
            console.show(line)
        }
        console.prompt = { terminal.prompt }
        var status: Int32 = 1
        terminal.onFinish = { finished in
            status = finished
            console.stopReading()
            loop.stopAll()
        }

        var signals: [RunLoopSignalSource] = []
        for number in [SIGINT, SIGTERM, SIGHUP] {
            // Each delivery escalates: /quit, then close without waiting, then leave at once.
            let source = try RunLoopSignalSource(signal: number) { _, count in
                for _ in 0..<count { terminal.quit() }
            }
            try loop.add(source, forMode: .common)
            signals.append(source)
        }
        defer {
            signals.forEach { $0.invalidate() }
            console.restore()
        }

        try console.start(
            loop: loop, onLine: { terminal.receive(line: $0) }, onEnd: { terminal.endOfInput() },
            onInterrupt: { terminal.quit() })
        if console.isInteractive { console.show("type /help for the commands") }
        terminal.start()
        while terminal.exitStatus == nil {
            try loop.run()
        }
        console.restore()
        if status != 0 { throw ExitCode(status) }
    }

    /// The password, and whether a person typed it at the terminal.
    private func resolvedPassword() throws -> (String, typed: Bool) {
        if let password { return (password, false) }
        if let fromEnvironment = getenv("CHAT_NODE_PASSWORD") { return (String(cString: fromEnvironment), false) }
        // Not from a script's standard input: its first line is a command, not a secret.
        if let typed = TerminalConsole.readPassword(prompt: "password for \(user): "), !typed.isEmpty { return (typed, true) }
        throw ValidationError("no password: give --password, set CHAT_NODE_PASSWORD, or run on a terminal to be asked")
    }
}
