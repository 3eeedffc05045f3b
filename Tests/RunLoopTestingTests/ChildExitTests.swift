import Foundation
import Glibc
import RunLoopTesting
import Testing

/// `Process.waitForExit(within:)` and `exitIfEnded()`: a child's end as the kernel knows it, within a bound.
@Suite struct ChildExitTests {
    private func started(_ executable: String, _ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        try process.runWithNoSignalBlocked()
        return process
    }

    /// Waits (up to 10 s: the test with the stuck manager thread may run meanwhile) until Foundation has reaped `child`.
    private func foundationNoticed(_ child: Process) -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while child.isRunning, ContinuousClock.now < deadline { usleep(1_000) }
        return !child.isRunning
    }

    private func threadWaitsForAChild() -> Bool {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.contains { (try? String(contentsOfFile: "/proc/self/task/\($0)/wchan", encoding: .utf8)) == "do_wait" }
    }

    @Test("a child that exits is seen with its status")
    func exitStatus() throws {
        let child = try started("/bin/sh", ["-c", "exit 3"])
        #expect(try child.waitForExit(within: .seconds(30)) == .exited(3))
        #expect(child.exitIfEnded() == .exited(3), "asking again gives the same answer")
        try #require(foundationNoticed(child))
        #expect(child.exitIfEnded() == .exited(3), "once Foundation reaped it, the answer is Foundation's")
    }

    @Test("a child a signal ended is seen with the signal")
    func signalled() throws {
        let child = try started("/bin/sleep", ["30"])
        #expect(child.exitIfEnded() == nil)
        // SIGKILL: the one signal no mask or handler of the child can hold off.
        kill(child.processIdentifier, SIGKILL)
        #expect(try child.waitForExit(within: .seconds(30)) == .signalled(SIGKILL))
        try #require(foundationNoticed(child))
        #expect(child.exitIfEnded() == .signalled(SIGKILL))
    }

    @Test("a child that does not end in time is reported, then killed")
    func stuckChildIsKilled() throws {
        let child = try started("/bin/sleep", ["30"])
        let start = ContinuousClock.now
        let failure = try #require(throws: ChildDidNotExit.self) { try child.waitForExit(within: .milliseconds(200)) }
        #expect(ContinuousClock.now - start < .seconds(10), "sleep 30 would have taken 30 s")
        #expect(failure.pid == child.processIdentifier)
        #expect(failure.command.hasPrefix("/bin/sleep 30"))
        #expect(failure.state == "S")
        #expect(failure.waited >= .milliseconds(200))
        #expect(child.exitIfEnded() == .signalled(SIGKILL))
    }

    /// The hang of a fresh-clone CI run: Foundation's manager thread sits in a blocking `waitpid` for
    /// a child that closed its inherited end of Foundation's socket pair and lives on; meanwhile no
    /// other child's end is noticed (`isRunning` stays true, `waitUntilExit` blocks, the child stays
    /// a zombie). `waitForExit` asks the kernel, and returns at once.
    @Test("an end is seen while Foundation waits for another child that closed its descriptors")
    func endSeenWhileFoundationIsStuck() throws {
        let closer = Process()
        closer.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        closer.arguments = ["-c", "import os, time; os.closerange(3, 65536); print('closed', flush=True); time.sleep(30)"]
        let output = Pipe()
        closer.standardOutput = output
        try closer.runWithNoSignalBlocked()
        defer {
            kill(closer.processIdentifier, SIGKILL)
            _ = try? closer.waitForExit(within: .seconds(10))
        }
        #expect(String(decoding: output.fileHandleForReading.availableData, as: UTF8.self).hasPrefix("closed"))
        // Foundation's manager thread takes the closer's end-of-file and calls waitpid for it: seen in
        // /proc as a thread of ours in do_wait (the bound is for a kernel that hides wchan).
        let stuck = ContinuousClock.now + .seconds(2)
        while !threadWaitsForAChild(), ContinuousClock.now < stuck { usleep(1_000) }

        let child = try started("/bin/true", [])
        #expect(try child.waitForExit(within: .seconds(10)) == .exited(0))
        #expect(child.isRunning, "Foundation noticed the end: the witness that it was stuck is gone")
    }
}
