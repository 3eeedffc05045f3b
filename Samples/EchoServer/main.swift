import ArgumentParser
import Glibc
import Logging
import RunLoopKit
import RunLoopNet

/// A small TCP echo daemon: one listener and every connection as port sources on the main thread's
/// run loop, backpressure from each client's reading speed, timeouts that reclaim every kind of stuck
/// peer, logs through swift-log, and a clean stop on SIGTERM or SIGINT (signal sources in the common
/// modes) in which every client still connected receives all its echoes, then end of stream.
@main
struct EchoServer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "echo-server",
        abstract: "A TCP echo daemon on RunLoopKit's run loop (RunLoopNet)."
    )

    @Option(help: "Address to listen on (an IPv4 or IPv6 literal).")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on; 0 lets the system choose (the chosen port is printed).")
    var port: UInt16 = 7007

    @Option(name: .customLong("max-connections"), help: "Most clients served at once; the next ones are told \"busy\" and closed.")
    var maximumConnections = 1024

    @Option(help: "Close a client silent for this many seconds (0: never).")
    var idleSeconds: Double = 300

    @Option(help: "Close a client whose echoes make no progress for this many seconds (0: never) — one that sends but does not read.")
    var writeTimeoutSeconds: Double = 30

    @Option(help: "After a graceful close, wait this long for the client to end its side (0: no limit).")
    var lingerSeconds: Double = 10

    @Option(help: "TCP keepalive: probe a connection silent for this many seconds (0: off).")
    var keepaliveSeconds = 60

    @Option(help: "TCP_USER_TIMEOUT: drop a connection whose sent data stays unacknowledged this many seconds (0: system default).")
    var userTimeoutSeconds: Double = 60

    @Option(help: "Seconds to let open connections flush on shutdown before they are reset.")
    var graceSeconds: Double = 5

    @Option(help: "Log level: trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown log level \(logLevel)") }
        guard maximumConnections > 0 else { throw ValidationError("--max-connections must be positive") }
        let durations = [
            ("--idle-seconds", idleSeconds), ("--write-timeout-seconds", writeTimeoutSeconds),
            ("--linger-seconds", lingerSeconds), ("--user-timeout-seconds", userTimeoutSeconds),
            ("--grace-seconds", graceSeconds), ("--keepalive-seconds", Double(keepaliveSeconds))
        ]
        for (name, value) in durations where !(value >= 0 && value < 1e9) {
            throw ValidationError("\(name) must be a number of seconds, 0 or more")
        }
    }

    /// A positive number of seconds as a duration; 0 means "none".
    private static func duration(_ seconds: Double) -> Duration? {
        seconds > 0 ? .milliseconds(Int64((seconds * 1000).rounded())) : nil
    }

    func run() throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "echo-server")
        // Each client is a descriptor: the stock soft limit (1024) is usually far below the hard one.
        let before = DescriptorLimit.current.soft
        let after = DescriptorLimit.raiseSoftLimitToHard()
        if after != before { logger.info("descriptor limit raised from \(before) to \(after)") }
        let options = TCPOptions(
            keepAlive: keepaliveSeconds > 0 ? .init(idle: .seconds(keepaliveSeconds)) : nil,
            userTimeout: Self.duration(userTimeoutSeconds))
        let timeouts = Server.Timeouts(
            idle: Self.duration(idleSeconds), write: Self.duration(writeTimeoutSeconds),
            linger: Self.duration(lingerSeconds), grace: Self.duration(graceSeconds) ?? .zero)
        let server = Server(logger: logger, maximumConnections: maximumConnections, options: options, timeouts: timeouts)
        try server.run(host: host, port: port)
    }
}

/// The daemon's state, all on the main thread's loop.
private final class Server {
    /// Every limit on a client's time; `nil` lifts one.
    struct Timeouts {
        /// No input for this long (while reading).
        var idle: Duration?
        /// Echoes waiting without progress for this long: the client does not read.
        var write: Duration?
        /// After a graceful close, waiting for the client's end of input.
        var linger: Duration?
        /// On shutdown, how long connections may take to close before they are reset.
        var grace: Duration
    }

