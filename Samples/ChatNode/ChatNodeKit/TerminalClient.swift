import Glibc
public import Logging
import RunLoopChat
public import RunLoopIM
import RunLoopIMCore
public import RunLoopKit
import RunLoopNet

/// The logic of `chat-node client`: a `ChatClient` driven by lines of text, reporting everything as
/// lines of text. It owns no file descriptor: the caller feeds it lines (``receive(line:)``), tells it
/// when input ends (``endOfInput()``) and gets every line to show through ``output``. So tests drive it
/// in-process, and the CLI only wires standard input, standard output and signals to it.
///
/// Input is run strictly in order, one line at a time: a line that needs an answer from the node
/// (`/join`, `/leave`, `/rooms`, `/history`, `/more`) holds the lines after it until the answer arrives,
/// and one that needs the connection while the client is not connected waits for the connection. So a
/// script `/join lobby` + `hello` sends `hello` to lobby, whatever the timing. Messages never wait for
/// the connection: ``IMClient`` queues them. In an interactive session `/status`, `/retry`, `/help` and `/quit` jump
/// the line, and so does a message when no line ahead of it changes the current room (a person typing
/// during a slow `/history` sees the message queued at once).
///
/// Output lines (stable; scripts and tests match them):
/// - incoming: `[lobby] bob: hello`, `[@bob] bob: hi` (direct); control characters escaped (`\0`, `\e`, `\x07`)
/// - own messages, `mN` numbering them in this session: `→ m3 queued [lobby]: hello`, `→ m3 sent`,
///   `→ m3 stored (seq 42)`, `→ m3 failed: refused by the server (unknown recipient)`,
///   `→ m3 failed: you are not in lobby (/join lobby)` (the node's unknownRecipient for a room)
///   `→ m3 failed: too large (70012 bytes; the limit is 65408 bytes)`; a message over the node's
///   size limit is refused before it is queued: `! m3 not sent: message too large (…; the limit is N bytes)`
/// - the connection: `* connected` (then `* account created` after the login that made the account),
///   `* reconnecting in 2.0 s (attempt 3)` after a drop,
///   `* cannot connect to 127.0.0.1:7100: connection refused (is the node running?) — retrying in 0.5 s`
///   for an attempt that never reached the node,
///   `* offline — network down (link eth0 down)`, `* disconnected: <reason>`, `* closed: <reason>`;
///   a login refused for now (`* disconnected: login refused (too many connections): …`) is retried;
///   `/retry` (at a terminal also Enter on an empty line) cuts a reconnect wait short: `* retrying now`
/// - the node's rate limit: `* rate limited, retrying in 0.4 s`, once per pause; the messages it put
///   back go out again in order without lines of their own
/// - presence of the user's contacts (who share a room or a conversation with them) and answers: `* bob is online`, `* joined lobby (2 members)`, `* left lobby (1 member)`;
///   the others of a room joining and leaving it: `* bob joined lobby (3 members)`, `* bob left lobby (2 members)`;
///   a large room (more members than the node's large-room size, announced at login: docs/PROTOCOL.md §8)
///   carries no presence and no joins and leaves, so its members' presence is unknown and every line
///   that gives its count says so — `* joined town (1,234 members · presence not shown)`, in `/rooms`
///   `  town — 1,234 members · presence not shown, joined` —, and a room of the user's that crosses
///   the size, by a count heard later, gets a line: `* town is large (1,234 members · presence not
///   shown)`, `* town is no longer large (1,000 members · presence shown)`;
///   at a login without a current room, the room the user is in from before: `* current room: lobby
///   (joined earlier)`
/// - history, a page oldest first: a header `[lobby] history, oldest first:`, `  (older: /more)` or
///   `  (start of the conversation)`, then entries `  #42 14:03:05 bob: hello` (a date before the time
///   when not from today)
/// - errors: `! …`
///
/// Finishing: after ``endOfInput()`` or `/quit`, the remaining lines run, then it waits until every own
/// message is stored or failed (at most ``Configuration/drainTimeout`` from the end of input), closes
/// the client (which settles anything still unacknowledged with the node), and calls ``onFinish`` with
/// the exit status: 0 when nothing failed, 1 when a message failed, a command was refused or invalid,
/// or the client closed on its own (login refused, reconnects exhausted).
///
/// Threads: confined to its loop's thread — create it, call it and receive ``output`` and ``onFinish``
/// there. The loop must run for anything to happen.
public final class TerminalClient {
    /// Everything a terminal client can be told.
    public struct Configuration: Sendable {
        /// The account; the node creates it at the first login if it allows registration.
        public var user: String
        public var password: String
        /// Asks the person at the terminal to type the password again (`nil`: they gave up), for a name
        /// the node has no account for yet. When set, the client first logs in to an existing account
        /// only; for a new name it asks, and logs in making the account only when both passwords
        /// match (`* account created`), so a mistyped password never becomes the account's. Unset (a
        /// script, a password from the command line or the environment): the node makes the account
        /// at the first login, as it always did. Called on the loop's thread; it may block (a prompt).
        public var confirmNewAccountPassword: (@Sendable (String) -> String?)?
        /// The node's address: an IPv4 or IPv6 literal, or a host name. It names the node in the output
        /// and is the route ``followsReachability`` watches; the links themselves come from the
        /// connector given to ``TerminalClient/init(configuration:connector:loop:logger:output:)``.
        public var host = "127.0.0.1"
        public var port: UInt16 = 7100
        /// How often an idle client proves it is alive (announced to the node as its keepalive).
        public var heartbeat: Duration = .seconds(30)
        /// When to try again after the connection drops.
        public var backoff = ReconnectBackoff.Policy()
        /// After the end of input, how long to wait for own messages to settle before closing anyway.
        public var drainTimeout: Duration = .seconds(10)
        /// Messages per `/history` page when the command names no count.
        public var historyPageSize = 20
        /// Watch the routing table (``NetworkReachability``) so "offline — network down" is reported,
        /// and no reconnect attempt is wasted, while there is no route to the node.
        public var followsReachability = true
        /// A person at a terminal: `/status`, `/help` and `/quit` run at once even while earlier lines
        /// wait, and lines waiting for the connection say so. Scripts leave it off.
        public var isInteractive = false

