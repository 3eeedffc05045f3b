import Foundation
import Glibc
import RunLoopTesting

/// The Python interpreter the outside-client tests run (Tests/PythonClient): `RUNLOOPKIT_PYTHON` if
/// set (CI sets it to a venv with Tests/PythonClient/requirements.txt installed), else `python3` on
/// PATH. Probed once: it must import the generated `runloopim_pb2` with its protobuf runtime.
struct PythonEnvironment: Sendable {
    /// The interpreter as given: a path, or a name looked up on PATH.
    var interpreter: String
    /// Whether RUNLOOPKIT_PYTHON named it: then an unusable interpreter is a failure, not a skip.
    var configured: Bool
    /// Nil when usable; otherwise why not.
    var problem: String?
    /// What the probe printed: the interpreter and protobuf versions.
    var versions: String

    var usable: Bool { problem == nil }
    /// Run the test when the interpreter works, or when CI said which one to use (a broken CI
    /// interpreter must fail loudly, never turn into a skip).
    var shouldRun: Bool { usable || configured }

    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("PythonClient")

    static let shared: PythonEnvironment = probe()

    private static func probe() -> PythonEnvironment {
        let configured = ProcessInfo.processInfo.environment["RUNLOOPKIT_PYTHON"].flatMap { $0.isEmpty ? nil : $0 }
        var environment = PythonEnvironment(interpreter: configured ?? "python3", configured: configured != nil, problem: nil, versions: "")
        let script = """
            import sys; sys.path.insert(0, sys.argv[1])
            import google.protobuf, runloopim_pb2
            runloopim_pb2.ChatMessage.FromString(runloopim_pb2.ChatMessage(id="x", room="r").SerializeToString())
            print(sys.version.split()[0], "protobuf", google.protobuf.__version__)
            """
        do {
            let run = try PythonProcess(environment.interpreter, arguments: ["-c", script, directory.path])
            _ = try run.process.waitForExit()
            if run.status == 0 {
                environment.versions = run.output.trimmingCharacters(in: .whitespacesAndNewlines)
            } else {
                environment.problem =
                    "`\(environment.interpreter)` cannot import protobuf / runloopim_pb2 (exit \(run.status)): \(run.errorOutput.suffix(400))"
            }
        } catch {
            environment.problem = "`\(environment.interpreter)` could not be started: \(error)"
        }
        return environment
    }
}

/// A Python process started by a test and polled, never waited for: the test's loop keeps running.
/// Output goes to temporary files (a pipe nobody drains could block the child).
final class PythonProcess {
    let process = Process()
    private let outputPath = temporaryPath("python.out")
    private let errorPath = temporaryPath("python.err")

    /// `interpreter` is a path, or a name found on PATH (through /usr/bin/env).
    init(_ interpreter: String, arguments: [String]) throws {
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        if interpreter.contains("/") {
            process.executableURL = URL(fileURLWithPath: interpreter)
            process.arguments = arguments
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [interpreter] + arguments
        }
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONDONTWRITEBYTECODE"] = "1"  // no __pycache__ in the source tree
        environment["PYTHONUNBUFFERED"] = "1"
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle(forWritingAtPath: outputPath)
        process.standardError = FileHandle(forWritingAtPath: errorPath)
        try process.runWithNoSignalBlocked()
    }

    var isRunning: Bool { process.exitIfEnded() == nil }
    /// The exit status (valid once `isRunning` is false).
    var status: Int32 { process.exitIfEnded()?.status ?? -1 }
    var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
    var errorOutput: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

    /// SIGKILL, and wait until it has ended.
    func kill() {
        guard isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        _ = try? process.waitForExit()
    }

    deinit {
        kill()
        unlink(outputPath)
        unlink(errorPath)
    }
}
