import Glibc
import RunLoopKit
import RunLoopTesting

// What the Conformance*Tests files share. They pin docs/BEHAVIOUR.md §9 on RunLoopKit, one test per
// scenario, named by its section number, in one file per concern (modes, timers, sources, blocks, stop
// and wake-up, observers, nested runs).
//
// Every test runs its loop on a thread of its own. Most use a manual clock that jumps to the loop's next
// deadline when it idles: traces are exact (a manual clock has no spurious wakes) and elapsed times are
// exact virtual durations. Only the scenarios in which another thread must act while the loop really
// sleeps (§9.18, §9.20, §9.21, §9.22, §9.40a) use the system clock, with short real times and spurious
// wake cycles tolerated.
//
// Trace tokens (Support/Trace.swift): E BT BS BW AW X for activities; callouts append their own ("T1",
// "S:a", "B:A").

/// Short names for traces: "default" for the default mode, the raw name otherwise.
func modeName(_ mode: RunLoop.Mode) -> String {
    mode == .default ? "default" : mode.rawValue
}

/// A custom source labelled "S" that logs its hooks to `log`: "schedule(X)", "cancel(default)".
func hookLoggingSource(log: Trace, perform: @escaping (RunLoopSource) -> Void) -> RunLoopSource {
    RunLoopSource(
        label: "S",
        schedule: { _, mode in log.append("schedule(\(modeName(mode)))") },
        cancel: { _, mode in log.append("cancel(\(modeName(mode)))") },
        perform: perform)
}

/// Runs one activation of `mode` on a manual-clock loop; returns its result and the virtual time it took.
func timedRun(
    _ loop: RunLoop, _ mode: RunLoop.Mode, timeout: Duration, on clock: ManualClock
) throws(RunLoopError) -> (result: RunLoop.RunResult, elapsed: Duration) {
    let start = clock.now
    let result = try loop.run(mode, timeout: timeout)
    return (result, clock.now - start)
}

/// Blocks the calling helper thread until `loop` sleeps (at most ≈2 s, so a broken loop fails the test
/// instead of hanging it).
func waitUntilWaiting(_ loop: RunLoop) {
    var attempts = 0
    while !loop.isWaiting && attempts < 2000 {
        sleep(milliseconds: 1)
        attempts += 1
    }
}

struct PipeError: Error {
    let errno: Int32
}

/// A pipe whose read end is non-blocking (so a perform can drain it).
func makePipe() throws -> (read: Int32, write: Int32) {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw PipeError(errno: errno) }
    let flags = fcntl(fds[0], F_GETFL)
    guard fcntl(fds[0], F_SETFL, flags | O_NONBLOCK) == 0 else { throw PipeError(errno: errno) }
    return (fds[0], fds[1])
}

func writeByte(_ fd: Int32) {
    var byte: UInt8 = 1
    let written = write(fd, &byte, 1)
    precondition(written == 1, "pipe write failed")
}

/// Reads until the pipe is empty.
func drain(_ fd: Int32) {
    var buffer = [UInt8](repeating: 0, count: 64)
    while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
}