        public init(user: String, password: String) {
            self.user = user
            self.password = password
        }
    }

    public let configuration: Configuration
    public let loop: RunLoop
    /// The protocol client underneath (tests read its state; do not replace its callbacks). A new one
    /// once a new account's password is confirmed (``Configuration/confirmNewAccountPassword``).
    public private(set) var client: IMClient
    /// The chat protocol on ``client``: rooms, history, presence and messages, typed.
    private var chat: ChatClient
    private let connector: IMConnector
    public var logger: Logger
    /// Receives each line to show, without a newline, on the loop's thread.
    public var output: (String) -> Void
    /// Called once, on the loop's thread, when the client is closed and the session is over, with the
    /// exit status (also kept in ``exitStatus``).
    public var onFinish: ((Int32) -> Void)?

    /// Set when the session is over.
    public private(set) var exitStatus: Int32?
    /// Where plain text goes: the room joined last (and not left since).
    public private(set) var currentRoom: String?
    /// Failed messages, refused or invalid commands so far.
    public private(set) var failureCount = 0

    /// A prompt for an interactive session: `alice@lobby> ` or `alice> `.
    public var prompt: String { "\(configuration.user)\(currentRoom.map { "@\($0)" } ?? "")> " }

    private struct OwnMessage {
        let number: Int
        let conversation: TerminalConversation
        var state: IMDeliveryState
        /// The state its last line showed: a message the rate limit put back (queued, then sent
        /// again under the same attempt) adds no line; the rate-limit line says it all.
        var shown: IMDeliveryState?
    }

    /// A line that asks the node something, and the answer it waits for.
    private enum Request {
        case join(String)
        case leave(String)
        case rooms
        case history(TerminalConversation, limit: Int, before: UInt64)

        var name: String {
            switch self {
            case .join(let room): return "/join \(room)"
            case .leave(let room): return "/leave \(room)"
            case .rooms: return "/rooms"
            case .history(let conversation, _, let before): return before == 0 ? "/history \(conversation)" : "/more \(conversation)"
            }
        }
    }

    private enum Answer {
        case room(Room)
        case rooms([Room])
        case history(HistoryPage)
    }

    private enum Waiting: Equatable {
        case connection
        case answer
        /// Plain text without a current room, while the node is asked for the room from before.
        case roomRestore
    }

    private enum Phase {
        case created, running, closing, finished
    }

