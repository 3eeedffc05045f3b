public import Logging
public import RunLoopIMCore
public import RunLoopKit
public import RunLoopNet
package import SwiftProtobuf

/// An IM client connection on a ``RunLoop``: login, heartbeat, ping-pong, reconnect with backoff,
/// acknowledged delivery with resend, give-up and de-duplication — as sources on the loop.
///
/// All decisions are made by an ``IMClientMachine``; this object only carries them out: it opens
/// links (``IMFrameLink``, one per attempt), keeps one protocol timer (heartbeat, ping-pong, resend, backoff
/// and login deadlines are all dates of that one timer) in the client's modes — the common modes by
/// default, so the heartbeat keeps beating while the loop runs any common mode — and calls back.
///
/// ```swift
/// var configuration = IMClientConfiguration(user: "alice", password: "secret")
/// configuration.heartbeat = .fixed(.seconds(30))
/// let client = IMClient(configuration: configuration, connector: TCPFrameLink.connector(host: "127.0.0.1", port: 7100))
/// client.onMessage = { _, message in print("\(message.from): \(message.text)") }
/// client.onDelivery = { _, id, state in print("\(id): \(state)") }
/// client.start()
/// let id = try client.send("hello", to: .room("lobby"))
/// ```
///
/// Guarantees: each connection that opened ends with exactly one ``onDisconnect``; no reconnect after
/// ``close()`` or a refused login; a late callback from an old transport changes nothing; each
/// incoming (sender, id) reaches ``onMessage`` once; each own message ends in exactly one final
/// ``IMDeliveryState`` (stored or failed).
///
/// Callbacks never run inside a call the owner makes (``send(_:to:id:)``, ``request(_:body:)``,
/// ``close()``, ``start()``, ``networkChanged(reachable:reason:)``): what such a call causes is
/// reported on the loop's next pass, so the owner may call the client from any callback.
///
/// Threads: confined to its loop's thread — create it, call it and receive every callback there
/// (checked with a precondition). From another thread, hop with ``RunLoop/perform(inModes:_:)``.
/// Lifetime: from ``start()`` until it is closed for good, the loop's timer keeps it alive.
public final class IMClient {
    public let loop: RunLoop
    public let modes: [RunLoop.Mode]
    public var logger: Logger

    /// The connection's state changed.
    public var onStateChange: ((IMClient, IMConnectionState) -> Void)?
    /// An open connection ended, with why; exactly once per connection.
    public var onDisconnect: ((IMClient, IMDisconnectReason) -> Void)?
    /// A message for this user, exactly once per (sender, id).
    public var onMessage: ((IMClient, IMMessage) -> Void)?
    /// One of this client's messages moved on (queued → sent → stored, or failed).
    public var onDelivery: ((IMClient, String, IMDeliveryState) -> Void)?
    /// The answer to a ``request(_:body:)``, by serial: the frame, or why none will come.
    public var onResponse: ((IMClient, UInt32, Result<IMFrame, IMDisconnectReason>) -> Void)?
    /// A notice from the server: PRESENCE, MEMBERSHIP, and PRESENCE_BATCH when ``readsPresenceBatches`` asked for it.
    @exclusivity(unchecked) public var onNotice: ((IMClient, IMFrame) -> Void)?
    /// The server refused a message as too fast (SEND_ACK `rateLimited`): nothing is sent for the
    /// duration given, then every waiting message goes out again in order. Once per pause; the
    /// messages put back report ``IMDeliveryState/queued`` through ``onDelivery``.
    public var onRateLimited: ((IMClient, Duration) -> Void)?

    // What every frame read touches has its exclusivity unchecked (the runtime's check on each access
    // cost more than a notice's own handling, issue 22): loop thread only, and no access spans a
    // callback — the machine's inputs return their actions before any is carried out, and a callback
    // is read out of its property before it runs.
    @exclusivity(unchecked) private(set) var machine: IMClientMachine
    private let connector: IMConnector
    @exclusivity(unchecked) private var transport: (any IMFrameLink)?
    @exclusivity(unchecked) private var transportGeneration: UInt64 = 0
    @exclusivity(unchecked) private var timer: ProtocolTimer!
    private var keepAlive: IMClient?
    @exclusivity(unchecked) private var pendingWriteFailure: (UInt64, IMLinkFailure)?
    private var followed: NetworkReachability?
    /// Callbacks never run inside one of the owner's own calls: they wait for the loop's next pass.
    private let callbacks: CallbackDeferral

