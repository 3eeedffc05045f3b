import CHiredis
public import Logging
public import RunLoopKit
import RunLoopNet

/// One Redis connection driven by a ``RunLoop``: hiredis's asynchronous context with its socket as
/// port sources (``HiredisLoopAdapter``), every deadline on the loop's clock. hiredis writes the
/// commands (binary-safe, `redisAsyncCommandArgv`) and parses the replies; this type decides nothing
/// itself (``RedisConnectionMachine`` does) and never blocks the loop: it connects to a unix socket
/// or a numeric address only, since hiredis would resolve a name with a blocking `getaddrinfo`.
///
/// Use: create it, set the callbacks, call ``connect()``; commands may be sent at once (hiredis
/// queues them until the connection is made). Completions and callbacks run on the loop's thread
/// from a loop callout, never inside a method you called (those wait for the loop's next pass), so a
/// completion may send the next command or close the connection.
///
/// Every command completes exactly once, in the order sent unless its timeout passes first: with its
/// reply, the server's error reply (``RedisError/server(_:)``), or why the connection ended (connect
/// failed, connection lost, timed out, closed) — whatever happens to the server or the socket. A
/// command that timed out stays on the wire: Redis still runs it and answers, and that late reply is
/// dropped; commands behind it wait for it.
///
/// Lifetime: from ``connect()`` until it closes, the connection keeps itself alive; close it before
/// its loop ends. A connection that failed or broke stays closed: to come back by itself with a
/// backoff, let RunLoopNet's `ReconnectingLink` own it (it makes a new connection per attempt).
///
/// Threads: confined to its loop's thread (checked with a precondition); from another thread, hop
/// with ``RunLoop/perform(inModes:label:_:)``.
public final class RedisConnection {
    /// Where a connection is in its life.
    public enum State: Sendable, Equatable {
        /// Created; ``connect()`` not called yet.
        case idle
        /// Connecting.
        case connecting
        /// Connected: commands go out.
        case ready
        /// Closed; ``closeReason`` says why.
        case closed
    }

    /// What a command completes with.
    public typealias Completion = (Result<RedisReply, RedisError>) -> Void

    /// The loop the connection runs on.
    public let loop: RunLoop
    /// The modes its sources and timer are in.
    public let modes: [RunLoop.Mode]
    /// Where it connects, and its timeouts.
    public let configuration: RedisConfiguration
    /// Where it logs (its end at `debug`: the owner decides what matters).
    public var logger: Logger

    /// Runs once when the connection is made.
    public var onConnect: ((RedisConnection) -> Void)?
    /// Runs exactly once when the connection closes, for whatever reason: ``RedisError/closed`` after
    /// ``close()``, else why it failed or broke. Pending commands have completed before it runs.
    public var onClose: ((RedisConnection, RedisError) -> Void)?

    /// Where the connection is in its life.
    public var state: State {
        switch machine.phase {
        case .idle: return .idle
        case .connecting: return .connecting
        case .ready: return .ready
        case .closing, .closed: return .closed
        }
    }

    /// Why it closed; `nil` while open.
    public var closeReason: RedisError? {
        switch machine.phase {
        case .closing(let reason), .closed(let reason): return reason
        default: return nil
        }
    }

    private var machine: RedisConnectionMachine<Completion>
    private var adapter: HiredisLoopAdapter?
    private lazy var timer = DeadlineTimer(loop: loop, modes: modes, label: "redis deadline") { [weak self] in
        self?.deadlinePassed()
    }
    /// What hiredis's callbacks caused, handed to ``callbacks`` once hiredis has returned: user code
    /// never runs inside hiredis.
    private var ready: [() -> Void] = []
    private var isHandingOver = false
    /// The connection's hold on itself between ``connect()`` and its close.
    private var keepAlive: RedisConnection?
    private lazy var callbacks = CallbackDeferral(loop: loop, modes: modes, label: "redis callbacks")

    /// Creates an idle connection; call ``connect()`` next. Must be called on the loop's thread.
    /// - Parameter modes: where its sources and timer go; ``RunLoop/Mode/common`` keeps it working in
    ///   any common mode.
    public init(
        loop: RunLoop = .current,
        modes: [RunLoop.Mode] = [.common],
        configuration: RedisConfiguration,
        logger: Logger = Logger(label: "RunLoopRedis")
    ) {
        precondition(loop.isCurrentThread, "RedisConnection must be created on its run loop's thread")
        precondition(!modes.isEmpty, "RedisConnection needs at least one mode")
        self.loop = loop
        self.modes = modes
        self.configuration = configuration
        self.logger = logger
        machine = RedisConnectionMachine(connectTimeout: configuration.connectTimeout, commandTimeout: configuration.commandTimeout)
    }