    private var phase = Phase.created
    /// Own messages not settled yet, by id; `ownOrder` keeps their send order for `/status`.
    private var own: [String: OwnMessage] = [:]
    private var ownOrder: [String] = []
    /// The text of a message until its `queued` line is shown.
    private var pendingText: [String: String] = [:]
    private var nextNumber = 1
    /// Message ids are ours, not IMClient's: its `onDelivery` reports `queued` (and, when online,
    /// `sent`) before `send` returns the id, so the id must be known before the call.
    private let idPrefix = "tc-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
    private var pendingInput: [TerminalCommand] = []
    private var waiting: Waiting?
    /// The line whose answer ``waiting`` waits for.
    private var askedCommand: TerminalCommand?
    /// Set at a login without a current room; the next pump asks the node for the user's rooms.
    private var restoresRoom = false
    /// The node is being asked for the user's rooms; plain text without a current room waits.
    private var restoringRoom = false
    /// Whether the connection attempt under way reached the node (got as far as logging in): an
    /// attempt that did not is reported as "cannot connect", with why.
    private var attemptReachedNode = false
    /// Logged in at least once: the rooms from before are known (or being asked for).
    private var hasLoggedIn = false
    private var historyCursor: (conversation: TerminalConversation, limit: Int, before: UInt64, more: Bool)?
    private var joinedRooms: [String] = []
    private var inputEnded = false
    private var drainTimer: RunLoopTimer?
    private var reachability: NetworkReachability?
    /// When the reconnect announced last is due.
    private var nextAttempt: LoopInstant?
    /// Work that must not run inside an ``IMClient`` callback (sending, requesting, closing): IMClient
    /// does not promise to be re-entrant, so running input waits for the loop's next pass.
    private let deferral: CallbackDeferral

    /// Makes the client; ``start()`` connects. Must be called on `loop`'s thread.
    /// - Parameters:
    ///   - connector: makes the link for each connection attempt: `TCPFrameLink.connector(host:port:)`
    ///     for a real node (with the configuration's host and port), an in-memory one in tests.
    ///   - output: receives each line to show (see the type's documentation for the format).
    public init(
        configuration: Configuration, connector: @escaping IMConnector, loop: RunLoop = .current,
        logger: Logger = Logger(label: "chat-node.client"), output: @escaping (String) -> Void
    ) {
        precondition(loop.isCurrentThread, "TerminalClient must be created on its run loop's thread")
        self.configuration = configuration
        self.loop = loop
        self.logger = logger
        self.output = output
        self.connector = connector
        client = Self.connection(configuration, connector: connector, loop: loop, logger: logger)
        chat = ChatClient(connection: client)
        deferral = CallbackDeferral(loop: loop, modes: [.common], label: "chat-node client input")
        listen()
    }

    /// The protocol client for `configuration`: to existing accounts only while a new account's
    /// password is still to be confirmed.
    private static func connection(
        _ configuration: Configuration, connector: @escaping IMConnector, loop: RunLoop, logger: Logger, makingAccount: Bool = false
    ) -> IMClient {
        var settings = IMClientConfiguration(user: configuration.user, password: configuration.password)
        settings.clientName = "chat-node client"
        settings.heartbeat = .fixed(configuration.heartbeat)
        settings.backoff = configuration.backoff
        settings.existingAccountOnly = configuration.confirmNewAccountPassword != nil && !makingAccount
        return IMClient(configuration: settings, loop: loop, connector: connector, logger: logger)
    }

    /// Takes the reports of ``client`` and ``chat``.
    private func listen() {
        chat.onStateChange = { [weak self] _, state in self?.stateChanged(state) }
        client.onDisconnect = { [weak self] _, reason in
            // The closed line that follows says the same for these; a refusal for now is retried,
            // so it gets its own line before the reconnecting one.
            if reason == .userClosed || reason.isFinalRefusal { return }
            self?.emit("* disconnected: \(reason)")
        }
        client.onRateLimited = { [weak self] _, wait in
            self?.emit("* rate limited, retrying in \(formatDuration(wait, tenths: true))")
        }
        chat.onMessage = { [weak self] _, message in self?.received(message) }
        chat.onDelivery = { [weak self] _, id, state in self?.deliveryChanged(id, state) }
        chat.onPresence = { [weak self] _, change in self?.emit("* \(change.user) is \(change.isOnline ? "online" : "offline")") }
        chat.onMembership = { [weak self] _, change in
            guard let self else { return }
            self.emit("* \(change.user) \(change.joined ? "joined" : "left") \(change.room) (\(self.members(change.members)))")
        }
        chat.onLargeRoomChange = { [weak self] _, change in self?.largeRoomChanged(change) }
    }

    deinit {
        drainTimer?.invalidate()
    }