    let loop = RunLoop.current
    let logger: Logger
    let listener: TCPListener
    let timeouts: Timeouts
    var signals: [RunLoopSignalSource] = []
    var isStopping = false
    var served = 0
    /// How the connections closed, by reason, for the summary at the end.
    var closes: [String: Int] = [:]

    init(logger: Logger, maximumConnections: Int, options: TCPOptions, timeouts: Timeouts) {
        self.logger = logger
        self.timeouts = timeouts
        listener = TCPListener(loop: loop, connectionOptions: options, logger: logger)
        listener.maximumConnections = maximumConnections
        listener.refusalMessage = Array("busy\n".utf8)
    }

    func run(host: String, port: UInt16) throws {
        listener.onAccept = { [unowned self] _, connection in accept(connection) }
        // The one log line per refusal (the listener logs none when it is told).
        listener.onRefused = { [unowned self] _, client, error in
            logger.notice("refused \(client?.description ?? "?"): \(error)")
        }
        try listener.listen(host: host, port: port)
        // The one line on stdout, so a script (or a test) can find the port chosen for --port 0.
        print("echo-server listening on \(listener.localAddress?.description ?? "?")")
        fflush(nil)  // all streams: naming `stdout` is not concurrency-safe in Swift 6
        logger.info("sleeping in libevent's \(loop.backendMethod) backend; SIGTERM or SIGINT stops")

        for signo in [SIGTERM, SIGINT] {
            let source = try RunLoopSignalSource(signal: signo) { [unowned self] _, _ in
                stop(because: signo == SIGTERM ? "SIGTERM" : "SIGINT")
            }
            // Common modes: a stop request must get through whatever mode the loop runs.
            try loop.add(source, forMode: .common)
            signals.append(source)
        }
        try loop.run()
        for source in signals { source.invalidate() }
        let summary = closes.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        logger.info("stopped after serving \(served) connections\(summary.isEmpty ? "" : " (\(summary))")")
    }

    private func accept(_ connection: TCPConnection) {
        served += 1
        let peer = connection.remoteAddress?.description ?? "?"
        // Per-connection lines stay below info: a busy daemon would log little else.
        logger.debug("connection from \(peer) (\(listener.connectionCount) open)")
        connection.readTimeout = timeouts.idle
        connection.writeTimeout = timeouts.write
        connection.lingerTimeout = timeouts.linger
        var echoed = 0
        connection.onData = { [logger] connection, bytes in
            do throws(NetError) {
                try connection.write(bytes)
                echoed += bytes.count
            } catch {
                logger.warning("\(peer): \(error); closing")
                connection.close(immediately: true)
                return
            }
            // A client that sends faster than it reads: stop reading from it until its echoes drain.
            if !connection.isWritable { connection.pauseReading() }
        }
        connection.onWritabilityChanged = { connection, writable in
            if writable { connection.resumeReading() }
        }
        connection.onClose = { [unowned self] _, reason in
            logger.debug("connection from \(peer) closed: \(reason) (echoed \(echoed) bytes)")
            closes[reason.description, default: 0] += 1
            if isStopping && listener.connectionCount == 0 { loop.stop() }
        }
    }

    /// Stops accepting and closes every connection gracefully — each client receives every echo
    /// already queued, then end of stream (the lingering close) — then ends the run; connections
    /// still open after the grace period are reset.
    private func stop(because reason: String) {
        guard !isStopping else {
            logger.notice("\(reason) again: stopping now")
            return loop.stop()
        }
        isStopping = true
        logger.notice("\(reason) received: stopping (\(listener.connectionCount) connections open)")
        let open = listener.connections
        listener.close()
        if open.isEmpty { return loop.stop() }
        for connection in open { connection.close() }
        let deadline = RunLoopTimer(after: timeouts.grace) { [unowned self] _ in
            logger.warning("grace period over: resetting \(listener.connectionCount) connections")
            for connection in listener.connections { connection.close(immediately: true) }
            loop.stop()
        }
        loop.add(deadline, forMode: .common)
    }
}
