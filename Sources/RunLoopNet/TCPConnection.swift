public import Logging
public import RunLoopKit

#if canImport(Glibc)
import Glibc
#endif

/// A TCP connection scheduled on a ``RunLoop``: a port source for input (always, while reading), a
/// second one for output (only while output waits, so a level-triggered writable socket never spins
/// the loop), and timers for the connect, read and write timeouts — all in the modes the owner chose.
///
/// Create one with ``init(loop:modes:options:limits:logger:)`` and ``connect(to:port:timeout:resolver:)``,
/// or receive one from a ``TCPListener``. Set the callbacks before the loop runs again; every callback
/// runs on the loop's thread, from a loop callout — never from inside a method you call on the
/// connection (a failure detected inside ``write(_:)`` or ``close(immediately:)`` is reported on the next
/// pass of the loop).
///
/// Lifetime: from `connect` (or accept) until it closes, the loop keeps the connection alive, so an
/// owner may hold it weakly or not at all. Once closed, its sources and timers are off the loop and it
/// is released when the owner lets go. The callbacks are dropped after ``onClose`` runs, which breaks
/// any cycle a callback capturing its connection would make.
///
/// Threads: a connection is confined to its loop's thread. Every method and property must be used on
/// that thread (checked with a precondition); from another thread, hop with
/// ``RunLoop/perform(inModes:_:)``.
///
/// Failures: every failure closes this one connection with a ``CloseReason`` delivered once to
/// ``onClose`` and kept in ``closeReason``; the loop and other connections carry on.
public final class TCPConnection {
    /// Where a connection is in its life.
    public enum State: Sendable, Equatable {
        /// Created; `connect` not called yet.
        case idle
        /// Waiting for the resolver.
        case resolving
        /// The TCP handshake is in progress.
        case connecting
        /// Open (possibly half-closed; see ``isInputClosed`` and ``isOutputClosed``).
        case connected
        /// ``close(immediately:)`` (or the peer's end of input) asked for a graceful close: queued output
        /// is being flushed, then the connection lingers until the peer's end of input (see
        /// ``close(immediately:)``). Input arriving meanwhile is read and discarded.
        case closing
        /// Closed; ``closeReason`` says why.
        case closed
    }

    /// The loop the connection is scheduled on.
    public let loop: RunLoop
    /// The modes its sources and timers are in (``RunLoop/Mode/common`` by default).
    public let modes: [RunLoop.Mode]
    /// Socket options, applied when the socket is created or accepted.
    public var options: TCPOptions { settings.options }
    /// Buffer limits and water marks; changes apply from the next read or write.
    public var limits: TCPBufferLimits {
        get { settings.limits }
        set { ownSettings().limits = newValue }
    }
    /// Where the connection logs (failures at `debug`; it is the owner's job to decide what matters).
    public var logger: Logger {
        get { settings.logger }
        set { ownSettings().logger = newValue }
    }
    /// Who the connection is, as traces and timelines name its sources ("alice ↔ node"); nil names
    /// them by the socket ("tcp read 12"). Read once, when the socket is first watched: set it before
    /// ``connect(to:port:timeout:resolver:)``, or in the listener's `onAccept`. Name by owner, not
    /// per connection: a string made once and shared by every connection it names costs no
    /// allocation per connection (the write source, made only when output waits, appends to it).
    /// Kept in the connection's rarely used state: most connections are never named.
    public var label: String? {
        get { rareState?.label }
        set { rare.label = newValue }
    }

    /// Where the connection is in its life.
    public var state: State { lifecycle.state }
    /// Why it closed; `nil` until it has.
    public var closeReason: CloseReason? { lifecycle.closeReason }
    /// This side's address, once connected. A connection that connected keeps it from then on; an
    /// accepted one asks its socket each time (a system call), and has none once closed: kept, it
    /// would cost each of a server's thousands of idle connections 24 bytes and each accept a call.
    public var localAddress: SocketAddress? {
        if let connected = rareState?.connectedLocalAddress { return connected }
        switch state {
        case .connected, .closing: return fd >= 0 ? SocketAddress.of(fd, peer: false) : nil
        default: return nil
        }
    }
    /// The peer's address, once connecting or accepted.
    public internal(set) var remoteAddress: SocketAddress?
    /// True once the peer finished sending (end of input) while the connection stays open for writing.
    public var isInputClosed: Bool { lifecycle.isInputClosed }
    /// True once this side shut down its output: ``shutdownOutput()`` took effect, or a graceful
    /// ``close(immediately:)`` flushed its output and now waits for the peer's end of input.
    public var isOutputClosed: Bool { lifecycle.isOutputClosed }
    /// False while more than the high water mark of output waits; true again at or below the low
    /// water mark. See ``TCPBufferLimits``.
    public var isWritable: Bool { writability.isWritable }

