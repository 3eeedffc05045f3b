public import Foundation
import Glibc

/// A server program started by a test and killed by pid. The program must print `listening on
/// HOST:PORT` on its standard output once it accepts connections; ``port`` is read from that line.
/// For a program of the package under test, ``builtProductPath(_:)`` says where SwiftPM put it.
///
/// `@unchecked Sendable`: it is immutable but for Foundation's `Process`, which is safe to signal and
/// wait on from any thread (and Swift 6.3's region checker crashed on a local variable of this type).
public final class ServerProcess: @unchecked Sendable {
    public let process = Process()
    /// The port the server reported.
    public let port: UInt16
    private let output = Pipe()

    public enum Failure: Error, CustomStringConvertible {
        case binaryMissing(String)
        case noPort(String)
        public var description: String {
            switch self {
            case .binaryMissing(let path): return "\(path) not found or not executable"
            case .noPort(let line): return "the server did not report its port (got: \(line))"
            }
        }
    }

    /// Starts the program at `executable` with `arguments` and waits until it reports its port.
    /// - Parameter softDescriptorLimit: starts it with this soft RLIMIT_NOFILE (the hard one as the
    ///   test process has it), through `/bin/sh -c 'ulimit -Sn N && exec …'`.
    public init(executable path: String, _ arguments: [String], softDescriptorLimit: Int? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: path) else { throw Failure.binaryMissing(path) }
        if let softDescriptorLimit {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -Sn \(softDescriptorLimit) && exec \"$0\" \"$@\"", path] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = arguments
        }
        process.standardOutput = output
        try process.run()
        var line = ""
        let handle = output.fileHandleForReading
        while !line.hasSuffix("\n") {
            let byte = handle.readData(ofLength: 1)
            if byte.isEmpty { break }
            line += String(decoding: byte, as: UTF8.self)
        }
        guard line.hasPrefix("listening on "), let text = line.split(separator: ":").last,
            let bound = UInt16(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            process.terminate()
            throw Failure.noPort(line)
        }
        port = bound
    }

    /// SIGKILL: no goodbye, no flush — the kernel resets the sockets.
    public func kill() {
        signal(SIGKILL)
    }

    /// Sends `number` and waits for the process to end.
    public func signal(_ number: Int32) {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, number)
        process.waitUntilExit()
    }

    deinit {
        if process.isRunning { kill() }
    }
}

/// Where SwiftPM put the product `name` of the package under test: beside the test bundle, as
/// `swift build` and `swift test` build every product of the package into the same folder.
public func builtProductPath(_ name: String) -> String {
    let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    var directory = bundle.deletingLastPathComponent()
    // On Linux the test runner is `<build>/debug/<Package>PackageTests.xctest`.
    if directory.lastPathComponent.hasSuffix(".xctest") { directory = directory.deletingLastPathComponent() }
    return directory.appendingPathComponent(name).path
}