    /// The node has no account of this name, and the first login asked for an existing one: the person
    /// types the password again, and only a match logs in making the account (a typo never becomes it).
    private func confirmNewAccount(_ confirm: (String) -> String?) {
        emit("* \(configuration.user) is a new name on this node: type the password again to make the account")
        guard let again = confirm(configuration.user), again == configuration.password else {
            emit("! the passwords differ: no account made")
            failureCount += 1
            return finish(status: 1)
        }
        // Not inside the old client's callback: the new one starts on the next pass.
        deferral.runLater { [weak self] in
            guard let self else { return }
            self.client = Self.connection(self.configuration, connector: self.connector, loop: self.loop, logger: self.logger, makingAccount: true)
            self.chat = ChatClient(connection: self.client)
            self.listen()
            if self.configuration.followsReachability { self.followNetwork() }
            self.client.start()
        }
    }

    /// Connects (and from then on reconnects by itself) and starts running input lines. Loop thread.
    public func start() {
        checkThread()
        guard phase == .created else { return }
        phase = .running
        emit("* connecting to \(configuration.host):\(configuration.port) as \(configuration.user)")
        if configuration.followsReachability { followNetwork() }
        client.start()
        schedulePump()
    }

    /// Takes one line of input (without its newline): a command or a message. Lines after the end of
    /// input or once closing are ignored. Loop thread.
    public func receive(line: String) {
        checkThread()
        guard phase == .created || phase == .running, !inputEnded else { return }
        // A person pressing Enter on nothing while the client waits to reconnect means "try now".
        let blankRetries = configuration.isInteractive && line.allSatisfy(\.isWhitespace) && isWaitingToReconnect
        guard let command = TerminalCommand.parse(line) ?? (blankRetries ? .retry : nil) else { return }
        if configuration.isInteractive, waiting != nil, command.isLocal || (command.isMessage && !roomMayChangeAhead) {
            run(command)
        } else {
            pendingInput.append(command)
        }
        schedulePump()
    }

    /// There will be no more input (standard input reached its end): finish as after `/quit`. Loop thread.
    public func endOfInput() {
        checkThread()
        beginQuitting()
    }

    /// Asks the session to end, as a signal does: the first call is `/quit` (run the lines already
    /// given, let own messages settle, close); a second one stops waiting for messages and closes now;
    /// a third one, while the close still waits for the node, ends the session at once. Loop thread.
    public func quit() {
        checkThread()
        switch phase {
        case .created:
            finish(status: 1)
        case .running:
            if inputEnded {
                emit("! not waiting any longer")
                abandonInput()
                closeNow()
            } else {
                pendingInput.removeAll()
                if waiting != .answer { waiting = nil }
                beginQuitting()
            }
        case .closing:
            emit("! closed without waiting for the node")
            failureCount += 1
            finish(status: 1)
        case .finished:
            break
        }
    }

    // MARK: Running input

    private var isWaitingToReconnect: Bool {
        if case .reconnecting = client.state { return true }
        return false
    }

    /// Whether a line not run yet (or the one waiting for its answer) may change the current room, so
    /// a message typed now must wait to learn where it goes.
    private var roomMayChangeAhead: Bool {
        if currentRoom == nil, !hasLoggedIn || restoringRoom { return true }  // the room from before is not known yet
        if waiting == .answer, askedCommand?.changesCurrentRoom ?? true { return true }
        return pendingInput.contains { $0.changesCurrentRoom }
    }

    private func schedulePump() {
        guard phase == .running, !deferral.hasWaitingCallbacks else { return }
        deferral.runLater { [weak self] in self?.pump() }
    }

    /// Runs queued lines until one has to wait; then, once input has ended and nothing is left, closes.
    private func pump() {
        guard phase == .running else { return }
        if restoresRoom {
            restoresRoom = false
            if currentRoom == nil, client.state == .online { restoreRoom() }
        }
        while waiting == nil, !pendingInput.isEmpty {
            run(pendingInput.removeFirst())
        }
        guard inputEnded, waiting == nil, pendingInput.isEmpty, own.isEmpty else { return }
        switch client.state {
        case .connecting, .loggingIn:
            // Let the attempt under way conclude (bounded by the drain timeout), so that a script
            // learns whether its login was refused, and a session that logs in also logs out.
            return
        default:
            closeNow()
        }
    }

