import ArgumentParser
import Glibc
import Logging
import RunLoopKit
import RunLoopNet

/// A small TCP echo daemon: one listener and every connection as port sources on the main thread's
/// run loop, backpressure from each client's reading speed, logs through swift-log, and a clean stop
/// on SIGTERM or SIGINT (signal sources in the common modes).
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

    @Option(help: "Most clients served at once; the next ones are told \"busy\" and closed.")
    var maxConnections = 1024

    @Option(help: "Close a client silent for this many seconds (0: never).")
    var idleSeconds = 300

    @Option(help: "Seconds to let open connections flush on shutdown before they are reset.")
    var graceSeconds = 5

    @Option(help: "Log level: trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown log level \(logLevel)") }
        guard maxConnections > 0 else { throw ValidationError("--max-connections must be positive") }
    }

    func run() throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let server = Server(
            logger: Logger(label: "echo-server"), maxConnections: maxConnections,
            idleTimeout: idleSeconds > 0 ? .seconds(idleSeconds) : nil, grace: .seconds(max(0, graceSeconds)))
        try server.run(host: host, port: port)
    }
}

/// The daemon's state, all on the main thread's loop.
private final class Server {
    let loop = RunLoop.current
    let logger: Logger
    let listener: TCPListener
    let idleTimeout: Duration?
    let grace: Duration
    var signals: [RunLoopSignalSource] = []
    var isStopping = false
    var served = 0

    init(logger: Logger, maxConnections: Int, idleTimeout: Duration?, grace: Duration) {
        self.logger = logger
        self.idleTimeout = idleTimeout
        self.grace = grace
        listener = TCPListener(loop: loop, logger: logger)
        listener.maxConnections = maxConnections
        listener.refusalMessage = Array("busy\n".utf8)
    }

    func run(host: String, port: UInt16) throws {
        listener.onAccept = { [unowned self] _, connection in accept(connection) }
        listener.onRefused = { [unowned self] _, client, error in
            logger.warning("refused \(client?.description ?? "?"): \(error)")
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
        logger.info("stopped after serving \(served) connections")
    }

    private func accept(_ connection: TCPConnection) {
        served += 1
        let peer = connection.remoteAddress?.description ?? "?"
        logger.info("connection from \(peer) (\(listener.connectionCount) open)")
        connection.readTimeout = idleTimeout
        connection.onData = { [logger] connection, bytes in
            do throws(NetError) {
                try connection.write(bytes)
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
            logger.info("connection from \(peer) closed: \(reason)")
            if isStopping && listener.connectionCount == 0 { loop.stop() }
        }
    }

    /// Stops accepting, lets every connection flush and close, then ends the run; connections still
    /// open after the grace period are reset.
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
        let deadline = RunLoopTimer(after: grace) { [unowned self] _ in
            logger.warning("grace period over: resetting \(listener.connectionCount) connections")
            for connection in listener.connections { connection.close(immediately: true) }
            loop.stop()
        }
        loop.add(deadline, forMode: .common)
    }
}
