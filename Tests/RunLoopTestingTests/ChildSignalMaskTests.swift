import Foundation
import Glibc
import RunLoopTesting
import Testing

/// `Process.runWithNoSignalBlocked()`: a child started from a thread that blocks every signal, as a
/// Swift concurrency thread does, still starts with none blocked and ends on SIGTERM.
@Suite struct ChildSignalMaskTests {
    /// The signals blocked in `pid`'s main thread, from `/proc/PID/status` (`SigBlk`, hexadecimal).
    private static func blockedSignals(of pid: pid_t) -> UInt64? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("SigBlk:") {
            return UInt64(line.dropFirst("SigBlk:".count).trimmingCharacters(in: .whitespaces), radix: 16)
        }
        return nil
    }

    /// Runs `start` on a fresh task with every signal blocked on its thread (a concurrency thread
    /// does this already; blocking here keeps the test honest on a runtime that would not), then
    /// returns the child's blocked signals and how it ended after SIGTERM.
    private static func startBlockedThenTerminate(_ start: @escaping @Sendable (Process) throws -> Void) async throws
        -> (blocked: UInt64?, exit: ChildExit)
    {
        try await Task.detached {
            var all = sigset_t()
            sigfillset(&all)
            var previous = sigset_t()
            pthread_sigmask(SIG_SETMASK, &all, &previous)
            defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
            let child = Process()
            child.executableURL = URL(fileURLWithPath: "/bin/sleep")
            child.arguments = ["30"]
            try start(child)
            let blocked = blockedSignals(of: child.processIdentifier)
            kill(child.processIdentifier, SIGTERM)
            // A child that ignores SIGTERM is killed at the limit: the exit then says SIGKILL.
            let exit = try child.waitForExit(within: .seconds(20))
            return (blocked, exit)
        }.value
    }

    @Test("a child started from a task with every signal blocked has none blocked and ends on SIGTERM")
    func sigtermEndsTheChild() async throws {
        let (blocked, exit) = try await Self.startBlockedThenTerminate { try $0.runWithNoSignalBlocked() }
        #expect(blocked == 0)
        #expect(exit == .signalled(SIGTERM))
    }

    /// What the helper is for: without it the child keeps the thread's mask (this fails, and the
    /// helper can go, once Foundation starts children with an empty mask).
    @Test("Foundation's run() alone passes the blocked mask on")
    func plainRunInheritsTheMask() async throws {
        let (blocked, exit) = try await Self.startBlockedThenTerminate { child in
            try child.run()
            // SIGTERM stays pending in a child that blocks it: end it here instead of waiting out the limit.
            let blocked = Self.blockedSignals(of: child.processIdentifier) ?? 0
            if blocked & (1 << UInt64(SIGTERM - 1)) != 0 { kill(child.processIdentifier, SIGKILL) }
        }
        #expect(blocked.map { $0 & (1 << UInt64(SIGTERM - 1)) != 0 } == true)
        #expect(exit == .signalled(SIGKILL))
    }
}
