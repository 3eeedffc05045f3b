public import Foundation
import Glibc
import ThrowawayServers

public enum PeerFailure: Error {
    case toolFailed(String)
    case noPort(String)
}

/// A peer program a test starts (`openssl s_client`/`s_server`, Python): its output (both streams) in
/// a file, its input a pipe the test writes to. Killed when the test lets go of it.
public final class PeerProcess: @unchecked Sendable {
    // @unchecked: Foundation's Process and Pipe may be used from any thread; the rest is immutable.
    public let process = Process()
    public let outputPath = temporaryPath("peer-output")
    private let input = Pipe()

    public init(_ executable: String, _ arguments: [String], directory: String) throws {
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardOutput = output
        process.standardError = output
        process.standardInput = input
        try process.runWithNoSignalBlocked()
    }

    /// Everything it printed so far.
    public var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    public func send(_ text: String) {
        input.fileHandleForWriting.write(Data(text.utf8))
    }

    public func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    /// Whether it still runs, as the kernel knows (Foundation may notice an end late: see
    /// ``Foundation/Process/exitIfEnded()``).
    public var isRunning: Bool { process.exitIfEnded() == nil }
    /// Its exit status (the signal's number if a signal ended it), once it has ended.
    public var exitStatus: Int32 {
        guard let exit = process.exitIfEnded() else { preconditionFailure("\(process.processIdentifier) still runs") }
        return exit.status
    }

    /// The port of `openssl s_server`, from its `ACCEPT host:port` line (polled: it comes within
    /// milliseconds).
    public func acceptPort() throws -> UInt16 {
        for _ in 0..<500 {
            let text = output
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT ") }),
                let port = line.split(separator: ":").last.flatMap({ UInt16($0) })
            {
                return port
            }
            if !isRunning { break }
            usleep(10_000)
        }
        throw PeerFailure.noPort(output)
    }

    deinit {
        if isRunning {
            kill(process.processIdentifier, SIGKILL)
            _ = try? process.waitForExit()
        }
        unlink(outputPath)
    }
}