    /// Runs once when the handshake completes (not for accepted connections, which are already open).
    public var onConnect: ((TCPConnection) -> Void)? {
        get { rareState?.onConnect }
        set { setRare(\.onConnect, newValue) }
    }
    /// Receives input as it arrives, whenever no read request (``read(exactly:timeout:_:)``,
    /// ``read(upTo:maximumLength:timeout:_:)``) is pending. Setting it delivers what is already buffered
    /// on the loop's next pass.
    @exclusivity(unchecked) public var onData: ((TCPConnection, [UInt8]) -> Void)? {
        didSet { if onData != nil, !input.isEmpty { scheduleDeferredPass() } }
    }
    /// Runs when the peer has finished sending and ``allowsHalfClosure`` keeps the connection open.
    public var onInputClosed: ((TCPConnection) -> Void)? {
        get { rareState?.onInputClosed }
        set { setRare(\.onInputClosed, newValue) }
    }
    /// Runs when ``isWritable`` changes: `false` after the queue grew past the high water mark, `true`
    /// after it drained to the low water mark — the signal to resume producing.
    public var onWritabilityChanged: ((TCPConnection, Bool) -> Void)? {
        get { rareState?.onWritabilityChanged }
        set { setRare(\.onWritabilityChanged, newValue) }
    }
    /// Runs exactly once when the connection closes, for whatever reason, with that reason.
    public var onClose: ((TCPConnection, CloseReason) -> Void)?

    /// How long to wait for input: with a read request pending, the whole request's time (unless it
    /// has its own timeout), measured from when it started waiting; otherwise, while ``onData`` is set,
    /// the time since the last bytes arrived. `nil` (the default): no limit. Not counted while reading
    /// is paused.
    public var readTimeout: Duration? {
        get { rareState?.readTimeout }
        set {
            setRare(\.readTimeout, newValue)
            restartReadWait()
        }
    }
    /// Asked when a read timeout expires, with the time waited so far. Return a positive duration to
    /// wait that much longer (CocoaAsyncSocket's should-timeout-read), or `nil` to close the connection
    /// with ``NetError/timedOut(_:)`` `.read`. A heartbeat can send a ping here and grant the pong's time.
    public var shouldTimeoutRead: ((TCPConnection, Duration) -> Duration?)? {
        get { rareState?.shouldTimeoutRead }
        set { setRare(\.shouldTimeoutRead, newValue) }
    }
    /// How long queued output may make no progress (including the flush of a graceful close) before
    /// the connection closes with ``NetError/timedOut(_:)`` `.write`. 60 seconds by default; `nil`: no
    /// limit.
    ///
    /// This is the timeout that reclaims a peer that stops reading: while its output waits, reading
    /// is typically paused for backpressure (and the read timeout with it), so only the lack of write
    /// progress shows that the peer is gone or hostile. Lift it only for peers you trust.
    public var writeTimeout: Duration? {
        get { rareState.map(\.writeTimeout) ?? RareState.defaultWriteTimeout }
        set {
            rare.writeTimeout = newValue
            armWriteTimer()
        }
    }
    /// Asked when the write timeout expires, with the time since the last progress. Return a positive
    /// duration to wait longer, or `nil` to close with ``NetError/timedOut(_:)`` `.write`.
    public var shouldTimeoutWrite: ((TCPConnection, Duration) -> Duration?)? {
        get { rareState?.shouldTimeoutWrite }
        set { setRare(\.shouldTimeoutWrite, newValue) }
    }
    /// How long a graceful close waits, once its output is flushed and shut down, for the peer to end
    /// its input — without the peer acknowledging any more of what was sent meanwhile (a slow reader
    /// still draining the kernel's send queue keeps getting time). On expiry the connection closes with
    /// ``NetError/timedOut(_:)`` `.linger`: bytes sent may not have been read. 10 seconds by default;
    /// `nil`: no limit.
    public var lingerTimeout: Duration? {
        get { rareState.map(\.lingerTimeout) ?? RareState.defaultLingerTimeout }
        set {
            rare.lingerTimeout = newValue
            armLingerTimer()
        }
    }