    private func run(_ command: TerminalCommand) {
        switch command {
        case .say(let text):
            guard let room = currentRoom else {
                // Before the first login the room from before is not known yet: wait for it.
                guard hasLoggedIn else { return waitForConnection(command, name: "text without a room") }
                if restoringRoom {
                    pendingInput.insert(command, at: 0)
                    waiting = .roomRestore
                    return
                }
                return fail("no current room: /join ROOM first (or /msg USER TEXT)")
            }
            send(text, to: .room(room))
        case .direct(let user, let text):
            send(text, to: .user(user))
        case .room(let room, let text):
            send(text, to: .room(room))
        case .join(let room):
            ask(.join(room), command: command)
        case .leave(let room):
            guard let room = room ?? currentRoom else { return fail("usage: /leave ROOM (no current room)") }
            ask(.leave(room), command: command)
        case .rooms:
            ask(.rooms, command: command)
        case .history(let named, let limit):
            guard let conversation = named ?? currentRoom.map(TerminalConversation.room) else {
                return fail("usage: /history #ROOM|@USER [N] (no current room)")
            }
            ask(.history(conversation, limit: limit ?? configuration.historyPageSize, before: 0), command: command)
        case .more:
            guard let cursor = historyCursor else { return fail("/more: no /history yet") }
            guard cursor.more else { return fail("/more: no older messages in \(cursor.conversation)") }
            ask(.history(cursor.conversation, limit: cursor.limit, before: cursor.before), command: command)
        case .status:
            showStatus()
        case .retry:
            if client.retryNow() { emit("* retrying now") } else { emit("* not waiting to reconnect") }
        case .quit:
            pendingInput.removeAll()
            if waiting != .answer { waiting = nil }
            beginQuitting()
        case .help:
            TerminalCommand.helpLines.forEach(emit)
        case .invalid(let why):
            fail(why)
        }
    }

    /// Sends a request and holds the following lines until its answer; while not connected, holds this
    /// line (and the rest) until the connection is back.
    private func ask(_ request: Request, command: TerminalCommand) {
        guard client.state == .online else { return waitForConnection(command, name: request.name) }
        waiting = .answer
        askedCommand = command
        let answered: (Result<Answer, ChatRequestError>) -> Void = { [weak self] in self?.answered(request, $0) }
        switch request {
        case .join(let room): chat.join(room: room) { answered($0.map(Answer.room)) }
        case .leave(let room): chat.leave(room: room) { answered($0.map(Answer.room)) }
        case .rooms: chat.rooms { answered($0.map(Answer.rooms)) }
        case .history(let conversation, let limit, let before):
            chat.history(with: conversation.recipient, before: before, limit: limit) { answered($0.map(Answer.history)) }
        }
    }

    /// Holds `command` (and the lines after it) until the connection is back.
    private func waitForConnection(_ command: TerminalCommand, name: String) {
        pendingInput.insert(command, at: 0)
        waiting = .connection
        if configuration.isInteractive { emit("… \(name) waits for the connection (\(client.state))") }
    }

    private func send(_ text: String, to recipient: IMRecipient) {
        let number = nextNumber
        nextNumber += 1
        let id = "\(idPrefix)-\(number)"
        let conversation: TerminalConversation
        switch recipient {
        case .room(let room): conversation = .room(room)
        case .user(let user): conversation = .user(user)
        }
        // Registered before the call: the `queued` report arrives from inside `send`.
        own[id] = OwnMessage(number: number, conversation: conversation, state: .queued)
        ownOrder.append(id)
        pendingText[id] = text
        do {
            try client.send(text, to: recipient, id: id)
        } catch {
            own[id] = nil
            ownOrder.removeAll { $0 == id }
            pendingText[id] = nil
            fail("m\(number) not sent: \(error)")
        }
    }

    private func beginQuitting() {
        guard phase == .running || phase == .created, !inputEnded else { return }
        inputEnded = true
        guard phase == .running else { return finish(status: 1) }
        // The deadline runs from the end of input, not from when the last line ran: a line waiting for a
        // connection that never comes must not keep the session alive.
        let timer = RunLoopTimer(after: configuration.drainTimeout, label: "chat-node client drain") { [weak self] _ in
            self?.drainTimedOut()
        }
        drainTimer = timer
        loop.add(timer, forMode: .common)
        if configuration.isInteractive, !own.isEmpty || unrunLines > 0 {
            // A person should know why nothing happens yet, and how not to wait.
            var waits: [String] = []
            if !own.isEmpty { waits.append("\(own.count) message\(own.count == 1 ? "" : "s")") }
            if unrunLines > 0 { waits.append("\(unrunLines) command\(unrunLines == 1 ? "" : "s")") }
            emit(
                "* finishing: waiting up to \(formatDuration(configuration.drainTimeout)) for \(waits.joined(separator: " and ")) (Ctrl-C again: leave now)"
            )
        }
        schedulePump()
    }

