import BenchSupport
import Dispatch
import RunLoopChat
import RunLoopIM
import RunLoopIMCore
import RunLoopKit
import RunLoopNet

/// The server side: an `IMServer` (in-memory store, default settings) on the calling thread's loop.
/// Its figures come from that thread alone — its CPU clock — and from the process's RSS, which is
/// the server's own when the clients run in another process.
final class ServerRole {
    struct Report {
        var connections = 0
        var rssBeforeAccepting = 0
        var heapBeforeAccepting = 0
        var rssAllOnline = 0
        var rssAfterWindow = 0
        var threadCPU: UInt64 = 0
        var processCPU: UInt64 = 0
        var window: UInt64 = 0
        var sessionsEnded = 0
        var online = 0
    }

    let options: Options
    let loop = RunLoop.current
    let server: IMServer
    private var online = 0
    private var ended = 0
    private(set) var report = Report()

    /// Creates the server and listens; nothing is accepted until ``run()``.
    init(options: Options) throws(NetError) {
        self.options = options
        if options.scryptCost > 0 {
            var settings = IMServer.Settings()
            // One address (loopback) logs everyone in: its limits are the batch's, not a flood's.
            settings.logins.pendingChecksPerAddress = options.batch
            settings.logins.maximumQueueWait = options.readyTimeout
            server = IMServer(store: InMemoryIMStore(), settings: settings)
            server.applicationHandler = ChatService()
            server.authenticator = Self.scryptAuthenticator(cost: options.scryptCost, loop: loop)
        } else {
            server = IMServer(store: InMemoryIMStore())
        }
        server.onPresenceChange = { [unowned self] _, _, isOnline in online += isOnline ? 1 : -1 }
        server.onSessionEnd = { [unowned self] _, _, _ in ended += 1 }
        try server.listen(host: "127.0.0.1", port: options.port)
        report.rssBeforeAccepting = Measure.residentBytes()
        report.heapBeforeAccepting = Measure.heapInUseBytes()
    }

    var port: UInt16 { server.port }

    /// One scrypt check per login on two worker threads (the chat node's `PasswordWorkers` on this
    /// 2-core machine), answered on the loop: every client's password is "x", hashed once here.
    private static func scryptAuthenticator(cost: Int, loop: RunLoop) -> (IMLoginAttempt, @escaping (IMLoginVerdict) -> Void) -> Void {
        let stored = PasswordHasher(rounds: 1 << cost).hash("x")
        let workers = [DispatchQueue(label: "im-idle.scrypt.0"), DispatchQueue(label: "im-idle.scrypt.1")]
        var next = 0
        return { attempt, verdict in
            let password = attempt.password
            let answer = LoopBound(verdict, loop: loop)
            next += 1
            workers[next % workers.count].async {
                let ok = PasswordHasher.verify(password, against: stored)
                loop.perform(inModes: [.common]) {
                    answer.value(ok ? .accepted : .refused(.authenticationFailed, reason: "wrong password"))
                }
            }
        }
    }

    /// Runs the loop until every expected client is online, measures for the window, then returns.
    /// - Returns: `false` if they were not all online within the ready timeout.
    func run() -> Bool {
        let readyBy = loop.now + options.readyTimeout
        var windowStart: (wall: UInt64, thread: UInt64, process: UInt64, ended: Int)?
        var finished = false
        // The check runs every 100 ms: a cost the window pays too (10 cheap callouts per second).
        let check = RunLoopTimer(after: .milliseconds(100), repeating: .milliseconds(100)) { [unowned self] timer in
            if let start = windowStart {
                guard bs_now_ns() - start.wall >= UInt64(options.seconds) * 1_000_000_000 else { return }
                report.threadCPU = Measure.threadCPUNanoseconds() - start.thread
                report.processCPU = Measure.processCPUNanoseconds() - start.process
                report.window = bs_now_ns() - start.wall
                report.rssAfterWindow = Measure.residentBytes()
                report.sessionsEnded = ended - start.ended
                report.online = online
                finished = true
                timer.invalidate()
                loop.stop()
            } else if online >= options.count {
                report.connections = online
                report.rssAllOnline = Measure.residentBytes()
                windowStart = (bs_now_ns(), Measure.threadCPUNanoseconds(), Measure.processCPUNanoseconds(), ended)
            } else if loop.now >= readyBy {
                report.connections = online
                timer.invalidate()
                loop.stop()
            }
        }
        loop.add(check, forMode: .default)
        // The check invalidates itself when the window ends or the ready timeout passes.
        while check.isValid { _ = try? loop.run(.default, timeout: .seconds(1)) }
        return finished
    }

    /// Keeps serving until `done()` says so or `limit` has passed.
    func serve(until done: () -> Bool, limit: Duration) {
        let deadline = loop.now + limit
        while loop.now < deadline, !done() {
            _ = try? loop.run(.default, timeout: .milliseconds(100))
        }
    }
}
