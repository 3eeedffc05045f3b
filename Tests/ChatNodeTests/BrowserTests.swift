import Foundation
import Glibc
import RunLoopTesting
import Testing

/// What the browser test needs: a Python with Playwright (`RUNLOOPKIT_PYTHON`, else the repository's
/// `.build-python` venv that `Scripts/setup.sh --tests` makes) and Debian's Chromium. Probed once;
/// missing either, the test is skipped and says which.
struct BrowserEnvironment: Sendable {
    var python: String
    var chromium: String
    /// Nil when usable; otherwise what is missing.
    var problem: String?

    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let shared = probe()

    private static func probe() -> BrowserEnvironment {
        let environment = ProcessInfo.processInfo.environment
        let venv = repository.appendingPathComponent(".build-python/bin/python").path
        let python = environment["RUNLOOPKIT_PYTHON"].flatMap { $0.isEmpty ? nil : $0 } ?? venv
        let chromium = environment["RUNLOOPKIT_CHROMIUM"] ?? "/usr/bin/chromium"
        var found = BrowserEnvironment(python: python, chromium: chromium)
        if !FileManager.default.isExecutableFile(atPath: chromium) {
            found.problem = "no Chromium at \(chromium) (apt-get install --no-install-recommends chromium, or set RUNLOOPKIT_CHROMIUM)"
        } else if !FileManager.default.isExecutableFile(atPath: python) {
            found.problem = "no Python at \(python) (bash Scripts/setup.sh --tests makes .build-python)"
        } else if let status = try? run(python, ["-c", "import playwright.sync_api"]), status != 0 {
            found.problem = "\(python) cannot import playwright (bash Scripts/setup.sh --tests installs it)"
        }
        return found
    }

    /// Runs `Tests/BrowserClient/<script>` against the built `chat-node`, screenshots into `screenshots`,
    /// the script's own `arguments` after the common ones, killed after 160 s, and expects it to pass:
    /// exit 0 and a last line `{"ok": true, …}`. Its screenshots' lines (`screenshot: PATH`) are printed
    /// in the test log.
    func expectPasses(_ script: String, screenshots: String, arguments: [String] = []) async throws {
        let binary = ChatNodeBinary.path
        try #require(FileManager.default.isExecutableFile(atPath: binary), "chat-node not built at \(binary)")
        let path = Self.repository.appendingPathComponent("Tests/BrowserClient/\(script)").path
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("\(script)-\(getpid()).out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [path, "--chat-node", binary, "--chromium", chromium, "--screenshots", screenshots] + arguments
        var childEnvironment = ProcessInfo.processInfo.environment
        childEnvironment["PYTHONDONTWRITEBYTECODE"] = "1"
        childEnvironment["PYTHONUNBUFFERED"] = "1"
        process.environment = childEnvironment
        process.standardInput = FileHandle.nullDevice
        // A file, not a pipe: nobody drains a pipe while the script runs.
        let sink = try FileHandle(forWritingTo: output)
        process.standardOutput = sink
        process.standardError = sink
        try process.runWithNoSignalBlocked()
        // Alone a script takes 15-30 s; beside the whole suite on two busy cores, Chromium alone can
        // take a minute to start.
        let deadline = ContinuousClock.now + .seconds(160)
        while process.exitIfEnded() == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        if process.exitIfEnded() == nil {
            kill(process.processIdentifier, SIGKILL)  // its finally-block cannot run: the node dies with its pipe
        }
        let exit = try process.waitForExit()
        try sink.close()
        let transcript = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        for line in transcript.split(separator: "\n") where line.hasPrefix("screenshot: ") { print(line) }
        #expect(exit == .exited(0), "\(script) failed:\n\(transcript)")
        let summary = transcript.split(separator: "\n").last.map(String.init) ?? ""
        #expect(summary.hasPrefix("{\"ok\": true"), "\(transcript)")
    }

    private static func run(_ executable: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.runWithNoSignalBlocked()
        return try process.waitForExit().status
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test only where ``BrowserEnvironment`` found Playwright and Chromium.
    static var browserAvailable: Self {
        .enabled(
            if: BrowserEnvironment.shared.problem == nil,
            "needs Playwright (bash Scripts/setup.sh --tests, or RUNLOOPKIT_PYTHON) and Chromium at /usr/bin/chromium")
    }
}

@Suite("Chat node in a browser")
struct BrowserTests {
    @Test(
        "two Chromium pages and a terminal client chat in a room through a real node that is killed and restarted; the pages reconnect, resend, and show what arrived while away, once each",
        .browserAvailable, .timeLimit(.minutes(3))
    )
    func browserChat() async throws {
        try await BrowserEnvironment.shared.expectPasses(
            "browser_chat.py", screenshots: BrowserEnvironment.repository.appendingPathComponent(".build/browser-test").path)
    }
}
