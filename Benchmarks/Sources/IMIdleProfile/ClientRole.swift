import BenchSupport
import ChatBenchKit
import RunLoopIM
import RunLoopIMCore
import RunLoopKit

/// The client side: `count` `IMClient`s on the calling thread's loop, opened a batch at a time (so
/// the listener's backlog never overflows into SYN retries), each heartbeating every
/// `options.heartbeat` while idle. Counts, over the window, the heartbeats sent and answered.
final class ClientRole {
    struct Report {
        var online = 0
        var heartbeatsSent = 0
        var heartbeatsAnswered = 0
        var disconnects = 0
        var window: UInt64 = 0
        var rampSeconds = 0.0
    }

    let options: Options
    let loop = RunLoop.current
    let counters = HeartbeatCounters()
    private var clients: [IMClient] = []
    private var isOnline: [Bool] = []
    private var online = 0
    private var disconnects = 0
    private(set) var report = Report()

    init(options: Options) {
        self.options = options
    }

    /// Connects everyone, waits until all are online, measures for the window, then closes them.
    /// - Returns: `false` if they were not all online within the ready timeout.
    func run(port: UInt16) -> Bool {
        let started = bs_now_ns()
        let readyBy = loop.now + options.readyTimeout
        var window: (wall: UInt64, sent: Int, answered: Int, disconnects: Int)?
        var finished = false
        let ramp = RunLoopTimer(after: .zero, repeating: .milliseconds(5)) { [unowned self] timer in
            if let start = window {
                guard bs_now_ns() - start.wall >= UInt64(options.seconds) * 1_000_000_000 else { return }
                report.window = bs_now_ns() - start.wall
                report.heartbeatsSent = counters.sent - start.sent
                report.heartbeatsAnswered = counters.answered - start.answered
                report.disconnects = disconnects - start.disconnects
                report.online = online
                finished = true
                timer.invalidate()
            } else if online >= options.count {
                report.rampSeconds = Double(bs_now_ns() - started) / 1e9
                window = (bs_now_ns(), counters.sent, counters.answered, disconnects)
            } else if loop.now >= readyBy {
                report.online = online
                timer.invalidate()
            } else {
                // At most `batch` connections being set up at once.
                while clients.count < options.count, clients.count - online < options.batch { open(port: port) }
            }
        }
        loop.add(ramp, forMode: .default)
        while ramp.isValid { _ = try? loop.run(.default, timeout: .seconds(1)) }
        return finished
    }

    /// Closes every client at once (no logout: the process is about to end).
    func abandon() {
        clients = []
    }

    private func open(port: UInt16) {
        let index = clients.count
        var configuration = IMClientConfiguration(user: "u\(index)", password: "x")
        configuration.heartbeat = .fixed(options.heartbeat)
        configuration.answerTimeout = options.answerTimeout
        configuration.loginTimeout = options.readyTimeout
        let tcp = TCPFrameLink.connector(host: "127.0.0.1", port: port)
        let counters = counters
        let client = IMClient(
            configuration: configuration, loop: loop,
            connector: CountingLink.connector(tcp, counters: counters))
        client.onStateChange = { [unowned self] _, state in
            let now = state == .online
            guard now != isOnline[index] else { return }
            isOnline[index] = now
            online += now ? 1 : -1
        }
        client.onDisconnect = { [unowned self] _, _ in disconnects += 1 }
        clients.append(client)
        isOnline.append(false)
        client.start()
    }
}
