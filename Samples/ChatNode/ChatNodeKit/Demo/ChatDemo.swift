import Glibc
import Logging
import RunLoopIM
import RunLoopIMCore
import RunLoopKit

/// `chat-node demo`: a node and three clients, each on a loop of its own, chatting while the network
/// misbehaves — the node crashes and comes back, one client's link goes silent — so a person sees the
/// heartbeat and ping-pong notice, the backoff retry, resends, offline delivery, and at the end a
/// count that says nothing was lost or duplicated.
public enum ChatDemo {
    public struct Options: Sendable {
        /// Where to write the loops' activity as a self-contained HTML timeline (nil: none); the same
        /// run goes as Chrome-trace JSON to ``ChatDemo/tracePath(besideTimeline:)``.
        public var timelinePath: String?
        /// Where the narration goes (a line at a time, from any thread).
        public var output: @Sendable (String) -> Void
        /// How long the node stays down after its crash.
        public var downtime: Duration = .seconds(3)
        /// How long carol's link stays silent.
        public var silence: Duration = .seconds(7)
        /// How long one step may wait for what it expects (everyone online, every message settled)
        /// before the demo gives up as stuck. Only a hang guard: a test under the thread sanitizer on a
        /// loaded machine raises it.
        public var stepLimit: Duration = .seconds(20)

        public init(timelinePath: String? = nil, output: @escaping @Sendable (String) -> Void = { print($0) }) {
            self.timelinePath = timelinePath
            self.output = output
        }
    }

    /// What the demo counted.
    public struct Summary: Sendable, CustomStringConvertible {
        /// What became of each message.
        public var messages = DeliveryTally()
        public var sent: Int { messages.sent }
        public var delivered: Int { messages.acknowledged }
        public var failed: Int { messages.failed }
        public var expectedDeliveries: Int { messages.expectedDeliveries }
        public var receivedDeliveries: Int { messages.receivedDeliveries }
        public var lost: Int { messages.lost }
        public var duplicatesShown: Int { messages.duplicatesShown }
        public var reconnects: [String: Int] = [:]
        public var crashNoticed: [String: Duration] = [:]
        public var backAfterRestart: [String: Duration] = [:]
        public var silenceNoticed: Duration?
        public var backAfterSilence: Duration?
        public var duration: Duration = .zero

        /// Why the silence is noticed when it is: carol writes into it, and her message's answer is
        /// due within the answer timeout; a client with nothing to send notices at its next heartbeat's.
        static var silenceBound: String {
            let heartbeat = DemoParticipant.heartbeat
            let timeout = DemoParticipant.answerTimeout
            return "her message's answer was due within the answer timeout, \(formatDuration(timeout)); "
                + "idle, at most heartbeat \(formatDuration(heartbeat)) + \(formatDuration(timeout)) = \(formatDuration(heartbeat + timeout))"
        }

        /// Every message delivered exactly once or reported failed; none left hanging.
        public var isClean: Bool { messages.isClean }

        public var description: String {
            func seconds(_ value: Duration?) -> String { value.map { formatDemoSeconds($0) } ?? "—" }
            let names = reconnects.keys.sorted()
            return """
                \(messages)
                reconnects                 \(names.map { "\($0) \(reconnects[$0] ?? 0)" }.joined(separator: ", "))
                node crash noticed after   \(names.map { "\($0) \(seconds(crashNoticed[$0]))" }.joined(separator: ", "))
                back after the restart     \(names.map { "\($0) \(seconds(backAfterRestart[$0]))" }.joined(separator: ", "))
                silent link noticed after  \(seconds(silenceNoticed))   (\(Self.silenceBound))
                carol back after the link  \(seconds(backAfterSilence))
                demo took                  \(seconds(duration))
                verdict                    \(isClean ? "every message delivered exactly once or reported failed" : "NOT CLEAN")
                """
        }
    }

    public enum Failure: Error, CustomStringConvertible {
        case stuck(String)
        /// Ctrl-C (or SIGTERM): the demo stopped early and cleaned up.
        case interrupted
        public var description: String {
            switch self {
            case .stuck(let what): return "the demo got stuck: \(what)"
            case .interrupted: return "the demo was interrupted"
            }
        }
    }

    /// Runs the demo (about 13 seconds) and returns its counts. Call from a thread that is not one
    /// of the demo's loops (the command's main thread).
    public static func run(_ options: Options) throws -> Summary {
        let script = DemoScript(options)
        defer { script.tearDown() }
        return try script.play()
    }
}

extension ChatDemo {
    /// Where the Chrome-trace JSON of a run goes, beside its timeline page: `NAME.trace.json` for
    /// `NAME.html` (or for any other name, `NAME.trace.json` appended).
    public static func tracePath(besideTimeline path: String) -> String {
        (path.hasSuffix(".html") ? String(path.dropLast(5)) : path) + ".trace.json"
    }
}

func formatDemoSeconds(_ duration: Duration) -> String {
    let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    return "\(milliseconds / 1000).\(String(repeating: "0", count: 3 - "\(milliseconds % 1000)".count))\(milliseconds % 1000) s"
}
