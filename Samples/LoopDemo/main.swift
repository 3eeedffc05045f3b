import ArgumentParser
import Dispatch
import Glibc
import RunLoopKit

/// A tour of the loop at work on the main thread:
/// - a heartbeat timer in the common modes keeps firing while the loop runs a "modal" mode;
/// - a port source reads lines written to a socket pair (default mode only, so it waits out the modal runs);
/// - observers count every activity, printed once a second (or each one with --trace);
/// - SIGINT and SIGTERM arrive as sources and stop the loop cleanly;
/// - a block on `DispatchQueue.main` and a main-actor task run on the loop, as under CFRunLoop.
@main
struct LoopDemo: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "loop-demo",
        abstract: "Shows RunLoopKit's run loop at work: common-mode timers, a socket port source, observers, signals."
    )

    @Option(help: "Stop after this many seconds (0: run until SIGINT or SIGTERM).")
    var seconds: Double = 6

    @Option(help: "Heartbeat interval in milliseconds.")
    var heartbeatMilliseconds: Int = 500

    @Flag(help: "Print every observer activity instead of a summary per second.")
    var trace = false

    mutating func run() throws {
        let demo = try Demo(heartbeat: .milliseconds(heartbeatMilliseconds), trace: trace)
        let outcome = try demo.run(seconds: seconds)
        print("loop-demo: \(outcome)")
    }
}

private let modal = RunLoop.Mode("Modal")

private final class Demo {
    let loop = RunLoop.current
    let writeEnd: Int32
    let readEnd: Int32
    var items: [AnyObject] = []
    var activityCounts: [String: Int] = [:]
    var heartbeats = 0
    var linesSent = 0
    var linesReceived = 0
    var stopReason: String?
    let trace: Bool
    let heartbeat: Duration