    // MARK: internal state (loop thread only)
    //
    // What a read or a write touches has its exclusivity unchecked (and ``onData`` above, read twice a
    // delivery): each access paid a runtime check
    // (swift_beginAccess), some twenty a heartbeat on an idle server's connection, ~1,600 instructions
    // (issue 22, IM-RESULTS "idle"). Loop thread only, and no access overlaps another of the same
    // property: callbacks run between accesses, never inside one (deliverInput copies the request and
    // takes the bytes out of the buffer before calling back).

    /// Where it is in its life, with the state of both directions.
    @exclusivity(unchecked) var lifecycle = TCPLifecycle.idle(shutdownAsked: false)
    @exclusivity(unchecked) var fd: Int32 = -1
    var readSource: RunLoopPortSource?
    var writeSource: RunLoopPortSource?
    @exclusivity(unchecked) var isReadWatched = false
    @exclusivity(unchecked) var isWriteWatched = false
    /// Open with no source in the loop, so listed to learn of the loop's end (``LoopTeardownWatch``).
    var isListedForTeardown = false
    /// Set while this connection adds or removes its own sources, whose cancel callouts then mean nothing.
    @exclusivity(unchecked) var isChangingInterest = false
    /// Its index in its listener's open connections (``TCPListener/OpenPlace``), in the padding after
    /// the flags.
    var placeInListener = PlacedArray<TCPListener.OpenPlace>.notPlaced
    /// The listener that accepted it, which counts its open connections.
    weak var listener: TCPListener?

    @exclusivity(unchecked) var input = InputBuffer()
    @exclusivity(unchecked) var output = OutputQueue()
    @exclusivity(unchecked) var readRequests: [ReadRequest] = []
    @exclusivity(unchecked) var isDelivering = false
    @exclusivity(unchecked) var isReadingPaused = false
    @exclusivity(unchecked) var writability = WritabilitySignal()
    var isReportingWritability = false
    /// No callback runs inside a method the owner called: what such a call causes is reported on the
    /// loop's next pass (see ``scheduleDeferredPass()``). Made when something is first deferred, and
    /// kept in the rare state: the owner-call depth is counted in the connection, since every
    /// connection that writes makes owner calls and a deferral object made on the first write cost
    /// each of them some 80 bytes; most defer nothing before their close.
    var callbacks: CallbackDeferral { rare.callbacks(loop: loop, modes: modes) }
    @exclusivity(unchecked) private var ownerCallDepth: UInt32 = 0
    var deferredPassScheduled = false
    /// Whether the peer's end of input leaves the connection open for writing (reported with
    /// ``onInputClosed``) instead of closing it with ``CloseReason/peerClosed``. Off by default.
    /// Declared among the internal flags: a byte between the addresses and the callbacks cost every
    /// connection 8 of padding (issue 22).
    public var allowsHalfClosure = false
    /// Whether the connection holds a reference to itself while open (``holdWhileOpen()``): a flag in
    /// the padding after the others, where a reference field cost every connection 8 bytes (issue 22).
    var isHeldWhileOpen = false

    /// Stamped on every arrival and every send, timeouts or not; what a timeout adds is rare state.
    @exclusivity(unchecked) var readWaitStart = LoopInstant(nanoseconds: 0)
    @exclusivity(unchecked) var lastWriteProgress = LoopInstant(nanoseconds: 0)

    /// Options, limits and logger, shared with the other connections of its listener until it changes
    /// one (see ``TCPConnectionSettings``).
    @exclusivity(unchecked) private var settings: TCPConnectionSettings
    /// What few connections use, made on first use (see ``RareState``).
    @exclusivity(unchecked) private(set) var rareState: RareState?

    /// Creates an idle connection for `loop`; call ``connect(to:port:timeout:resolver:)`` next.
    /// Must be called on the loop's thread.
    /// - Parameters:
    ///   - modes: where its sources and timers go; ``RunLoop/Mode/common`` keeps it working while the
    ///     loop runs any common mode (the classic CFRunLoop trap is a socket in the default mode only).
    ///   - options: socket options applied to the socket.
    ///   - limits: buffer limits and water marks.
    public init(
        loop: RunLoop = .current,
        modes: [RunLoop.Mode] = [.common],
        options: TCPOptions = TCPOptions(),
        limits: TCPBufferLimits = TCPBufferLimits(),
        logger: Logger = Logger(label: "RunLoopNet")
    ) {
        precondition(loop.isCurrentThread, "TCPConnection must be created on its run loop's thread")
        precondition(!modes.isEmpty, "TCPConnection needs at least one mode")
        self.loop = loop
        self.modes = modes
        self.settings = TCPConnectionSettings(options: options, limits: limits, logger: logger)
    }