    private func drainTimedOut() {
        guard phase == .running else { return }
        var waited: [String] = []
        if !own.isEmpty { waited.append("\(own.count) message\(own.count == 1 ? "" : "s") not settled") }
        let notRun = unrunLines
        if notRun > 0 { waited.append("\(notRun) line\(notRun == 1 ? "" : "s") not run") }
        if case .connecting = client.state { waited.append("still connecting") }
        if case .loggingIn = client.state { waited.append("still logging in") }
        emit("! gave up waiting after \(formatDuration(configuration.drainTimeout)): \(waited.joined(separator: ", "))")
        abandonInput()
        closeNow()
    }

    /// Drops the lines not run yet (each one a failure) and stops waiting for an answer.
    private func abandonInput() {
        failureCount += unrunLines
        pendingInput.removeAll()
        waiting = nil
    }

    /// Lines not run yet, counting one that waits for its answer. A line waiting for the connection is
    /// still in `pendingInput`.
    private var unrunLines: Int {
        if case .answer = waiting { return pendingInput.count + 1 }
        return pendingInput.count
    }

    private func closeNow() {
        guard phase == .running else { return }
        phase = .closing
        drainTimer?.invalidate()
        drainTimer = nil
        // Messages still open are settled by the close (ABANDON): each ends stored or failed.
        client.close()
    }

    private func finish(status: Int32) {
        guard phase != .finished else { return }
        phase = .finished
        drainTimer?.invalidate()
        drainTimer = nil
        reachability?.invalidate()
        reachability = nil
        exitStatus = status
        onFinish?(status)
    }

    // MARK: From the client

    private func stateChanged(_ state: IMConnectionState) {
        switch state {
        case .connecting:
            attemptReachedNode = false
        case .loggingIn:
            attemptReachedNode = true
        case .idle, .closing:
            return  // steps on the way; the outcome gets the line
        case .online:
            emit("* connected")
            if client.isAccountCreated { emit("* account created") }
            if waiting == .connection { waiting = nil }
            if currentRoom == nil { restoresRoom = true }
            hasLoggedIn = true
            schedulePump()
        case .reconnecting(let delay, let attempt):
            nextAttempt = loop.now + delay
            if attemptReachedNode {
                emit("* \(state)")
            } else {
                let node = "\(configuration.host):\(configuration.port)"
                emit(TerminalConnectFailure.line(node: node, reason: client.lastFailure, retryIn: delay, attempt: attempt))
            }
            if inputEnded { schedulePump() }  // an attempt concluded: finishing may go on
        case .waitingForNetwork:
            emit("* \(state)")
            if inputEnded { schedulePump() }
        case .closed(let reason):
            if client.isAccountUnknown, phase == .running, let confirm = configuration.confirmNewAccountPassword {
                return confirmNewAccount(confirm)
            }
            emit("* \(state)")
            if reason != .userClosed || phase != .closing { failureCount += 1 }
            finish(status: failureCount == 0 ? 0 : 1)
        }
    }

    private func received(_ message: ChatMessage) {
        let conversation: TerminalConversation
        switch message.recipient {
        case .room(let room): conversation = .room(room)
        case .user: conversation = .user(message.from)
        }
        emitText(prefix: "\(conversation) \(message.from): ", message.text)
    }

    private func deliveryChanged(_ id: String, _ state: IMDeliveryState) {
        guard var message = own[id] else { return }
        message.state = state
        if state == .queued, let text = pendingText.removeValue(forKey: id) {
            emitText(prefix: "→ m\(message.number) queued \(message.conversation): ", text)
            message.shown = state
        } else if state != .queued, state != message.shown {
            emit("→ m\(message.number) \(Self.describe(state, of: message.conversation))")
            message.shown = state
        }
        if state.isFinal {
            own[id] = nil
            ownOrder.removeAll { $0 == id }
            if case .failed = state { failureCount += 1 }
            if inputEnded { schedulePump() }
        } else {
            own[id] = message
        }
    }

