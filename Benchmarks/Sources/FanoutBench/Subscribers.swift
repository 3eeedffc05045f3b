import BenchSupport
import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopNet

/// The N receiving clients, all on the calling thread's loop: each logs in as a user of its own (a
/// room message has one inbox row per recipient user, as in a real room), joins the room, and records
/// for every message it receives the delivery latency (now − the send time in its text). They log in
/// `loginsInFlight` at a time (the node's limit per address), each opened when an earlier one is online.
final class Subscribers {
    let options: Options
    let loop = RunLoop.current
    private var clients: [ChatClient] = []
    /// Subscribers whose login was answered `ok` (counted once, not again after a reconnect).
    private var loggedIn = 0
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

    /// Opens the first clients; they, and the ones opened as they come online, log in and join as the
    /// loop runs.
    func connect() { openWhileLoginsAllow() }

    private func openWhileLoginsAllow() {
        while clients.count < options.subscribers, clients.count - loggedIn < options.loginsInFlight {
            open(clients.count)
        }
    }

    private func open(_ index: Int) {
        var configuration = IMClientConfiguration(user: "sub\(index)", password: "fanout")
        configuration.loginTimeout = .seconds(Int64(options.readyTimeout))
        let client = IMClient(
            configuration: configuration, loop: loop,
            connector: TCPFrameLink.connector(host: "127.0.0.1", port: options.port))
        let chat = ChatClient(connection: client)
        let room = options.room
        var wasOnline = false
        chat.onStateChange = { [unowned self] chat, state in
            switch state {
            case .online:
                if !wasOnline {
                    wasOnline = true
                    loggedIn += 1
                    openWhileLoginsAllow()
                }
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
            // A login refused for now (rateLimited: say the node's login queue looked too long; or
            // tooManyConnections) is retried by the client itself after the refusal's retry time: part of
            // the ramp, not a failure, and counted.
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