    /// Starts connecting. The outcome comes on the loop's thread: ``onConnect``, or ``onClose`` with
    /// ``RedisError/connectionFailed(_:)`` (hiredis's message) or ``RedisError/timedOut(_:)``
    /// `.connect`. Calling it again does nothing.
    public func connect() {
        checkThread()
        callbacks.ownerCall {
            guard machine.start(now: loop.now) else { return }
            keepAlive = self
            openContext()
            armTimer()
            handOver()
        }
    }

    /// Sends one command, its name first (`["SET", "key", "value"]`), the strings as UTF-8.
    /// See ``send(bytes:timeout:completion:)``.
    public func send(_ arguments: [String], timeout: Duration? = nil, completion: @escaping Completion) {
        send(bytes: arguments.map { Array($0.utf8) }, timeout: timeout, completion: completion)
    }

    /// Sends one command whose arguments are any bytes (a value with NUL or invalid UTF-8).
    ///
    /// `completion` runs once on the loop's thread with the reply, or the error (see
    /// ``RedisError``). `timeout` replaces ``RedisConfiguration/commandTimeout`` for this command.
    /// Before ``connect()`` it fails with ``RedisError/closed``; after the connection ended, with why
    /// it ended.
    public func send(bytes arguments: [[UInt8]], timeout: Duration? = nil, completion: @escaping Completion) {
        checkThread()
        callbacks.ownerCall {
            if let misuse = Self.misuse(arguments) {
                report { completion(.failure(misuse)) }
            } else {
                switch machine.submit(completion, timeout: timeout, now: loop.now) {
                case .failure(let error): report { completion(.failure(error)) }
                case .success(let id): write(arguments, id: id)
                }
            }
            armTimer()
            handOver()
        }
    }

    /// Closes the connection at once: the socket goes, and every pending command completes with
    /// ``RedisError/closed`` on the loop's next pass, then ``onClose`` runs. Calling it again does
    /// nothing.
    public func close() {
        checkThread()
        callbacks.ownerCall {
            switch machine.close(.closed) {
            case .freeContext: freeContext()
            case .ended(let ending): finish(ending)
            case .nothing: break
            }
            handOver()
        }
    }

    // MARK: hiredis

    private func openContext() {
        let context: UnsafeMutablePointer<redisAsyncContext>?
        if configuration.isUnixSocket {
            context = redisAsyncConnectUnix(configuration.host)
        } else if let address = SocketAddress(ip: configuration.host, port: configuration.port) {
            context = redisAsyncConnect(address.ip, Int32(configuration.port))
        } else {
            return contextEnded("\(configuration.host) is not a numeric address or a socket path (names are resolved off the loop first)")
        }
        guard let context else { return contextEnded("hiredis could not allocate a context") }
        if context.pointee.err != 0 {
            let message = String(cString: context.pointee.errstr)
            redisAsyncFree(context)
            return contextEnded(message)
        }
        context.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        do {
            adapter = try HiredisLoopAdapter(
                context: context, loop: loop, modes: modes,
                handled: { [weak self] in
                    self?.armTimer()
                    self?.handOver()
                },
                ended: { [weak self] message in self?.contextEnded(message) })
        } catch {
            redisAsyncFree(context)
            return contextEnded("cannot watch the socket: \(error)")
        }
        redisAsyncSetConnectCallback(context) { context, status in
            guard status == REDIS_OK, let owner = context?.pointee.data else { return }
            Unmanaged<RedisConnection>.fromOpaque(owner).takeUnretainedValue().connectionMade()
        }
    }

    private func write(_ arguments: [[UInt8]], id: UInt64) {
        let status =
            adapter?.context.map { context in
                Self.withArgv(arguments) { count, argv, lengths in
                    redisAsyncCommandArgv(
                        context,
                        { context, reply, id in
                            guard let owner = context?.pointee.data else { return }
                            let connection = Unmanaged<RedisConnection>.fromOpaque(owner).takeUnretainedValue()
                            connection.replied(UInt64(UInt(bitPattern: id)), reply?.assumingMemoryBound(to: redisReply.self))
                        },
                        UnsafeMutableRawPointer(bitPattern: UInt(id)), count, argv, lengths)
                }
            } ?? REDIS_ERR
        if status != REDIS_OK, let completion = machine.complete(id) {
            report { completion(.failure(.connectionLost("hiredis refused the command"))) }
        }
    }