    private func answered(_ request: Request, _ result: Result<Answer, ChatRequestError>) {
        if waiting == .answer {
            waiting = nil
            askedCommand = nil
            schedulePump()
        }
        let answer: Answer
        switch result {
        case .failure(let error): return fail("\(request.name): \(error)")
        case .success(let value): answer = value
        }
        switch (request, answer) {
        case (.join(let room), .room(let info)):
            joinedRooms.removeAll { $0 == room }
            joinedRooms.append(room)
            currentRoom = room
            emit("* joined \(room) (\(roomSize(info)))")
        case (.leave(let room), .room(let info)):
            joinedRooms.removeAll { $0 == room }
            if currentRoom == room { currentRoom = joinedRooms.last }
            emit("* left \(room) (\(members(info.members)))\(currentRoom.map { "; current room: \($0)" } ?? "")")
        case (.rooms, .rooms(let rooms)):
            if rooms.isEmpty { return emit("* no rooms yet (/join ROOM creates one)") }
            emit("rooms:")
            for room in rooms {
                emit("  \(room.name) — \(roomSize(room))\(room.isMember ? ", joined" : "")")
            }
        case (.history(let conversation, let limit, let before), .history(let page)):
            showHistory(page, of: conversation, limit: limit, continuing: before != 0)
        default:
            preconditionFailure("ask(_:command:) pairs each request with its own answer")
        }
    }

    /// Asks the node for the user's rooms from before: with exactly one, plain text goes there again;
    /// with several, none is guessed and the person picks. Only plain text waits for the answer.
    private func restoreRoom() {
        restoringRoom = true
        chat.rooms { [weak self] result in
            guard let self else { return }
            self.restoringRoom = false
            switch result {
            case .success(let rooms):
                self.restore(from: rooms)
                if self.waiting == .roomRestore { self.waiting = nil }
            case .failure(let error):
                // Lost with the connection: plain text waits for the next login, which asks again.
                self.logger.debug("rooms from before not read: \(error)")
                if self.waiting == .roomRestore { self.waiting = self.client.state == .online ? nil : .connection }
            }
            self.schedulePump()
        }
    }

    private func restore(from rooms: [Room]) {
        let member = rooms.filter(\.isMember).map(\.name)
        joinedRooms = member
        guard currentRoom == nil, !member.isEmpty else { return }
        if member.count == 1 {
            currentRoom = member[0]
            emit("* current room: \(member[0]) (joined earlier)")
        } else {
            emit("* you are in \(member.joined(separator: ", ")): /join ROOM picks where plain text goes")
        }
    }

    /// A page in reading order, oldest first (the node sends newest first); whether older ones exist
    /// comes first, where they would be.
    private func showHistory(_ page: HistoryPage, of conversation: TerminalConversation, limit: Int, continuing: Bool) {
        historyCursor = (conversation, limit, page.nextBefore ?? 0, page.moreAvailable)
        emit("\(conversation) \(continuing ? "older history" : "history"), oldest first:")
        emit(historyCursor?.more == true ? "  (older: /more)" : "  (start of the conversation)")
        if page.messages.isEmpty { emit("  (no messages)") }
        let now = time(nil)
        for message in page.messages.reversed() {
            emitText(prefix: "  #\(message.seq) \(clockTime(milliseconds: message.sentAtMilliseconds, now: now)) \(message.from): ", message.text)
        }
    }

    private func showStatus() {
        var state = "\(client.state)"
        if case .reconnecting(_, let attempt) = client.state, let nextAttempt {
            // The state's delay was counted from the drop; say what is left of it now.
            let left = max(.zero, nextAttempt - loop.now)
            state = "reconnecting in \(formatDuration(left, tenths: true)) (attempt \(attempt))"
        }
        let node = "\(configuration.host):\(configuration.port)"
        let room = currentRoom.map { room in ", room \(room)\(chat.isLarge(room: room) ? " (large: presence not shown)" : "")" }
        emit("* \(state) — \(configuration.user) at \(node)\(room ?? ", no current room")")
        if ownOrder.isEmpty {
            emit("* no messages pending")
        } else {
            let list = ownOrder.compactMap { own[$0] }.map { "m\($0.number) \($0.state)" }
            emit("* pending: \(list.joined(separator: ", "))")
        }
    }

    // MARK: Reachability

    private func followNetwork() {
        // The route to the node itself: a host name is looked up off the loop and the routes to its
        // addresses followed, so `--host localhost` works in a network without a default route.
        do {
            let reachability = try NetworkReachability(loop: loop, modes: client.modes, host: configuration.host, logger: logger)
            self.reachability = reachability
            client.follow(reachability)
        } catch {
            logger.warning("not watching the network (\(error)); reconnects run on backoff alone")
        }
    }

    // MARK: Output

    private func fail(_ text: String) {
        failureCount += 1
        emit("! \(text)")
    }

