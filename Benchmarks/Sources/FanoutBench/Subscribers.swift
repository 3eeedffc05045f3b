import BenchSupport
import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopNet

/// The N receiving clients, all on the calling thread's loop: each logs in as a user of its own (a
/// room message has one inbox row per recipient user, as in a real room), joins the room, and records
/// for every message it receives the delivery latency (now − the send time in its text).
final class Subscribers {
    let options: Options
    let loop = RunLoop.current
    private var clients: [ChatClient] = []
    /// Subscribers whose JOIN was answered `ok`.
    private(set) var joined = 0
    /// Logins the node refused for now during the ramp (each retried by its client).
    private(set) var loginRetries = 0
    /// Why a client failed to come online or to join (a failed run reports them).
    private(set) var failures: [String] = []
    /// Delivery latency of every message received, in nanoseconds (M × N of them when all arrive).
    private(set) var latencies: [UInt64] = []
    /// Messages each subscriber received.
    private(set) var receivedBy: [Int]
    /// Texts without a send time (none expected: they would mean a foreign message in the room).
    private(set) var unreadable = 0
    /// CLOCK_MONOTONIC of the last message received.
    private(set) var lastDelivery: UInt64 = 0
    /// Stop the loop when this many messages have arrived in all.
    var expected = Int.max

    init(options: Options) {
        self.options = options
        receivedBy = Array(repeating: 0, count: options.subscribers)
        latencies.reserveCapacity(options.subscribers * options.messages)
    }

    var received: Int { latencies.count }
    /// Incoming duplicates the clients' de-duplication dropped (a resend the server made).
    var duplicatesDropped: Int { clients.reduce(0) { $0 + $1.connection.duplicatesDropped } }

    /// Opens every client; they come online and join as the loop runs.
    func connect() {
        for index in 0..<options.subscribers { open(index) }
    }

    private func open(_ index: Int) {
        var configuration = IMClientConfiguration(user: "sub\(index)", password: "fanout")
        configuration.loginTimeout = .seconds(Int64(options.readyTimeout))
        let client = IMClient(
            configuration: configuration, loop: loop,
            connector: TCPFrameLink.connector(host: "127.0.0.1", port: options.port))
        let chat = ChatClient(connection: client)
        let room = options.room
        chat.onStateChange = { [unowned self] chat, state in
            switch state {
            case .online:
                chat.join(room: room) { [unowned self] result in
                    switch result {
                    case .success: joined += 1
                    case .failure(.refused(let code)): failures.append("sub\(index) join refused: \(code)")
                    case .failure(let error): failures.append("sub\(index) join failed: \(error)")
                    }
                }
            case .closed(let reason):
                failures.append("sub\(index) closed: \(reason)")
            default:
                break
            }
        }
        client.onDisconnect = { [unowned self] _, reason in
            // A login refused for now (the node admits a burst of logins from one address a few at a
            // time, with a retry time) is retried by the client itself: part of the ramp, not a failure.
            if case .loginRefused(let code, _) = reason, [.rateLimited, .tooManyConnections].contains(code) {
                loginRetries += 1
                return
            }
            failures.append("sub\(index) disconnected: \(reason)")
        }
        chat.onMessage = { [unowned self] _, message in
            let now = bs_now_ns()
            guard let sentAt = Payload.sentAt(message.text) else {
                unreadable += 1
                return
            }
            latencies.append(now &- sentAt)
            receivedBy[index] += 1
            lastDelivery = now
            if latencies.count >= expected { loop.stop() }
        }
        clients.append(chat)
        client.start()
    }
}
