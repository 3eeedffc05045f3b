import ChatNodeKit
import Glibc
import Logging
import RunLoopKit
import RunLoopTesting
import Testing

import class Foundation.Process

/// What the node tells systemd (`Type=notify`): the datagrams, when the watchdog pings, and the real
/// `chat-node serve` talking to a fake `NOTIFY_SOCKET`.
@Suite("systemd notifications")
struct ServiceNotifierTests {
    @Test("each notification's datagram: fields one a line, a status kept on its line")
    func datagrams() {
        #expect(ServiceNotification.ready(status: nil).datagram == "READY=1")
        #expect(ServiceNotification.ready(status: "serving").datagram == "READY=1\nSTATUS=serving")
        #expect(ServiceNotification.status("two\nlines").datagram == "STATUS=two lines")
        #expect(ServiceNotification.stopping(status: "bye").datagram == "STOPPING=1\nSTATUS=bye")
        #expect(ServiceNotification.reloading(monotonicMicroseconds: 42).datagram == "RELOADING=1\nMONOTONIC_USEC=42")
        #expect(ServiceNotification.watchdog.datagram == "WATCHDOG=1")
    }

    @Test("the watchdog pings at half WATCHDOG_USEC, not at all for another pid or without a timeout")
    func watchdogInterval() {
        #expect(ServiceWatchdog.pingInterval(microseconds: "30000000", pid: nil, ourPID: 7) == .seconds(15))
        #expect(ServiceWatchdog.pingInterval(microseconds: "200000", pid: "7", ourPID: 7) == .milliseconds(100))
        #expect(ServiceWatchdog.pingInterval(microseconds: "200000", pid: "8", ourPID: 7) == nil)
        #expect(ServiceWatchdog.pingInterval(microseconds: nil, pid: nil, ourPID: 7) == nil)
        #expect(ServiceWatchdog.pingInterval(microseconds: "0", pid: nil, ourPID: 7) == nil)
        #expect(ServiceWatchdog.pingInterval(microseconds: "soon", pid: nil, ourPID: 7) == nil)
    }

    @Test("no NOTIFY_SOCKET: no notifier; a name that is no unix address: none either")
    func noSocket() async throws {
        try await onLoopThread {
            let loop = RunLoopKit.RunLoop.current
            let logger = Logger(label: "test")
            #expect(ServiceNotifier.fromEnvironment({ _ in nil }, loop: loop, logger: logger) == nil)
            #expect(ServiceNotifier.fromEnvironment({ $0 == "NOTIFY_SOCKET" ? "vsock-ish" : nil }, loop: loop, logger: logger) == nil)
            #expect(ServiceNotifier(socketName: "@", logger: logger) == nil)
            #expect(ServiceNotifier(socketName: "/" + String(repeating: "x", count: 200), logger: logger) == nil)
        }
    }

    @Test("reloading() sends RELOADING=1 with the monotonic time, reloaded() READY=1")
    func reload() async throws {
        let socket = try FakeNotifySocket(abstract: false)
        let name = socket.name
        let (before, after) = try await onLoopThread { () throws -> (UInt64, UInt64) in
            let notifier = try #require(ServiceNotifier(socketName: name, logger: Logger(label: "test")))
            let before = monotonicMicroseconds()
            notifier.reloading()
            let after = monotonicMicroseconds()
            notifier.reloaded(status: "reloaded")
            return (before, after)
        }
        let reloading = try #require(socket.next(withinMilliseconds: 1000))
        let fields = reloading.split(separator: "\n")
        #expect(fields.first == "RELOADING=1", "\(reloading)")
        let stamp = try #require(fields.last.flatMap { UInt64($0.dropFirst("MONOTONIC_USEC=".count)) }, "\(reloading)")
        #expect((before...after).contains(stamp))
        #expect(socket.next(withinMilliseconds: 1000) == "READY=1\nSTATUS=reloaded")
    }

