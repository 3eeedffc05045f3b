import BenchSupport
import ChatBenchKit
import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopKit

/// `cluster-bench traffic`: one sender on the first node and R recipients on the others (or on all),
/// every client on this thread's loop. The sender sends M messages, to one user (message i to
/// recipient i mod R) or to a room all of them joined, keeping at most W messages in flight: a
/// message leaves the window once it is acknowledged (SEND_ACK: committed) **and** every recipient
/// has it, so the latency measured is the system's, not a queue this driver let grow. With W = 1
/// each message crosses alone.
final class Traffic {
    /// A message sent and not yet settled.
    private struct InFlight {
        var undelivered: Int
        var acknowledged = false
    }

    let options: Options
    let crowd: Crowd
    private let room: String
    private var joined = 0
    private(set) var sent = 0
    private(set) var acknowledged = 0
    private(set) var failed = 0
    private var inFlight: [String: InFlight] = [:]
    private(set) var latencies: [UInt64] = []
    /// Message ids each recipient was shown (index 0 is the sender, who receives nothing).
    private var shown: [Set<String>]
    /// A recipient shown a message id it had been shown before (clients de-duplicate: expected 0).
    private(set) var duplicatesShown = 0
    /// Messages received that this run did not send, or that went to the sender (expected 0).
    private(set) var foreign = 0
    private(set) var firstSend: UInt64 = 0
    private(set) var lastDelivery: UInt64 = 0
    private var sender: ChatClient?

    init(options: Options) {
        self.options = options
        room = options.label
        crowd = Crowd(ports: options.ports, loginsInFlight: options.loginsInFlight, password: "cluster", countsHeartbeats: false) {
            configuration in
            configuration.loginTimeout = .seconds(Int64(options.readyTimeout))
            configuration.outboxLimit = max(configuration.outboxLimit, options.window)
        }
        shown = Array(repeating: [], count: options.recipients + 1)
        crowd.add(user: "\(options.label)-sender", node: 0)
        let nodes = options.ports.count
        for index in 0..<options.recipients {
            let node: Int
            switch options.spread {
            case .others: node = nodes == 1 ? 0 : 1 + index % (nodes - 1)
            case .all: node = index % nodes
            }
            crowd.add(user: "\(options.label)-r\(index)", node: node)
        }
        crowd.onFirstOnline = { [unowned self] index, chat in
            if index == 0 { adopt(sender: chat) }
            guard options.target == .room else { return joined += 1 }
            chat.join(room: room) { [unowned self] result in
                switch result {
                case .success: joined += 1
                case .failure(let error): crowd.note("\(crowd.members[index].user) join: \(error)")
                }
            }
        }
        crowd.onMessage = { [unowned self] index, message in received(message, by: index) }
    }

    /// Every client online (and in the room, for a room run).
    var isReady: Bool { joined == options.recipients + 1 }
    var expectedDeliveries: Int { options.target == .room ? options.messages * options.recipients : options.messages }
    var isFinished: Bool { acknowledged + failed == options.messages && inFlight.isEmpty }
    /// Recipients shown every message meant for them.
    var recipientsComplete: Int {
        (1...options.recipients).filter { shown[$0].count == expected(for: $0) }.count
    }

    /// Starts sending.
    func go() {
        firstSend = bs_now_ns()
        fill()
    }

    private func expected(for index: Int) -> Int {
        guard options.target == .user else { return options.messages }
        let recipient = index - 1
        return options.messages / options.recipients + (recipient < options.messages % options.recipients ? 1 : 0)
    }

    private func adopt(sender chat: ChatClient) {
        sender = chat
        chat.onDelivery = { [unowned self] _, id, state in
            switch state {
            case .stored:
                acknowledged += 1
                inFlight[id]?.acknowledged = true
            case .failed(let why):
                failed += 1
                crowd.note("message \(id) failed: \(why)")
                inFlight[id] = nil
            case .queued, .sent:
                return
            }
            settle(id)
        }
    }

    private func received(_ message: ChatMessage, by index: Int) {
        let now = bs_now_ns()
        guard index > 0, let sentAt = Payload.sentAt(message.text) else { return foreign += 1 }
        guard shown[index].insert(message.id).inserted else { return duplicatesShown += 1 }
        latencies.append(now &- sentAt)
        lastDelivery = now
        inFlight[message.id]?.undelivered -= 1
        settle(message.id)
    }

    private func settle(_ id: String) {
        guard let message = inFlight[id], message.acknowledged, message.undelivered <= 0 else {
            if inFlight[id] == nil { fill() }
            return
        }
        inFlight[id] = nil
        fill()
    }

    /// Sends until `window` messages are in flight or all have been sent.
    private func fill() {
        guard let sender, firstSend > 0 else { return }
        while sent < options.messages, inFlight.count < options.window {
            let to: IMRecipient =
                options.target == .room ? .room(room) : .user(crowd.members[1 + sent % options.recipients].user)
            do {
                let id = try sender.send(Payload.make(sentAt: bs_now_ns(), bytes: options.payload), to: to)
                inFlight[id] = InFlight(undelivered: options.target == .room ? options.recipients : 1)
            } catch {
                crowd.note("send: \(error)")
                failed += options.messages - sent
                sent = options.messages
                return
            }
            sent += 1
        }
    }
}