    /// hiredis's reply callback. A `nil` reply means the context is being freed: its end fails what
    /// waits, with the reason.
    private func replied(_ id: UInt64, _ reply: UnsafeMutablePointer<redisReply>?) {
        guard let reply, let completion = machine.complete(id) else { return }
        let result: Result<RedisReply, RedisError> =
            switch RedisReply(copying: reply) {
            case .error(let message): .failure(.server(message))
            case let value: .success(value)
            }
        report { completion(result) }
    }

    private func connectionMade() {
        guard machine.connected() else { return }
        report { [self] in onConnect?(self) }
    }

    private func freeContext() {
        guard let context = adapter?.context else { return }
        redisAsyncFree(context)
    }

    private func contextEnded(_ message: String?) {
        guard let ending = machine.contextEnded(message: message) else { return }
        finish(ending)
    }

    private func finish(_ ending: RedisConnectionMachine<Completion>.Ending) {
        timer.cancel()
        logger.debug("redis connection closed", metadata: ["reason": "\(ending.reason)", "failed commands": "\(ending.failed.count)"])
        for completion in ending.failed { report { completion(.failure(ending.reason)) } }
        // The report holds the connection until it ran; the callbacks go after it, ending cycles.
        report { [self] in
            onClose?(self, ending.reason)
            onClose = nil
            onConnect = nil
        }
        keepAlive = nil
    }

    private func deadlinePassed() {
        let expiry = machine.timerFired(now: loop.now)
        for completion in expiry.expired { report { completion(.failure(.timedOut(.command))) } }
        if expiry.abandonsConnect { freeContext() }
        armTimer()
        handOver()
    }

    private func armTimer() {
        guard machine.phase == .connecting || machine.phase == .ready else { return }
        if let deadline = machine.nextDeadline { timer.arm(at: deadline) } else { timer.disarm() }
    }

    // MARK: callbacks

    private func report(_ callback: @escaping () -> Void) { ready.append(callback) }

    /// Hands what hiredis caused to the deferral in order; inside an owner's call it waits for the
    /// next pass. Not re-entered: a callback that causes more (closing from a completion) appends to
    /// ``ready`` and the loop here takes it after what came first.
    private func handOver() {
        guard !isHandingOver else { return }
        isHandingOver = true
        defer { isHandingOver = false }
        while !ready.isEmpty {
            let batch = ready
            ready.removeAll()
            for callback in batch { callbacks.run(callback) }
        }
    }

    private func checkThread() {
        precondition(loop.isCurrentThread, "RedisConnection used off its run loop's thread")
    }

    private static func misuse(_ arguments: [[UInt8]]) -> RedisError? {
        guard let name = arguments.first else { return .protocolMisuse("an empty command") }
        let upper = String(decoding: name, as: UTF8.self).uppercased()
        guard ["SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "MONITOR"].contains(upper) else { return nil }
        return .protocolMisuse("\(upper) makes replies without commands: read a stream instead")
    }

    /// Runs `body` with hiredis's `argc`, `argv` and `argvlen` for `arguments`, laid out in one buffer
    /// (hiredis copies them before it returns).
    private static func withArgv<Result>(
        _ arguments: [[UInt8]], _ body: (Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>, UnsafePointer<Int>) -> Result
    ) -> Result {
        var flat: [UInt8] = []
        var offsets: [Int] = []
        flat.reserveCapacity(arguments.reduce(1) { $0 + $1.count })
        for argument in arguments {
            offsets.append(flat.count)
            flat += argument
        }
        flat.append(0)  // never empty, so the buffer has an address even for empty arguments
        let lengths = arguments.map(\.count)
        return flat.withUnsafeBytes { buffer in
            let base = buffer.baseAddress!.assumingMemoryBound(to: CChar.self)
            var pointers: [UnsafePointer<CChar>?] = offsets.map { base + $0 }
            return pointers.withUnsafeMutableBufferPointer { argv in
                lengths.withUnsafeBufferPointer { body(Int32(arguments.count), argv.baseAddress!, $0.baseAddress!) }
            }
        }
    }
}