    @Test("the watchdog pings from the loop's timer: none while the loop does not run")
    func watchdogNeedsTheLoop() async throws {
        let socket = try FakeNotifySocket(abstract: true)
        let name = socket.name
        try await onLoopThread {
            let loop = RunLoopKit.RunLoop.current
            let variables = ["NOTIFY_SOCKET": name, "WATCHDOG_USEC": "40000", "WATCHDOG_PID": "\(getpid())"]
            let notifier = try #require(ServiceNotifier.fromEnvironment({ variables[$0] }, loop: loop, logger: Logger(label: "test")))
            // The first ping goes out at once, then one each 20 ms while the loop runs.
            try loop.run(.default, timeout: .milliseconds(200))
            let running = socket.drain(forMilliseconds: 50)
            #expect(running.count >= 4 && running.allSatisfy { $0 == "WATCHDOG=1" }, "\(running)")
            // A stuck loop: its thread busy elsewhere.
            let stuck = socket.drain(forMilliseconds: 150)
            #expect(stuck.isEmpty, "\(stuck)")
            try loop.run(.default, timeout: .milliseconds(60))
            #expect(!socket.drain(forMilliseconds: 30).isEmpty, "pings again once the loop runs")
            withExtendedLifetime(notifier) {}
        }
    }

    @Test(
        "chat-node serve: READY=1 once it listens, RELOADING=1 then READY=1 on SIGHUP, STOPPING=1 on SIGTERM, to a socket path and to an abstract one"
    )
    func readyAndStopping() throws {
        for abstract in [false, true] {
            let socket = try FakeNotifySocket(abstract: abstract)
            let path = temporaryDatabase()
            defer { removeDatabase(path) }
            let node = try ServerProcess(executable: "/usr/bin/env", ["NOTIFY_SOCKET=\(socket.name)"] + serve(path))
            defer { node.kill() }
            let ready = try #require(socket.messages(until: { $0.hasPrefix("READY=1") }), "no READY=1 on \(socket.name)")
            #expect(ready == ["READY=1\nSTATUS=serving IM on 127.0.0.1:\(node.port)"], "nothing before READY, and the port")
            // SIGHUP (systemctl reload): RELOADING=1 with the time, then READY=1 once the reload is over.
            kill(node.process.processIdentifier, SIGHUP)
            let reload = try #require(socket.messages(until: { $0.hasPrefix("READY=1") }), "no READY=1 after SIGHUP")
            #expect(reload.count == 2 && reload[0].hasPrefix("RELOADING=1\nMONOTONIC_USEC="), "\(reload)")
            #expect(reload.last == "READY=1\nSTATUS=serving IM on 127.0.0.1:\(node.port), settings reloaded")
            node.signal(SIGTERM)
            #expect(node.exit == .exited(0))
            let stopping = try #require(socket.messages(until: { $0.hasPrefix("STOPPING=1") }))
            #expect(stopping == ["STOPPING=1\nSTATUS=stopping on signal \(SIGTERM): closing 0 sessions"])
            #expect(socket.next(withinMilliseconds: 0) == nil)
        }
    }

    @Test("chat-node serve pings the watchdog at half WATCHDOG_USEC; not when WATCHDOG_PID is another's")
    func serveWatchdog() throws {
        let socket = try FakeNotifySocket(abstract: false)
        let path = temporaryDatabase()
        defer { removeDatabase(path) }
        let node = try ServerProcess(executable: "/usr/bin/env", ["NOTIFY_SOCKET=\(socket.name)", "WATCHDOG_USEC=100000"] + serve(path))
        defer { node.kill() }
        #expect(try #require(socket.messages(until: { $0.hasPrefix("READY=1") })).contains("WATCHDOG=1"), "the first ping at start")
        while socket.next(withinMilliseconds: 0) != nil {}  // what came while the test was not reading
        // A ping each 50 ms: 10 in 500 ms, one more by phase; fewer when the machine is loaded, never none.
        let pings = socket.drain(forMilliseconds: 500)
        #expect(pings.allSatisfy { $0 == "WATCHDOG=1" } && (2...11).contains(pings.count), "\(pings)")
        node.signal(SIGTERM)
        while socket.next(withinMilliseconds: 0) != nil {}  // what it said until it ended

        let other = try ServerProcess(
            executable: "/usr/bin/env", ["NOTIFY_SOCKET=\(socket.name)", "WATCHDOG_USEC=100000", "WATCHDOG_PID=1"] + serve(path))
        defer { other.kill() }
        #expect(try #require(socket.messages(until: { $0.hasPrefix("READY=1") })).count == 1)
        #expect(socket.drain(forMilliseconds: 250) == [])
    }

    private func serve(_ path: String) -> [String] {
        [ChatNodeBinary.path, "serve", "--port", "0", "--no-http", "--database", path, "--scrypt-cost", "4", "--log-level", "error"]
    }
}

private func monotonicMicroseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
}