    /// An accepted socket: already open; input starts flowing after the listener's `onAccept` returns.
    init(accepted fd: Int32, remote: SocketAddress?, listener: TCPListener, settings: TCPConnectionSettings) {
        self.loop = listener.loop
        self.modes = listener.modes
        self.settings = settings
        self.fd = fd
        self.listener = listener
        self.remoteAddress = remote
        self.lifecycle = .connected(TCPLifecycle.Sides())
        holdWhileOpen()
        let now = loop.now
        readWaitStart = now
        lastWriteProgress = now
        do {
            try options.apply(to: fd)
        } catch {
            self.logger.debug("option not applied to accepted connection \(remote?.description ?? "?"): \(error)")
        }
    }

    deinit {
        // Defensive: an open connection is kept alive (`holdWhileOpen()`) until `finish` has released its
        // socket, so normally nothing is left here. Never any callback from a deinit.
        readSource?.invalidate()
        writeSource?.invalidate()
        if fd >= 0 { Glibc.close(fd) }
    }

    /// The socket while it is open, to set an option RunLoopNet does not cover. Never read, write or
    /// close it: the connection owns it.
    public var fileDescriptor: Int32? { fd >= 0 ? fd : nil }

    /// Output bytes queued and not yet taken by the kernel.
    public var bufferedOutputBytes: Int { output.count }
    /// Input bytes received and not yet delivered.
    public var bufferedInputBytes: Int { input.count }

    // MARK: internals

    @inline(__always)
    func checkThread() {
        precondition(loop.isCurrentThread, "TCPConnection used off its run loop's thread")
    }

    /// The settings, this connection's own from now on: shared ones are copied before a change.
    private func ownSettings() -> TCPConnectionSettings {
        if !isKnownUniquelyReferenced(&settings) { settings = settings.copy() }
        return settings
    }

    /// The rare state, made now if it was not yet.
    var rare: RareState {
        if let rareState { return rareState }
        let made = RareState()
        rareState = made
        return made
    }

    /// Sets a rare callback; clearing one that was never set makes no box.
    private func setRare<Value>(_ field: ReferenceWritableKeyPath<RareState, Value?>, _ value: Value?) {
        guard value != nil || rareState != nil else { return }
        rare[keyPath: field] = value
    }

    var isOpen: Bool { state == .connected || state == .closing }

    /// The timer in `slot`, made on first use. Timers hold the connection weakly.
    func timer(_ slot: inout DeadlineTimer?, _ label: String, _ fire: @escaping (TCPConnection) -> Void) -> DeadlineTimer {
        if let existing = slot { return existing }
        let made = DeadlineTimer(loop: loop, modes: modes, label: label) { [weak self] in
            if let self { fire(self) }
        }
        slot = made
        return made
    }

    /// True while a method the owner called runs (``ownerCall(_:)``): callbacks wait for the loop.
    var isInsideOwnerCall: Bool { ownerCallDepth > 0 }

    /// The loop's hold on an open connection, so an owner need not keep it: one strong reference of
    /// its own, taken once and given back by ``releaseHoldWhileOpen()`` when it closes.
    func holdWhileOpen() {
        guard !isHeldWhileOpen else { return }
        isHeldWhileOpen = true
        _ = Unmanaged.passUnretained(self).retain()
    }

    /// Gives back the hold taken by ``holdWhileOpen()``, if any. The connection may be freed by this
    /// call's return when nothing else holds it: nothing of it may be used after it.
    func releaseHoldWhileOpen() {
        guard isHeldWhileOpen else { return }
        isHeldWhileOpen = false
        Unmanaged.passUnretained(self).release()
    }