    /// - Parameters:
    ///   - connector: makes the link for each attempt, e.g. ``TCPFrameLink/connector(host:port:connectTimeout:options:limits:)``.
    ///   - modes: where the links' sources and the protocol timer go.
    /// Must be called on the loop's thread.
    public init(
        configuration: IMClientConfiguration, loop: RunLoop = .current, modes: [RunLoop.Mode] = [.common],
        connector: @escaping IMConnector, logger: Logger = Logger(label: "RunLoopIM.client")
    ) {
        precondition(loop.isCurrentThread, "IMClient must be created on its run loop's thread")
        precondition(!modes.isEmpty, "IMClient needs at least one mode")
        self.loop = loop
        self.modes = modes
        self.connector = connector
        self.logger = logger
        callbacks = CallbackDeferral(loop: loop, modes: modes, label: "im.client callbacks")
        machine = IMClientMachine(configuration: configuration)
        timer = ProtocolTimer(loop: loop, modes: modes, label: "im.client \(configuration.user)") { [weak self] in
            guard let self else { return }
            let now = self.loop.now
            let inputWaiting = self.machine.hasSilenceDeadlinePassed(now: now) && self.transport?.hasUnreadInput == true
            self.apply(self.machine.timerFired(now: now, inputWaiting: inputWaiting))
        }
    }

    deinit { timer.cancel() }

    /// Where the connection is.
    public var state: IMConnectionState { machine.state }
    /// The configuration it was made with.
    public var configuration: IMClientConfiguration { machine.configuration }
    /// Messages not yet settled, in send order (to keep across a restart and resubmit by id); not
    /// stored yet, so `from` is empty and `seq` 0.
    public var unsettledMessages: [IMMessage] { machine.unsettledMessages }
    /// The heartbeat interval in force (it moves in adaptive mode).
    public var heartbeatInterval: Duration { machine.heartbeatInterval }
    /// The adaptive heartbeat's learning, in adaptive mode.
    public var adaptiveHeartbeat: AdaptiveHeartbeat? { machine.adaptiveHeartbeat }
    /// Why the last connection ended or the last attempt failed (also a connect that never opened,
    /// which ``onDisconnect`` does not report): what "reconnecting in N s" is recovering from.
    public var lastFailure: IMDisconnectReason? { machine.lastFailure }
    /// The reason ``onDisconnect`` last reported.
    public private(set) var lastDisconnectReason: IMDisconnectReason?
    /// Incoming duplicates de-duplication kept from ``onMessage`` so far.
    public var duplicatesDropped: Int { machine.duplicatesDropped }
    /// The largest SEND body the server accepts (announced at login; assumed from
    /// ``IMClientConfiguration/maximumFrameBody`` until then): ``send(_:to:id:)`` refuses larger messages.
    public var maximumSendBody: Int { machine.maximumSendBody }
    /// The server's large-room size, from the last LOGIN_ACK (docs/PROTOCOL.md §8): a room with more
    /// members sends no MEMBERSHIP and no presence of its members, so a client shows that presence as
    /// unknown there. `nil`: not logged in yet, or the server has no such rule (or is older than the
    /// field). Kept across a drop until the next login says otherwise. Loop thread.
    public var largeRoomMembers: Int? { machine.largeRoomMembers }
    /// Whether every LOGIN from now on asks for PRESENCE_BATCH frames (docs/PROTOCOL.md §8): turn it
    /// on only when ``onNotice``'s owner reads them (a ``IMCommand/presenceBatch`` frame is many
    /// PRESENCE notices). Starts as ``IMClientConfiguration/readsPresenceBatches``; a session already
    /// logged in keeps what its login asked for. Loop thread.
    public var readsPresenceBatches: Bool {
        get { machine.readsPresenceBatches }
        set { machine.readsPresenceBatches = newValue }
    }
    /// The last LOGIN_ACK said the server may carry this session's presence in PRESENCE_BATCH frames
    /// (single PRESENCE frames may come too). Loop thread.
    public var receivesPresenceBatches: Bool { machine.receivesPresenceBatches }

    /// Connects and logs in; from then on reconnects by itself until ``close()``. Idempotent.
    public func start() {
        checkThread()
        keepAlive = self
        ownerCall { machine.start(now: loop.now) }
    }

    /// Queues `text` for `recipient`: sent at once when online, otherwise after the next login.
    /// ``onDelivery`` reports `.queued` at once and the rest as it happens.
    /// - Parameter id: the message's id; pass the id of a message from ``unsettledMessages`` of an
    ///   earlier run to resubmit it (the server de-duplicates). Default: a new UUID.
    /// - Returns: the message's id.
    /// - Throws: ``IMClientError/messageTooLarge(bytes:limit:)`` (over ``maximumSendBody``: the server
    ///   would refuse it), ``IMClientError/messageIDTooLong(bytes:limit:)``, ``IMClientError/outboxFull(limit:)``,
    ///   ``IMClientError/closed``, ``IMClientError/duplicateID(_:)``.
    @discardableResult
    public func send(_ text: String, to recipient: IMRecipient, id: String? = nil) throws(IMClientError) -> String {
        checkThread()
        let (messageID, actions) = try machine.send(text: text, to: recipient, id: id, now: loop.now)
        ownerCall { actions }
        return messageID
    }

