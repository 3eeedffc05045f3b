import Logging
import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopNet

/// One demo user: an ``IMClient`` (with a `ChatClient` on it for rooms) on a loop of its own, and
/// the book-keeping the summary needs.
/// Everything here lives on the participant's loop thread; the script reaches it through
/// ``HostedLoop/sync(_:)``.
final class DemoParticipant {
    let name: String
    let client: IMClient
    private let chat: ChatClient
    let recorder = ActivityRecorder()
    private let narrate: (String) -> Void
    /// The stretch from a disconnect to the next login, drawn as a span in the timeline.
    private var offline: ActivityRecorder.Span?

    /// How often an idle participant sends a heartbeat, and how long anything it sends may wait for
    /// its answer: together they bound how soon a silent link is noticed (the summary says so).
    static let heartbeat = Duration.seconds(1)
    static let answerTimeout = Duration.milliseconds(1500)

    /// Own messages: id → (recipient, final state if settled).
    private(set) var sent: [String: (to: IMRecipient, final: IMDeliveryState?)] = [:]
    /// Own messages' texts, by id: the narration names a message by what it says.
    private var texts: [String: String] = [:]
    /// Whether the connection under way got as far as a login: one that ends before it never
    /// reached the node (carol's relay accepts, then finds the node down).
    private var loggedIn = false
    private(set) var sendOrder: [String] = []
    /// When each own message was handed to the client.
    private(set) var sentAt: [String: LoopInstant] = [:]
    /// (sender, id) of every message the application received, in order.
    private(set) var received: [(from: String, id: String, text: String, at: LoopInstant)] = []
    private(set) var disconnects: [(at: LoopInstant, reason: IMDisconnectReason)] = []
    private(set) var onlineAt: [LoopInstant] = []
    /// Presence changes the node told this client about, in order.
    private(set) var presence: [(at: LoopInstant, change: PresenceChange)] = []
    /// When a message of its own went out again (a resend after a lost or refused attempt).
    private(set) var resentAt: [LoopInstant] = []
    private(set) var joinedRooms: Set<String> = []
    /// Whether each message shown and each resend is narrated (not in a run of hundreds).
    private let narratesTraffic: Bool
    private var chatter: RunLoopTimer?

    /// - Parameter peer: who is at `port`, for the name traces give the connection ("alice ↔ node").
    convenience init(name: String, port: UInt16, reaching peer: String, narrate: @escaping (String) -> Void) {
        self.init(name: name, connector: Self.connector(port: port, label: "\(name) ↔ \(peer)"), narrate: narrate)
    }

    /// A new TCP link to 127.0.0.1:`port` per attempt, its connection named `label`: one string for
    /// every attempt.
    private static func connector(port: UInt16, label: String) -> IMConnector {
        { loop, modes, maximumFrameBody in
            let connection = TCPConnection(loop: loop, modes: modes)
            connection.label = label
            return TCPFrameLink(connecting: connection, maximumFrameBody: maximumFrameBody) {
                $0.connect(to: "127.0.0.1", port: port, timeout: .seconds(2))
            }
        }
    }

    /// - Parameter connector: how the client reaches a node, at each attempt.
    /// - Parameter maximumSendAttempts: sends of one message before the client gives up on it (a
    ///   cluster's store may be down for longer than the default three acknowledgement timeouts).
    init(
        name: String, connector: @escaping IMConnector, maximumSendAttempts: Int = 3, narratesTraffic: Bool = true,
        narrate: @escaping (String) -> Void
    ) {
        self.name = name
        self.narrate = narrate
        self.narratesTraffic = narratesTraffic
        var configuration = IMClientConfiguration(user: name, password: "\(name)-password")
        configuration.heartbeat = .fixed(Self.heartbeat)
        configuration.answerTimeout = Self.answerTimeout
        configuration.loginTimeout = .seconds(2)
        configuration.ackTimeout = .seconds(3)
        configuration.backoff = ReconnectBackoff.Policy(initialDelay: .milliseconds(300), maximumDelay: .seconds(3))
        configuration.maximumSendAttempts = maximumSendAttempts
        var logger = Logger(label: "demo.\(name)")
        logger.logLevel = .critical  // the narration says it all
        client = IMClient(configuration: configuration, connector: MarkingLink.connector(connector, client: name, marking: recorder), logger: logger)
        chat = ChatClient(connection: client)
        recorder.attach(to: client.loop)
        chat.onStateChange = { [weak self] chat, state in
            guard let self else { return }
            if state == .online { self.onlineAt.append(chat.connection.loop.now) }
            if case .connecting = state { self.loggedIn = false }
            if state == .online { self.loggedIn = true }
            self.markInTimeline(state)
            switch state {
            case .online, .reconnecting, .waitingForNetwork, .closed: self.narrate("* \(state)")
            default: break
            }
        }
        client.onDisconnect = { [weak self] client, reason in
            guard let self else { return }
            self.disconnects.append((client.loop.now, reason))
            self.markInTimeline(reason)
            self.narrate(self.loggedIn ? "* disconnected: \(reason)" : "* did not reach the node: \(Self.beforeLogin(reason))")
        }
        chat.onMessage = { [weak self] _, message in
            guard let self else { return }
            self.received.append((message.from, message.id, message.text, self.client.loop.now))
            guard self.narratesTraffic else { return }
            // A direct message is shown as to this user, a room message as to its room.
            let place = if case .room = message.recipient { "\(message.recipient)" } else { "@\(self.name)" }
            self.narrate("\(place) \(message.from): \(message.text)")
        }
        chat.onDelivery = { [weak self] _, id, state in
            guard let self, let entry = self.sent[id] else { return }
            if state.isFinal { self.sent[id] = (entry.to, state) }
            if case .sent(let attempt) = state, attempt > 1 {
                self.resentAt.append(self.client.loop.now)
                if self.narratesTraffic { self.narrate("→ resent \(self.label(id)) (attempt \(attempt))") }
            }
            if case .failed = state { self.narrate("→ \(self.label(id)) \(state)") }
        }
        chat.onPresence = { [weak self] chat, change in self?.presence.append((chat.connection.loop.now, change)) }
        client.start()
    }