    /// Runs `body` as the owner's call: what it causes is reported after it, not from inside it.
    func ownerCall<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        ownerCallDepth += 1
        defer { ownerCallDepth -= 1 }
        return try body()
    }

    /// Work that must not run inside the owner's call: buffered input for a newly set consumer, a
    /// writability change. One pass per burst, which looks at what is due when it runs (nothing once
    /// closed: the close is reported on its own).
    func scheduleDeferredPass() {
        guard !deferredPassScheduled else { return }
        deferredPassScheduled = true
        callbacks.runLater { self.runDeferredPass() }
    }

    private func runDeferredPass() {
        deferredPassScheduled = false
        guard isOpen else { return }
        reportWritability()
        guard state == .connected else { return }
        deliverInput()
    }

    // MARK: sources

    /// Makes the input port source for the current descriptor (not yet watching). The output one is
    /// made when output first waits (``updateWriteInterest()``): most connections never fill their
    /// socket's send buffer, and an idle one should not carry a second source.
    ///
    /// The sources' callouts hold the connection strongly: a closure holding one reference is that
    /// reference, where a `[weak self]` or `[unowned self]` capture costs each callout a context and
    /// the connection a side table (some 80 bytes per connection). The cycle ends in
    /// ``releaseSocket(reset:)``, which every path to `closed` takes, and an open connection is kept
    /// alive by the loop (``keepAlive``) anyway.
    func makeSources() throws(NetError) {
        do {
            readSource = try RunLoopPortSource(
                fileDescriptor: fd, interest: .readable, label: label ?? "tcp read \(fd)",
                cancel: { [self] _, _ in sourceCancelled() },
                perform: { [self] _, _ in handleReadable() })
        } catch {
            throw .system(errno: EBADF, operation: "watch socket (\(error))")
        }
    }

    private func makeWriteSource() throws(NetError) -> RunLoopPortSource {
        do {
            return try RunLoopPortSource(
                fileDescriptor: fd, interest: .writable, label: label.map { "\($0) (writing)" } ?? "tcp write \(fd)",
                cancel: { [self] _, _ in sourceCancelled() },
                perform: { [self] _, _ in handleWritable() })
        } catch {
            throw .system(errno: EBADF, operation: "watch socket (\(error))")
        }
    }

    /// A source left a mode without this connection asking: the loop's thread ended.
    private func sourceCancelled() {
        guard !isChangingInterest, state != .closed else { return }
        finish(.failed(.loopTornDown))
    }

    /// Adds or removes a source in every mode of the connection. False (and the connection failed) if
    /// the loop refused it.
    @discardableResult
    func setWatching(_ source: RunLoopPortSource?, _ watching: Bool) -> Bool {
        guard let source else { return false }
        isChangingInterest = true
        defer { isChangingInterest = false }
        do {
            for mode in modes {
                if watching { try loop.add(source, forMode: mode) } else { loop.remove(source, forMode: mode) }
            }
            return true
        } catch {
            isChangingInterest = false
            finish(.failed(.system(errno: EBADF, operation: "watch socket (\(error))")))
            return false
        }
    }

    /// Watches input, or stops, as the lifecycle says for the owner's pause and the buffer's fill.
    func updateReadInterest() {
        let wanted = fd >= 0 && lifecycle.watchesInput(ownerPaused: isReadingPaused, bufferFull: input.count >= inputThreshold)
        guard wanted != isReadWatched else { return }
        if setWatching(readSource, wanted) { isReadWatched = wanted }
        noteLoopPresence()
    }

    /// Keeps the rule of ``LoopTeardownWatch``: an open connection with no source in its loop is listed.
    func noteLoopPresence() {
        LoopTeardownWatch.update(self, open: fd >= 0, inLoop: isReadWatched || isWriteWatched)
    }

    /// Watches writability, or stops, as the lifecycle says for the output queue (making the source the
    /// first time).
    func updateWriteInterest() {
        let wanted = fd >= 0 && lifecycle.watchesOutput(outputWaiting: !output.isEmpty)
        guard wanted != isWriteWatched else { return }
        if wanted && writeSource == nil {
            do throws(NetError) {
                writeSource = try makeWriteSource()
            } catch {
                return finish(.failed(error))
            }
        }
        if setWatching(writeSource, wanted) { isWriteWatched = wanted }
        noteLoopPresence()
    }

    private func handleWritable() {
        if state == .connecting {
            handleConnectResult()
        } else {
            flushOutput()
        }
    }
}

extension TCPConnection: CustomStringConvertible {
    public var description: String {
        "TCPConnection(\(remoteAddress?.description ?? "-"), \(state))"
    }
}
