public import Foundation
import Glibc

/// How a child process ended.
public enum ChildExit: Equatable, Sendable, CustomStringConvertible {
    /// It returned from `main` or called `exit` with this status.
    case exited(Int32)
    /// This signal ended it.
    case signalled(Int32)

    /// The exit status, or the signal's number: what Foundation's `terminationStatus` would say.
    public var status: Int32 {
        switch self {
        case .exited(let status), .signalled(let status): return status
        }
    }

    public var description: String {
        switch self {
        case .exited(let status): return "exit \(status)"
        case .signalled(let signal): return "signal \(signal)"
        }
    }
}

/// A child that had not ended when ``Foundation/Process/waitForExit(within:)`` gave up on it: it was
/// killed, and this says what it was doing.
public struct ChildDidNotExit: Error, CustomStringConvertible {
    /// Its process id.
    public var pid: pid_t
    /// Its command line, as `/proc` had it.
    public var command: String
    /// Its scheduler state from `/proc/PID/stat` when the wait gave up (`S` sleeping, `D` in the
    /// kernel, `T` stopped …).
    public var state: String
    /// How long the wait lasted.
    public var waited: Duration

    public var description: String {
        "child \(pid) (\(command)) had not ended after \(waited), state \(state): killed"
    }
}

extension Process {
    /// How the child ended, or nil while it runs: asks the kernel now, without waiting.
    ///
    /// Foundation on Linux does not learn of a child's end by SIGCHLD: the child inherits one end of
    /// a socket pair, and Foundation's single manager thread calls a blocking `waitpid` once that end
    /// reaches end-of-file. `isRunning` and ``waitUntilExit()`` therefore hang while another process
    /// holds the child's end (a grandchild, or a concurrent spawn that did not close it), and every
    /// child's end goes unnoticed — zombies nobody reaps — while the manager thread sits in `waitpid`
    /// for a child that closed its end and lives on. The kernel knows either way.
    ///
    /// This looks with `WNOWAIT`, leaving the zombie for Foundation to reap: reaping it here would
    /// free its pid for reuse, and Foundation's later blocking `waitpid` on that number would then
    /// wait for, and steal the status of, an unrelated child. The zombie lasts until Foundation
    /// notices, at the latest until this process ends. Call it from any thread after `run()`.
    public func exitIfEnded() -> ChildExit? {
        var info = siginfo_t()
        while waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOHANG | WNOWAIT) < 0 {
            guard errno == EINTR else { return reapedExit() }
        }
        guard info._sifields._sigchld.si_pid == processIdentifier else { return nil }
        let status = info._sifields._sigchld.si_status
        return info.si_code == Int32(CLD_EXITED) ? .exited(status) : .signalled(status)
    }

    /// Waits at most `limit` for the child to end and says how it ended, without depending on
    /// Foundation having noticed (see ``exitIfEnded()``: the status comes from the kernel, and
    /// `terminationStatus` may not be valid yet). A child still running at the limit is described on
    /// standard error and in the error thrown, and killed with SIGKILL, so a stuck child fails one
    /// test instead of hanging the run. Blocks the calling thread, polling every few milliseconds.
    /// - Parameter limit: how long it may take; sixty seconds by default, beyond what any child of
    ///   the tests needs on a loaded two-core machine.
    public func waitForExit(within limit: Duration = .seconds(60)) throws(ChildDidNotExit) -> ChildExit {
        let start = ContinuousClock.now
        if let exit = poll(until: start + limit) { return exit }
        let failure = ChildDidNotExit(
            pid: processIdentifier, command: procText("cmdline").replacingOccurrences(of: "\0", with: " "),
            state: procState(), waited: ContinuousClock.now - start)
        FileHandle.standardError.write(Data("\(failure)\n".utf8))
        kill(processIdentifier, SIGKILL)
        // SIGKILL ends even a stopped child; one in uninterruptible sleep only when it leaves it.
        _ = poll(until: .now + .seconds(10))
        throw failure
    }

    private func poll(until deadline: ContinuousClock.Instant) -> ChildExit? {
        var pause: UInt32 = 500
        while true {
            if let exit = exitIfEnded() { return exit }
            if ContinuousClock.now >= deadline { return nil }
            usleep(pause)
            pause = min(pause * 2, 20_000)
        }
    }

    /// How a child already reaped ended: Foundation, the only one that reaps these, has the status
    /// once `isRunning` is false, which its manager thread sets just after its `waitpid` — a moment a
    /// loaded machine can stretch, and in which the child must not look alive again.
    private func reapedExit() -> ChildExit? {
        let deadline = ContinuousClock.now + .seconds(10)
        while isRunning {
            guard ContinuousClock.now < deadline else { return nil }
            usleep(100)
        }
        return terminationReason == .uncaughtSignal ? .signalled(terminationStatus) : .exited(terminationStatus)
    }

    private func procText(_ name: String) -> String {
        (try? String(contentsOfFile: "/proc/\(processIdentifier)/\(name)", encoding: .utf8)) ?? "?"
    }

    /// The state letter of `/proc/PID/stat`: the field after the parenthesised command name.
    private func procState() -> String {
        let stat = procText("stat")
        guard let close = stat.lastIndex(of: ")") else { return stat }
        return String(stat[close...].dropFirst().trimmingCharacters(in: .whitespaces).prefix(1))
    }
}