    /// Sends an application request (JOIN, LEAVE, LIST_ROOMS, HISTORY) whose body is `body`, the
    /// request's message already encoded (docs/PROTOCOL.md §8); the answer arrives through
    /// ``onResponse`` with the returned serial. Not queued: it needs the client online. `RunLoopChat`'s
    /// `ChatClient` makes these requests with typed answers.
    /// - Throws: ``IMClientError/notOnline`` or ``IMClientError/closed``.
    @discardableResult
    public func request(_ command: IMCommand, body: [UInt8]) throws(IMClientError) -> UInt32 {
        checkThread()
        let (serial, actions) = try machine.request(command, body: body, now: loop.now)
        ownerCall { actions }
        return serial
    }

    /// ``request(_:body:)`` with `message` serialized: package, since the messages are the wire
    /// format, not API.
    @discardableResult
    package func request(_ command: IMCommand, message: some SwiftProtobuf.Message) throws(IMClientError) -> UInt32 {
        try request(command, body: (try? message.serializedBytes()) ?? [])
    }

    /// Ends the client for good: when online, settles unacknowledged messages with the server and
    /// logs out (bounded by the close timeout), then closes. No reconnect follows. Idempotent.
    public func close() {
        checkThread()
        ownerCall { machine.close(now: loop.now) }
    }

    /// The last login made the account (the server said `account_created`): a client tells the
    /// person once. Loop thread.
    public var isAccountCreated: Bool { machine.isAccountCreated }

    /// The client closed because no account has its name and it asked to log in to an existing one
    /// only (``IMClientConfiguration/existingAccountOnly``): a login without that flag would make it.
    /// Loop thread.
    public var isAccountUnknown: Bool { machine.isAccountUnknown }

    /// A person's "try now": while waiting out a reconnect backoff, connects at once (the attempt
    /// it was waiting for, so the backoff goes on growing if it fails too); otherwise nothing.
    /// Returns whether an attempt started. Loop thread.
    @discardableResult
    public func retryNow() -> Bool {
        checkThread()
        guard case .reconnecting = machine.state else { return false }
        ownerCall { machine.retryNow(now: loop.now) }
        return true
    }

    /// Tells the client whether the network can reach the server (from a ``NetworkReachability`` or
    /// the application's own knowledge). While unreachable it drops the connection and makes no
    /// attempts; when the network returns it connects at once.
    public func networkChanged(reachable: Bool, reason: String = "") {
        checkThread()
        ownerCall { machine.networkChanged(reachable: reachable, reason: reason, now: loop.now) }
    }

    /// Follows `reachability`: its current path now and every change from then on go to
    /// ``networkChanged(reachable:reason:)``. The client keeps `reachability` alive until it is closed
    /// for good. Give it a reachability that follows the server — ``NetworkReachability/init(loop:modes:host:resolver:logger:)``
    /// with the host the connector uses — so "unreachable" means this server, not the whole network.
    /// Replaces the reachability's `onChange`.
    public func follow(_ reachability: NetworkReachability) {
        checkThread()
        followed = reachability
        reachability.onChange = { [weak self] _, path in self?.apply(path) }
        apply(reachability.path)
    }

    private func apply(_ path: NetworkPath) {
        switch path {
        case .reachable: networkChanged(reachable: true)
        case .unreachable(let why): networkChanged(reachable: false, reason: why)
        }
    }

    // MARK: Carrying out the machine's decisions

    /// Carries out what one of the owner's calls decided; its callbacks run on the loop's next pass,
    /// never inside the call (the rule RunLoopNet keeps too): `send` returns its id before
    /// ``onDelivery`` reports `.queued` for it, and a callback never re-enters the caller's code.
    private func ownerCall(_ decide: () -> [IMClientAction]) {
        callbacks.ownerCall { apply(decide()) }
    }

    private func apply(_ actions: [IMClientAction]) {
        for action in actions { perform(action) }
        finishInput()
    }

    /// What follows every input's actions: a refused write's drop, the timer re-dated, the client let
    /// go once closed for good.
    private func finishInput() {
        if let (generation, error) = pendingWriteFailure {
            // A write refused by the transport (output queue full: the server does not read) ends
            // that connection like any transport failure; told after this batch, never inside it.
            pendingWriteFailure = nil
            return apply(machine.transportClosed(generation: generation, reason: .failed(error), now: loop.now))
        }
        timer.schedule(at: machine.deadlineInPlace())
        if case .closed = machine.state {
            keepAlive = nil
            followed?.onChange = nil
            followed = nil
        }
    }

