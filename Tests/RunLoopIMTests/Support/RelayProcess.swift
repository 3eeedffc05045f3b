import Foundation
import Glibc

/// An `im-relay` server process started by a test and killed by pid. The binary is the one SwiftPM
/// built beside the test bundle (`swift build` / `swift test` build every product of the package).
final class RelayProcess {
    let process = Process()
    let port: UInt16
    private let output = Pipe()

    enum Failure: Error, CustomStringConvertible {
        case binaryMissing(String)
        case noPort(String)
        var description: String {
            switch self {
            case .binaryMissing(let path): return "im-relay not found at \(path): run `swift build` first"
            case .noPort(let line): return "im-relay did not report its port (got: \(line))"
            }
        }
    }

    static var binaryPath: String {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = bundle.deletingLastPathComponent()
        // On Linux the test runner is `<build>/debug/RunLoopKitPackageTests.xctest`.
        if directory.lastPathComponent.hasSuffix(".xctest") { directory = directory.deletingLastPathComponent() }
        return directory.appendingPathComponent("im-relay").path
    }

    /// Starts the relay on 127.0.0.1 and waits until it listens.
    init(port: UInt16 = 0, arguments: [String] = []) throws {
        let path = Self.binaryPath
        guard FileManager.default.isExecutableFile(atPath: path) else { throw Failure.binaryMissing(path) }
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["--host", "127.0.0.1", "--port", "\(port)", "--log-level", "warning"] + arguments
        process.standardOutput = output
        try process.run()
        var line = ""
        let handle = output.fileHandleForReading
        while !line.hasSuffix("\n") {
            let byte = handle.readData(ofLength: 1)
            if byte.isEmpty { break }
            line += String(decoding: byte, as: UTF8.self)
        }
        guard let text = line.split(separator: ":").last, let bound = UInt16(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.terminate()
            throw Failure.noPort(line)
        }
        self.port = bound
    }

    /// SIGKILL: no goodbye, no flush — sockets are reset by the kernel.
    func kill() {
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit {
        if process.isRunning { kill() }
    }
}
