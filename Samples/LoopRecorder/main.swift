import ArgumentParser
import Glibc
import RunLoopKit

/// Records a few seconds of a busy loop and writes the recording as a Chrome trace (open it in
/// ui.perfetto.dev or chrome://tracing) and as a plain-text timeline.
@main
struct LoopRecorder: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "loop-record",
        abstract: "Records a busy run loop and writes <output>.json (Chrome trace events) and <output>.txt (timeline)."
    )

    @Option(help: "How long to record, in seconds.")
    var seconds: Double = 3

    @Option(help: "Output path without extension (the default's .trace.json/.trace.txt are git-ignored).")
    var output: String = "loop-record.trace"

    @Option(help: "Report iterations busy for longer than this many milliseconds.")
    var stallMilliseconds: Int = 20

    mutating func run() throws {
        let loop = RunLoop.current
        let recorder = ActivityRecorder()
        recorder.attach(to: loop, modes: [.common, busyModal])
        var stalls: [RunLoopStallDetector.Stall] = []
        let detector = RunLoopStallDetector(threshold: .milliseconds(stallMilliseconds), logger: nil) { stalls.append($0) }
        detector.attach(to: loop, modes: [.common, busyModal])

        let workload = try BusyWorkload(loop: loop)
        // stopAll: the end may come while the workload's modal run is in progress.
        loop.add(
            RunLoopTimer(after: .milliseconds(Int64(seconds * 1000)), label: "end of recording") { _ in
                loop.stopAll()
            }, forMode: .common)
        print("loop-record: recording \(seconds) s of a busy loop…")
        try loop.run()
        detector.detach()
        recorder.detach()
        workload.tearDown()

        try write(recorder.chromeTraceJSON(), to: output + ".json")
        try write(recorder.timeline(), to: output + ".txt")
        let iterations = recorder.iterations
        print(
            "loop-record: \(recorder.events.count) events in \(iterations.count) iterations, "
                + "\(iterations.filter(\.slept).count) of them slept")
        let shown = min(stalls.count, 5)
        let which = shown < stalls.count ? " (the first \(shown))" : ""
        print(
            "loop-record: \(stalls.count) \(stalls.count == 1 ? "stall" : "stalls") over \(stallMilliseconds) ms\(stalls.isEmpty ? "" : which + ":")")
        for stall in stalls.prefix(shown) { print("  \(stall)") }
        print("loop-record: wrote \(output).json (open in ui.perfetto.dev) and \(output).txt")
    }

    private func write(_ text: String, to path: String) throws {
        guard let file = fopen(path, "w") else { throw ValidationError("cannot write \(path): \(String(cString: strerror(errno)))") }
        defer { fclose(file) }
        fputs(text, file)
    }
}

private let busyModal = RunLoop.Mode("Modal")

/// Timers at two rates, a custom source fed by one of them, a socket pair read by a port source, a
/// nested modal run now and then, and a once-a-second hiccup the stall detector should catch.
private final class BusyWorkload {
    let loop: RunLoop
    let pair: (Int32, Int32)
    var items: [AnyObject] = []

    init(loop: RunLoop) throws {
        self.loop = loop
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else {
            throw ValidationError("socketpair failed")
        }
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        pair = (fds[0], fds[1])

        let worker = RunLoopSource(order: 1, label: "worker") { _ in spin(.microseconds(200)) }
        loop.add(worker, forMode: .common)
        let fast = RunLoopTimer(after: .milliseconds(5), repeating: .milliseconds(5), label: "fast tick") { _ in worker.signal() }
        let slow = RunLoopTimer(after: .milliseconds(50), repeating: .milliseconds(50), label: "tick") { [pair] _ in
            _ = write(pair.0, "ping\n", 5)
        }
        let reader = try RunLoopPortSource(fileDescriptor: pair.1, label: "socket reader") { source, _ in
            var buffer = [UInt8](repeating: 0, count: 256)
            _ = read(source.fileDescriptor, &buffer, buffer.count)
        }
        try loop.add(reader, forMode: .common)
        let modal = RunLoopTimer(after: .milliseconds(700), repeating: .milliseconds(700), label: "modal runner") { _ in
            _ = try? loop.run(busyModal, timeout: .milliseconds(100))
        }
        let hiccup = RunLoopTimer(after: .seconds(1), repeating: .seconds(1), label: "hiccup") { _ in spin(.milliseconds(30)) }
        loop.add(fast, forMode: .common)
        loop.add(slow, forMode: .common)
        loop.add(modal, forMode: .default)
        loop.add(hiccup, forMode: .common)
        loop.addCommonMode(busyModal)
        items = [worker, fast, slow, reader, modal, hiccup]
    }

    func tearDown() {
        for case let source as RunLoopSourceBase in items { source.invalidate() }
        for case let timer as RunLoopTimer in items { timer.invalidate() }
        close(pair.0)
        close(pair.1)
    }
}

/// Burns CPU for `duration`: the kind of work that makes a loop late.
private func spin(_ duration: Duration) {
    let end = LoopClock.system.now + duration
    while LoopClock.system.now < end {}
}
