import ArgumentParser
import ChatNodeKit
import Glibc
import Synchronization

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A node and three clients chat while the node crashes and a link goes silent; ends with a count (about 13 s).",
        discussion: """
            With --cluster: a throw-away PostgreSQL and Redis, three `chat-node serve` processes and six clients; \
            a node is killed, Redis restarts, PostgreSQL stops for a while; ends with the same count (about 25 s). \
            Needs PostgreSQL and redis-server installed (Scripts/setup.sh --cluster).
            """)

    @Option(help: "Write the loops' activity during the demo as an HTML timeline to this file (and as Chrome-trace JSON beside it, NAME.trace.json).")
    var timeline: String = "chat-node-demo.html"

    @Flag(help: "Do not write the timeline.")
    var noTimeline = false

    @Flag(help: "Run the cluster demo: PostgreSQL, Redis and three node processes (no timeline).")
    var cluster = false

    func run() throws {
        let output: @Sendable (String) -> Void = { line in
            print(line)
            fflush(nil)
        }
        let isClean: Bool
        let report: String
        if cluster {
            var options = ClusterDemo.Options(nodeExecutable: try ownExecutable(), output: output)
            options.isInterrupted = { interruption.load(ordering: .relaxed) }
            catchInterruptions()
            do {
                let summary = try ClusterDemo.run(options)
                (isClean, report) = (summary.isClean, "\(summary)")
            } catch ChatDemo.Failure.interrupted {
                print("interrupted: everything the demo started is stopped and removed")
                throw ExitCode(130)
            }
        } else {
            let summary = try ChatDemo.run(ChatDemo.Options(timelinePath: noTimeline ? nil : timeline, output: output))
            (isClean, report) = (summary.isClean, "\(summary)")
        }
        print("")
        print("== Summary")
        print(report)
        if !isClean { throw ExitCode(1) }
    }

    /// This program's own file, which the cluster's nodes run.
    private func ownExecutable() throws -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { throw ValidationError("cannot find the chat-node executable (/proc/self/exe)") }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Set by SIGINT or SIGTERM during the cluster demo, which then stops at its next wait and cleans up:
/// the PostgreSQL server it started runs in a session of its own and would outlive a plain Ctrl-C.
private let interruption = Atomic<Bool>(false)

private func catchInterruptions() {
    for number in [SIGINT, SIGTERM] {
        signal(number) { _ in interruption.store(true, ordering: .relaxed) }
    }
}
