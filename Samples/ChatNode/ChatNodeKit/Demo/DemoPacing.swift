import Foundation
import Glibc
import RunLoopKit

/// How a demo's script waits and speaks, on the thread that runs it (the command's main thread, or a
/// test's): it polls what it waits for, gives up on a step after ``stepLimit``, stops at once when
/// ``isInterrupted`` says so (Ctrl-C), and prefixes every narrated line with the time since the start.
struct DemoPacing: Sendable {
    let output: @Sendable (String) -> Void
    /// How long one step may wait for what it expects before the demo gives up as stuck.
    let stepLimit: Duration
    let isInterrupted: @Sendable () -> Bool
    let started = DemoClock.now()

    init(
        output: @escaping @Sendable (String) -> Void, stepLimit: Duration, isInterrupted: @escaping @Sendable () -> Bool = { false }
    ) {
        self.output = output
        self.stepLimit = stepLimit
        self.isInterrupted = isInterrupted
    }

    /// Waits until `condition` holds, up to `limit`; false if it did not.
    func wait(upTo limit: Duration, until condition: () throws -> Bool) throws -> Bool {
        let end = DemoClock.now() + limit
        while try !condition() {
            if isInterrupted() { throw ChatDemo.Failure.interrupted }
            guard DemoClock.now() < end else { return false }
            usleep(10_000)
        }
        return true
    }

    /// Waits until `condition` holds; throws ``ChatDemo/Failure/stuck(_:)`` after the step limit.
    func waitUntil(_ what: String, _ condition: () throws -> Bool) throws {
        guard try wait(upTo: stepLimit, until: condition) else { throw ChatDemo.Failure.stuck(what) }
    }

    func pause(_ duration: Duration) throws {
        guard duration > .zero else { return }
        _ = try wait(upTo: duration) { false }
    }

    func section(_ title: String) {
        output("")
        output("== \(title)")
    }

    func note(_ text: String) {
        output("   \(text)")
    }

    /// A narration for `who`: each line stamped with the demo's elapsed time.
    func narrator(_ who: String) -> @Sendable (String) -> Void {
        let output = self.output
        let started = self.started
        return { line in
            let elapsed = formatDemoSeconds(DemoClock.now() - started)
            let padded = String(repeating: " ", count: max(0, 8 - elapsed.count)) + elapsed
            output("\(padded)  \(who.padding(toLength: 5, withPad: " ", startingAt: 0))  \(line)")
        }
    }
}