    private func perform(_ action: IMClientAction) {
        switch action {
        case .openTransport(let generation):
            openTransport(generation)
        case .write(let frame):
            guard let transport else { return }
            do {
                try transport.send(frame)
            } catch {
                logger.debug("write failed: \(error)")
                transport.abort()
                self.transport = nil
                pendingWriteFailure = (transportGeneration, error)
            }
        case .closeTransport(let generation, let graceful):
            guard generation == transportGeneration, let transport else { return }
            self.transport = nil
            if graceful { transport.close() } else { transport.abort() }
        case .stateChanged, .disconnected, .received, .deliveryChanged, .response, .requestLost, .notice, .rateLimited:
            // What `callbacks.run` decides, without its closure when the callback may run now (the
            // usual case, a frame read): a closure and a weak reference to this client for every
            // notice received cost more than the notice's own handling.
            guard callbacks.isInsideOwnerCall || callbacks.hasWaitingCallbacks else { return deliver(action) }
            callbacks.run { [weak self] in self?.deliver(action) }
        }
    }

    private func deliver(_ callback: IMClientAction) {
        switch callback {
        case .stateChanged(let state):
            logger.debug("\(machine.configuration.user): \(state)")
            onStateChange?(self, state)
        case .disconnected(let reason):
            lastDisconnectReason = reason
            logger.info("\(machine.configuration.user): disconnected: \(reason)")
            onDisconnect?(self, reason)
        case .received(let message):
            onMessage?(self, message)
        case .deliveryChanged(let id, let state):
            onDelivery?(self, id, state)
        case .response(let serial, let frame):
            onResponse?(self, serial, .success(frame))
        case .requestLost(let serial, let reason):
            onResponse?(self, serial, .failure(reason))
        case .notice(let frame):
            onNotice?(self, frame)
        case .rateLimited(let wait):
            logger.info("\(machine.configuration.user): rate limited, sending again in \(wait)")
            onRateLimited?(self, wait)
        case .openTransport, .write, .closeTransport:
            break
        }
    }

    private func openTransport(_ generation: UInt64) {
        transport?.abort()
        transportGeneration = generation
        let transport = connector(loop, modes, machine.configuration.maximumFrameBody)
        self.transport = transport
        // The two callbacks of every read reach the client through a value, not a checked box.
        let owner = WeakReference(self)
        transport.open(
            IMFrameLinkEvents(
                opened: { [weak self] in
                    guard let self else { return }
                    self.apply(self.machine.transportOpened(generation: generation, now: self.loop.now))
                },
                received: { frame in owner.object?.received(frame, generation: generation) },
                readEnded: {
                    // Nothing to acknowledge (a read of notices): `endOfInput` would change nothing, and
                    // the timer is at its deadline already — asking for it again cost a read some 600
                    // instructions.
                    guard let client = owner.object, generation == client.transportGeneration, client.machine.awaitsEndOfInput() else {
                        return
                    }
                    client.apply(client.machine.endOfInput(generation: generation, now: client.loop.now))
                },
                failed: { [weak self] error, _ in
                    guard let self, generation == self.transportGeneration else { return }
                    self.apply(self.machine.protocolError(generation: generation, error, now: self.loop.now))
                },
                closed: { [weak self] reason in
                    guard let self else { return }
                    if generation == self.transportGeneration { self.transport = nil }
                    self.apply(self.machine.transportClosed(generation: generation, reason: reason, now: self.loop.now))
                }
            ))
    }

    private func received(_ frame: IMFrame, generation: UInt64) {
        guard generation == transportGeneration, let transport else { return }
        if IMClientMachine.isNotice(frame) {
            // A crowd's logins bring a client a notice per contact: reported as `frameReceived`'s one
            // `.notice` action would be, without the array (an allocation per frame). A notice
            // changes no frame limit.
            let receipt = machine.noticeReceived(generation: generation, now: loop.now)
            guard receipt != .stale else { return }
            perform(.notice(frame))
            // A notice writes nothing and moves no deadline but the answer's: when that stayed, the
            // timer is where it was (a callback's own calls to the client set it themselves).
            guard receipt == .movedDeadline else { return }
            return finishInput()
        }
        apply(machine.frameReceived(frame, generation: generation, now: loop.now))
        // LOGIN_ACK may announce a larger frame limit; the frames after it in this read already
        // count on it.
        transport.raiseInboundLimit(to: machine.receiveLimit)
    }

    private func checkThread() {
        precondition(loop.isCurrentThread, "IMClient used off its run loop's thread")
    }
}
