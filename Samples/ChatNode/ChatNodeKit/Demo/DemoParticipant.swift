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

    /// Own messages: id → (recipient, final state if settled).
    private(set) var sent: [String: (to: IMRecipient, final: IMDeliveryState?)] = [:]
    private(set) var sendOrder: [String] = []
    /// (sender, id) of every message the application received, in order.
    private(set) var received: [(from: String, id: String, text: String)] = []
    private(set) var disconnects: [(at: LoopInstant, reason: IMDisconnectReason)] = []
    private(set) var onlineAt: [LoopInstant] = []

    init(name: String, port: UInt16, narrate: @escaping (String) -> Void) {
        self.name = name
        self.narrate = narrate
        var configuration = IMClientConfiguration(user: name, password: "\(name)-password")
        configuration.heartbeat = .fixed(.seconds(1))
        configuration.answerTimeout = .milliseconds(1500)
        configuration.loginTimeout = .seconds(2)
        configuration.ackTimeout = .seconds(3)
        configuration.backoff = ReconnectBackoff.Policy(initialDelay: .milliseconds(300), maximumDelay: .seconds(3))
        var logger = Logger(label: "demo.\(name)")
        logger.logLevel = .critical  // the narration says it all
        let connector = TCPFrameLink.connector(host: "127.0.0.1", port: port, connectTimeout: .seconds(2))
        client = IMClient(configuration: configuration, connector: MarkingLink.connector(connector, marking: recorder), logger: logger)
        chat = ChatClient(connection: client)
        recorder.attach(to: client.loop)
        chat.onStateChange = { [weak self] chat, state in
            guard let self else { return }
            if state == .online { self.onlineAt.append(chat.connection.loop.now) }
            self.markInTimeline(state)
            switch state {
            case .online, .reconnecting, .waitingForNetwork, .closed: self.narrate("* \(state)")
            default: break
            }
        }
        client.onDisconnect = { [weak self] client, reason in
            self?.disconnects.append((client.loop.now, reason))
            self?.markInTimeline(reason)
            self?.narrate("* disconnected: \(reason)")
        }
        chat.onMessage = { [weak self] _, message in
            guard let self else { return }
            self.received.append((message.from, message.id, message.text))
            // A direct message is shown as to this user, a room message as to its room.
            let place = if case .room = message.recipient { "\(message.recipient)" } else { "@\(self.name)" }
            self.narrate("\(place) \(message.from): \(message.text)")
        }
        chat.onDelivery = { [weak self] _, id, state in
            guard let self, let entry = self.sent[id] else { return }
            if state.isFinal { self.sent[id] = (entry.to, state) }
            if case .sent(let attempt) = state, attempt > 1 { self.narrate("→ resent \(self.label(id)) (attempt \(attempt))") }
            if case .failed = state { self.narrate("→ \(self.label(id)) \(state)") }
        }
        client.start()
    }

    /// Sends `text`; it is queued if the client is not online.
    func say(_ text: String, to recipient: IMRecipient) throws {
        let id = try client.send(text, to: recipient)
        sent[id] = (recipient, nil)
        sendOrder.append(id)
        let queued = client.state != .online
        narrate("→ \(recipient) \"\(text)\"\(queued ? "  (queued: \(client.state))" : "")")
    }

    /// Joins `room`; a join that fails is narrated (the demo goes on: the summary shows what it cost).
    func join(_ room: String) {
        chat.join(room: room) { [weak self] result in
            if case .failure(let error) = result { self?.narrate("* join #\(room) failed: \(error)") }
        }
    }

    var isOnline: Bool { client.state == .online }
    var unsettled: Int { sent.values.filter { $0.final == nil }.count }

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
        guard let index = sendOrder.firstIndex(of: id) else { return id }
        return "message \(index + 1)"
    }
}
