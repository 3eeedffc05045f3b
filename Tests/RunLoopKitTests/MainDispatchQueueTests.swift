import Foundation
import RunLoopTesting
import Testing

/// The main loop services `DispatchQueue.main` in its common modes, as CFRunLoop's does. Only a
/// process's main thread can show it, and a test runs on other threads, so `loop-demo` (whose main
/// thread runs the main loop) is the subject: it hands a block to the main queue from another thread
/// and starts a main-actor task, and each says where it ran; at its end it runs its emptied default mode.
@Suite struct MainDispatchQueueTests {
    @Test func blocksOnTheMainQueueAndMainActorTasksRunOnTheMainLoop() throws {
        let demo = Process()
        demo.executableURL = URL(fileURLWithPath: builtProductPath("loop-demo"))
        demo.arguments = ["--seconds", "0.3"]
        let output = Pipe()
        demo.standardOutput = output
        try demo.runWithNoSignalBlocked()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(try demo.waitForExit(within: .seconds(30)) == .exited(0))
        let lines = text.split(separator: "\n")
        // Without the main queue serviced neither line appears: nothing else drains it in this process.
        #expect(lines.contains("main queue: a block from another thread ran on the main loop: true, mode kCFRunLoopDefaultMode"), "\(text)")
        #expect(lines.contains("main actor: a task ran on the main loop: true, mode kCFRunLoopDefaultMode"), "\(text)")
        // CF's rule (docs/BEHAVIOUR.md §9.4): the main queue keeps the main loop's common modes from
        // being empty, so a run of the default mode with nothing else in it times out.
        #expect(lines.last?.hasSuffix("the default mode with nothing of ours in it: timedOut; stopped cleanly") == true, "\(text)")
    }
}
