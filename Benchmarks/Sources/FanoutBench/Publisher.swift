import BenchSupport
import ChatBenchKit
import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopNet

/// The one sending client, on a thread and loop of its own: logs in, joins the room, and on ``go()``
/// sends `messages` room messages, keeping at most `window` sent and not yet acknowledged — the
/// equivalent of an MQTT QoS 1 publisher's in-flight window of PUBLISHes waiting for PUBACK. A
/// message is acknowledged (`delivered`) once the node committed it and its recipients' inbox rows.
final class Publisher {
    let options: Options
    let loop = RunLoop.current
    private var chat: ChatClient!
    private(set) var isReady = false
    private(set) var failures: [String] = []
    private(set) var sent = 0
    private(set) var acknowledged = 0
    private(set) var failed = 0
    /// CLOCK_MONOTONIC of the first send and of the last acknowledgement.
    private(set) var firstSend: UInt64 = 0
    private(set) var lastAck: UInt64 = 0
    /// Set when the fan-out's window closed with messages still unsettled: the report is due now.
    var isStopped = false
    var isFinished: Bool { isStopped || acknowledged + failed >= options.messages }

    init(options: Options) {
        self.options = options
        var configuration = IMClientConfiguration(user: "publisher", password: "fanout")
        configuration.loginTimeout = .seconds(Int64(options.readyTimeout))
        // The window bounds what is unsettled; the outbox only needs room for it.
        configuration.outboxLimit = max(configuration.outboxLimit, options.window)
        let client = IMClient(
            configuration: configuration, loop: loop,
            connector: TCPFrameLink.connector(host: "127.0.0.1", port: options.port))
        chat = ChatClient(connection: client)
        let room = options.room
        chat.onStateChange = { [unowned self] chat, state in
            switch state {
            case .online where !isReady:
                chat.join(room: room) { [unowned self] result in
                    switch result {
                    case .success: isReady = true
                    case .failure(.refused(let code)): failures.append("publisher join refused: \(code)")
                    case .failure(let error): failures.append("publisher join failed: \(error)")
                    }
                }
            case .closed(let reason):
                failures.append("publisher closed: \(reason)")
            default:
                break
            }
        }
        client.onDisconnect = { [unowned self] _, reason in failures.append("publisher disconnected: \(reason)") }
        chat.onDelivery = { [unowned self] _, _, state in
            switch state {
            case .stored:
                acknowledged += 1
                lastAck = bs_now_ns()
            case .failed(let why):
                failed += 1
                if failures.count < 10 { failures.append("publisher message failed: \(why)") }
            case .queued, .sent:
                return
            }
            fill()
        }
    }

    func start() { chat.connection.start() }

    /// Starts sending.
    func go() {
        firstSend = bs_now_ns()
        fill()
    }

    /// Sends until `window` messages are unsettled or all have been sent.
    private func fill() {
        while sent < options.messages, sent - acknowledged - failed < options.window {
            let text = Payload.make(sentAt: bs_now_ns(), bytes: options.payload)
            do {
                try chat.send(text, to: .room(options.room))
            } catch {
                failures.append("publisher send: \(error)")
                failed += options.messages - sent
                sent = options.messages
                return
            }
            sent += 1
        }
    }
}