    init(heartbeat: Duration, trace: Bool) throws {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else {
            throw ValidationError("socketpair failed: \(String(cString: strerror(errno)))")
        }
        writeEnd = fds[0]
        readEnd = fds[1]
        _ = fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK)
        self.trace = trace
        self.heartbeat = heartbeat
    }

    deinit {
        close(writeEnd)
    }

    func run(seconds: Double) throws -> String {
        print("loop-demo: sleeping in libevent's \(loop.backendMethod) backend; Ctrl-C or SIGTERM stops it")
        loop.addCommonMode(modal)
        try installSignals()
        installObservers()
        installHeartbeat()
        try installSocketReader()
        installProducer()
        installModalRuns()
        installMainQueueWork()
        if seconds > 0 {
            loop.add(
                RunLoopTimer(after: .milliseconds(Int64(seconds * 1000)), label: "time limit") { [unowned self] _ in
                    quit(because: "time limit reached")
                }, forMode: .common)
        }
        try loop.run()
        for case let item as RunLoopSourceBase in items { item.invalidate() }
        for case let item as RunLoopTimer in items { item.invalidate() }
        for case let item as RunLoopObserver in items { item.invalidate() }
        // Nothing of the demo's is left, but the main loop's common modes still watch the main
        // dispatch queue (as CFRunLoop's do): the default mode is not empty, and a run of it waits
        // out its timeout instead of returning finished.
        let emptied = try loop.run(.default, timeout: .milliseconds(20))
        let waiting = linesSent - linesReceived
        let unread = waiting > 0 ? " (\(waiting) still in the socket: the reader runs in the default mode only)" : ""
        return
            "\(stopReason ?? "nothing left to run"); \(heartbeats) heartbeats, \(linesReceived)/\(linesSent) lines received\(unread); "
            + "the default mode with nothing of ours in it: \(emptied); stopped cleanly"
    }

    /// `stop()` would end only the innermost activation — the modal run, if the signal lands during
    /// one — so the demo stops them all.
    private func quit(because reason: String) {
        stopReason = reason
        loop.stopAll()
    }

    private func installSignals() throws {
        for (signo, name) in [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")] {
            let source = try RunLoopSignalSource(signal: signo) { [unowned self] _, _ in
                print("\nloop-demo: \(name) received, stopping")
                quit(because: "stopped by \(name)")
            }
            // Common modes: a signal must stop the daemon whatever mode the loop is in.
            try loop.add(source, forMode: .common)
            items.append(source)
        }
    }

    private func installObservers() {
        let observer = RunLoopObserver(activities: .allActivities, label: "activity counter") { [unowned self] _, activity in
            if trace {
                print("  [\(loop.currentMode?.rawValue ?? "-")] \(activity)")
            } else {
                activityCounts[activity.description, default: 0] += 1
            }
        }
        loop.add(observer, forMode: .common)
        items.append(observer)
        guard !trace else { return }
        let summary = RunLoopTimer(after: .seconds(1), repeating: .seconds(1), label: "summary") { [unowned self] _ in
            let order = ["entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit"]
            let line = order.map { "\($0)=\(activityCounts[$0, default: 0])" }.joined(separator: " ")
            print("  activity in the last second: \(line)")
            activityCounts.removeAll()
        }
        loop.add(summary, forMode: .common)
        items.append(summary)
    }

    private func installHeartbeat() {
        let timer = RunLoopTimer(after: heartbeat, repeating: heartbeat, tolerance: .milliseconds(10), label: "heartbeat") {
            [unowned self] _ in
            heartbeats += 1
            print("heartbeat #\(heartbeats) in mode \(loop.currentMode?.rawValue ?? "-")")
        }
        // Common modes: the heartbeat keeps beating while the loop runs the modal mode.
        loop.add(timer, forMode: .common)
        items.append(timer)
    }

    private func installSocketReader() throws {
        let reader = try RunLoopPortSource(fileDescriptor: readEnd, label: "socket reader", closesDescriptorOnInvalidate: true) {
            [unowned self] source, _ in
            var buffer = [UInt8](repeating: 0, count: 512)
            let count = read(source.fileDescriptor, &buffer, buffer.count)
            guard count > 0 else { return }
            let text = String(decoding: buffer[0..<count], as: UTF8.self)
            for line in text.split(separator: "\n") {
                linesReceived += 1
                print("socket: received \"\(line)\" in mode \(loop.currentMode?.rawValue ?? "-")")
            }
        }
        // Default mode only: while the modal mode runs, data waits in the socket until it returns.
        try loop.add(reader, forMode: .default)
        items.append(reader)
    }

    private func installProducer() {
        let producer = RunLoopTimer(after: .milliseconds(700), repeating: .milliseconds(700), label: "producer") {
            [unowned self] _ in
            linesSent += 1
            let line = "line \(linesSent)\n"
            _ = line.withCString { write(writeEnd, $0, strlen($0)) }
        }
        loop.add(producer, forMode: .common)
        items.append(producer)
    }

    /// Work handed to the main thread as Dispatch-era and Swift-concurrency code hands it: a block on
    /// `DispatchQueue.main` from another thread, and a task on the main actor. The main loop services
    /// the main queue in its common modes, so both run here, between the loop's other callouts.
    private func installMainQueueWork() {
        DispatchQueue.global().async {
            DispatchQueue.main.async {
                let loop = RunLoop.current
                print("main queue: a block from another thread ran on the main loop: \(loop.isMain), mode \(loop.currentMode?.rawValue ?? "-")")
            }
        }
        Task { @MainActor in
            let loop = RunLoop.current
            print("main actor: a task ran on the main loop: \(loop.isMain), mode \(loop.currentMode?.rawValue ?? "-")")
        }
    }

    private func installModalRuns() {
        let modalRunner = RunLoopTimer(after: .seconds(2), repeating: .milliseconds(2500), label: "modal") { [unowned self] _ in
            print("modal: running mode \(modal) for 1 s (heartbeat goes on, the socket waits)")
            let result = try? loop.run(modal, timeout: .seconds(1))
            print("modal: back in \(loop.currentMode?.rawValue ?? "-") (\(result.map { "\($0)" } ?? "refused"))")
        }
        loop.add(modalRunner, forMode: .default)
        items.append(modalRunner)
    }
}