    /// Sends `text`; it is queued if the client is not online.
    func say(_ text: String, to recipient: IMRecipient) throws {
        let id = try client.send(text, to: recipient)
        track(id, text, to: recipient)
        let queued = client.state != .online
        narrate("→ \(recipient) \"\(text)\"\(queued ? "  (queued: \(client.state))" : "")")
    }

    /// Joins `room`; a join that fails is narrated (the demo goes on: the summary shows what it cost).
    func join(_ room: String) {
        chat.join(room: room) { [weak self] result in
            switch result {
            case .success: self?.joinedRooms.insert(room)
            case .failure(let error): self?.narrate("* join #\(room) failed: \(error)")
            }
        }
    }

    /// Sends a numbered line every `interval`, in turn to `room` and to each of `peers` directly,
    /// until ``stopChatting()``: live traffic while a fault strikes. Quiet: a run sends hundreds.
    func startChatting(every interval: Duration, room: String, peers: [String]) {
        let recipients = [IMRecipient.room(room)] + peers.map { IMRecipient.user($0) }
        var count = 0
        let timer = RunLoopTimer(after: interval, repeating: interval, label: "demo.chatter") { [weak self] _ in
            guard let self else { return }
            count += 1
            let recipient = recipients[count % recipients.count]
            let text = "\(self.name) #\(count)"
            guard let id = try? self.client.send(text, to: recipient) else { return }
            self.track(id, text, to: recipient)
        }
        client.loop.add(timer, forMode: .common)
        chatter = timer
    }

    func stopChatting() {
        chatter?.invalidate()
        chatter = nil
    }

    /// What the tally needs from this client: its own messages and what it showed.
    var record: DeliveryTally.ClientRecord {
        (
            sendOrder.map { DeliveryTally.Sent(id: $0, recipient: sent[$0]!.to, final: sent[$0]!.final) },
            received.map { ($0.from, $0.id) }, client.duplicatesDropped
        )
    }

    var isOnline: Bool { client.state == .online }
    var unsettled: Int { sent.values.filter { $0.final == nil }.count }

    private func track(_ id: String, _ text: String, to recipient: IMRecipient) {
        sent[id] = (recipient, nil)
        texts[id] = text
        sentAt[id] = client.loop.now
        sendOrder.append(id)
    }

    private func markInTimeline(_ state: IMConnectionState) {
        switch state {
        case .online:
            recorder.mark(onlineAt.count == 1 ? "connected" : "reconnected", detail: "logged in as \(name)")
            if let offline { recorder.endSpan(offline) }
            offline = nil
        case .reconnecting(let delay, let attempt):
            recorder.mark("reconnect \(attempt)", detail: "attempt \(attempt) in \(formatDemoSeconds(delay)) (backoff)")
        default: break
        }
    }

    private func markInTimeline(_ reason: IMDisconnectReason) {
        if case .answerTimeout = reason {
            recorder.mark("ping timeout", detail: "\(reason)")
        } else {
            recorder.mark("disconnected", detail: "\(reason)")
        }
        if offline == nil { offline = recorder.beginSpan("offline", detail: "\(name) disconnected: \(reason)") }
    }

    private func label(_ id: String) -> String {
        texts[id].map { "\"\($0)\"" } ?? id
    }

    /// Why a connection that never logged in ended, for the narration: the link opened (to the
    /// relay, or to a node's port still being torn down) and closed before the node answered.
    static func beforeLogin(_ reason: IMDisconnectReason) -> String {
        switch reason {
        case .transport(.failed(let failure)): return "the link opened, then failed before the login was answered (\(failure))"
        case .transport(.peerClosed): return "the link opened, then closed before the login was answered"
        default: return "\(reason)"
        }
    }
}
