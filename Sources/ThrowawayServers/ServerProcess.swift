public import Foundation
import Glibc
import Synchronization

/// A server program started by a test (or by `chat-node demo --cluster`) and killed by pid. The
/// program must print `listening on HOST:PORT` on its standard output once it accepts connections;
/// ``port`` is read from that line.
///
/// `@unchecked Sendable`: it is immutable but for Foundation's `Process`, which is safe to signal and
/// wait on from any thread (and Swift 6.3's region checker crashed on a local variable of this type).
public final class ServerProcess: @unchecked Sendable {
    public let process = Process()
    /// The port the server reported.
    public let port: UInt16
    /// How it ended, once ``signal(_:)`` or ``kill()`` returned (read this, not `process.terminationStatus`,
    /// which Foundation may not have caught up with).
    public var exit: ChildExit? { ended.withLock { $0 } }
    private let ended = Mutex<ChildExit?>(nil)
    private let output = Pipe()

    public enum Failure: Error, CustomStringConvertible {
        case binaryMissing(String)
        case cannotWriteLog(String)
        case noPort(String)
        /// This process's standard descriptor (0, 1 or 2) is the server's output pipe: something in
        /// this process closed that number before the pipe was made (see ``descriptor(in:sharingFileWith:)``).
        case standardDescriptorIsOutputPipe(Int32)
        public var description: String {
            switch self {
            case .binaryMissing(let path): return "\(path) not found or not executable"
            case .cannotWriteLog(let path): return "cannot write \(path)"
            case .noPort(let line): return "the server did not report its port (got: \(line))"
            case .standardDescriptorIsOutputPipe(let number):
                return
                    "descriptor \(number) of this process became the server's output pipe: something here closed it (a double close?) before the pipe was made"
            }
        }
    }

    /// Starts the program at `executable` with `arguments` and waits until it reports its port.
    /// - Parameter softDescriptorLimit: starts it with this soft RLIMIT_NOFILE (the hard one as the
    ///   test process has it), through `/bin/sh -c 'ulimit -Sn N && exec …'`.
    /// - Parameter errorLog: a file its standard error goes to (created or truncated) instead of this
    ///   process's: a demo that narrates keeps the servers' logs out of its story.
    public init(executable path: String, _ arguments: [String], softDescriptorLimit: Int? = nil, errorLog: String? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: path) else { throw Failure.binaryMissing(path) }
        if let softDescriptorLimit {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -Sn \(softDescriptorLimit) && exec \"$0\" \"$@\"", path] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = arguments
        }
        process.standardOutput = output
        if let errorLog {
            guard FileManager.default.createFile(atPath: errorLog, contents: nil), let log = FileHandle(forWritingAtPath: errorLog) else {
                throw Failure.cannotWriteLog(errorLog)
            }
            process.standardError = log
        }
        let handle = output.fileHandleForReading
        if let stolen = Self.standardDescriptor(in: output) { throw Failure.standardDescriptorIsOutputPipe(stolen) }
        try process.runWithNoSignalBlocked()
        var line = ""
        while !line.hasSuffix("\n") {
            let byte = handle.readData(ofLength: 1)
            if byte.isEmpty { break }
            line += String(decoding: byte, as: UTF8.self)
        }
        guard line.hasPrefix("listening on "), let text = line.split(separator: ":").last,
            let bound = UInt16(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            process.terminate()
            if let stolen = Self.standardDescriptor(in: output) { throw Failure.standardDescriptorIsOutputPipe(stolen) }
            throw Failure.noPort(line)
        }
        port = bound
    }

    /// 0, 1 or 2 if that standard descriptor of this process is one end of `pipe`.
    private static func standardDescriptor(in pipe: Pipe) -> Int32? {
        let readEnd = pipe.fileHandleForReading.fileDescriptor
        return readEnd <= 2 ? readEnd : descriptor(in: 0...2, sharingFileWith: readEnd)
    }

    /// SIGKILL: no goodbye, no flush — the kernel resets the sockets.
    public func kill() {
        signal(SIGKILL)
    }

    /// Sends `number` and waits for the process to end (at most a minute, then SIGKILL: see
    /// ``Foundation/Process/waitForExit(within:)``).
    public func signal(_ number: Int32) {
        if process.exitIfEnded() == nil {
            Glibc.kill(process.processIdentifier, number)
            _ = try? process.waitForExit()
        }
        ended.withLock { $0 = process.exitIfEnded() }
    }

    deinit {
        if process.exitIfEnded() == nil { kill() }
    }
}
