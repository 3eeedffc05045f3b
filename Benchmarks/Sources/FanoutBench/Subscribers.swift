import BenchSupport
import ChatBenchKit
import RunLoopChat
import RunLoopKit

/// The N receiving clients, all on the calling thread's loop: each logs in as a user of its own (a
/// room message has one inbox row per recipient user, as in a real room), joins the room, and records
/// for every message it receives the delivery latency (now − the send time in its text). They log in
/// `loginsInFlight` at a time (the node's limit per address), each opened when an earlier one is online.
final class Subscribers {
    let options: Options
    let crowd: Crowd
    var loop: RunLoop { crowd.loop }
    /// Subscribers whose JOIN was answered `ok`.
    private(set) var joined = 0
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
        crowd = Crowd(ports: [options.port], loginsInFlight: options.loginsInFlight, password: "fanout", countsHeartbeats: false) {
            configuration in
            configuration.loginTimeout = .seconds(Int64(options.readyTimeout))
        }
        receivedBy = Array(repeating: 0, count: options.subscribers)
        latencies.reserveCapacity(options.subscribers * options.messages)
        for index in 0..<options.subscribers { crowd.add(user: "sub\(index)", node: 0) }
        crowd.onFirstOnline = { [unowned self] index, chat in
            chat.join(room: options.room) { [unowned self] result in
                switch result {
                case .success: joined += 1
                case .failure(let error): crowd.note("sub\(index) join: \(error)")
                }
            }
        }
        crowd.onMessage = { [unowned self] index, message in received(message, by: index) }
    }

    var received: Int { latencies.count }
    /// Logins the node refused for now during the ramp (each retried by its client).
    var loginRetries: Int { crowd.loginRetries }
    /// Why a client failed to come online or to join (a failed run reports them).
    var failures: [String] { crowd.failures }
    /// Incoming duplicates the clients' de-duplication dropped (a resend the server made).
    var duplicatesDropped: Int { crowd.duplicatesDropped }

    /// Opens the first clients; they, and the ones opened as they come online, log in and join as the
    /// loop runs.
    func connect() { crowd.start() }

    private func received(_ message: ChatMessage, by index: Int) {
        let now = bs_now_ns()
        guard let sentAt = Payload.sentAt(message.text) else { return unreadable += 1 }
        latencies.append(now &- sentAt)
        receivedBy[index] += 1
        lastDelivery = now
        if latencies.count >= expected { loop.stop() }
    }
}