    private func emit(_ line: String) {
        output(line)
    }

    /// A message's text is the sender's: control characters (an escape sequence could rewrite the
    /// terminal) are shown escaped (``visible(_:)``), and each line of a multi-line text gets its own
    /// output line.
    private func emitText(prefix: String, _ text: String) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        for (index, line) in lines.enumerated() {
            emit((index == 0 ? prefix : String(repeating: " ", count: min(prefix.count, 8))) + Self.visible(line))
        }
    }

    /// `text` with every control character shown as an escape, safe to print and nothing lost:
    /// `\0` (NUL), `\t`, `\r`, `\e` (ESC), `\n`, other C0 controls and DEL as `\xHH`, C1 controls as
    /// `\u{HH}`. The text after a NUL is shown like any other (a C string would end there).
    public static func visible(_ text: Substring) -> String {
        var result = ""
        result.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x00: result += "\\0"
            case 0x09: result += "\\t"
            case 0x0A: result += "\\n"
            case 0x0D: result += "\\r"
            case 0x1B: result += "\\e"
            case 0x00..<0x20, 0x7F: result += "\\x" + hex(scalar.value)
            case 0x80..<0xA0: result += "\\u{" + hex(scalar.value) + "}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return digits.count == 1 ? "0" + digits : digits
    }

    /// A delivery state as the line shows it. The node refuses a message to a room the sender is not in
    /// as unknownRecipient (rooms are made by joining, so the room itself is never unknown): say so.
    static func describe(_ state: IMDeliveryState, of conversation: TerminalConversation) -> String {
        if case .failed(.refused(.unknownRecipient)) = state, case .room(let room) = conversation {
            return "failed: you are not in \(room) (/join \(room))"
        }
        return "\(state)"
    }

    private func members(_ count: Int) -> String { "\(groupedThousands(count)) member\(count == 1 ? "" : "s")" }

    /// A room's count as the lines show it, saying when the room is large: there the node sends no
    /// presence of its members, and silence must not read as "offline".
    private func roomSize(_ room: Room) -> String {
        members(room.members) + (chat.isLarge(room: room.name) ? " · presence not shown" : "")
    }

    /// A room of the user's crossed the node's large-room size by a count heard after the fact (the
    /// room list read at login, a MEMBERSHIP notice, a login announcing another size). The answer to
    /// the person's own `/join` or `/rooms` says it in its own line.
    private func largeRoomChanged(_ change: LargeRoomChange) {
        guard change.room.isMember else { return }
        if waiting == .answer {
            switch askedCommand {
            case .join(let room)? where room == change.room.name: return
            case .rooms?: return
            default: break
            }
        }
        let presence = change.isLarge ? "presence not shown" : "presence shown"
        emit("* \(change.room.name) is \(change.isLarge ? "large" : "no longer large") (\(members(change.room.members)) · \(presence))")
    }

    private func checkThread() {
        precondition(loop.isCurrentThread, "TerminalClient used off its run loop's thread")
    }
}

/// A time of day for a history entry: `14:03:05` today, `2025-03-14 14:03` on another day (local time).
func clockTime(milliseconds: UInt64, now: time_t) -> String {
    var seconds = time_t(milliseconds / 1000)
    var then = tm()
    var today = tm()
    var current = now
    localtime_r(&seconds, &then)
    localtime_r(&current, &today)
    func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    let clock = "\(two(then.tm_hour)):\(two(then.tm_min))"
    if then.tm_year == today.tm_year, then.tm_yday == today.tm_yday { return clock + ":\(two(then.tm_sec))" }
    return "\(then.tm_year + 1900)-\(two(then.tm_mon + 1))-\(two(then.tm_mday)) \(clock)"
}

/// `1,234,567`: a count as a person reads it, the same in every locale (lines are matched by scripts).
func groupedThousands(_ value: Int) -> String {
    let digits = String(value.magnitude)
    var grouped = ""
    for (index, digit) in digits.enumerated() {
        if index > 0, (digits.count - index) % 3 == 0 { grouped.append(",") }
        grouped.append(digit)
    }
    return (value < 0 ? "-" : "") + grouped
}

/// `10 s`, `0.3 s`; with `tenths`, always one decimal (`1.0 s`) like IMConnectionState's delays.
func formatDuration(_ duration: Duration, tenths: Bool = false) -> String {
    let (seconds, attoseconds) = duration.components
    let value = Double(seconds) + Double(attoseconds) / 1e18
    if tenths { return "\((value * 10).rounded() / 10) s" }
    return value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
}
