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
        public var sent = 0
        public var delivered = 0
        public var failed = 0
        public var unsettled = 0
        public var expectedDeliveries = 0
        public var receivedDeliveries = 0
        public var lost = 0
        public var duplicatesShown = 0
        public var duplicatesDropped = 0
        public var reconnects: [String: Int] = [:]
        public var crashNoticed: [String: Duration] = [:]
        public var backAfterRestart: [String: Duration] = [:]
        public var silenceNoticed: Duration?
        public var backAfterSilence: Duration?
        public var duration: Duration = .zero

        /// Every message delivered exactly once or reported failed; none left hanging.
        public var isClean: Bool { lost == 0 && duplicatesShown == 0 && unsettled == 0 }

        public var description: String {
            func seconds(_ value: Duration?) -> String { value.map { formatDemoSeconds($0) } ?? "—" }
            let names = reconnects.keys.sorted()
            return """
                messages sent              \(sent)
                  acknowledged (stored)    \(delivered)
                  failed                   \(failed)
                  unsettled                \(unsettled)
                deliveries expected        \(expectedDeliveries)   (each acknowledged message × its recipients)
                  received                 \(receivedDeliveries)
                  lost                     \(lost)
                  duplicates shown         \(duplicatesShown)
                  duplicates dropped       \(duplicatesDropped)   (resent by the node, de-duplicated by id)
                reconnects                 \(names.map { "\($0) \(reconnects[$0] ?? 0)" }.joined(separator: ", "))
                node crash noticed after   \(names.map { "\($0) \(seconds(crashNoticed[$0]))" }.joined(separator: ", "))
                back after the restart     \(names.map { "\($0) \(seconds(backAfterRestart[$0]))" }.joined(separator: ", "))
                silent link noticed after  \(seconds(silenceNoticed))   (heartbeat 1 s + answer timeout 1.5 s)
                carol back after the link  \(seconds(backAfterSilence))
                demo took                  \(seconds(duration))
                verdict                    \(isClean ? "every message delivered exactly once or reported failed" : "NOT CLEAN")
                """
        }
    }

    public enum Failure: Error, CustomStringConvertible {
        case stuck(String)
        public var description: String {
            switch self {
            case .stuck(let what): return "the demo got stuck: \(what)"
            }
        }
    }

    /// Runs the demo (about 25 seconds) and returns its counts. Call from a thread that is not one
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
