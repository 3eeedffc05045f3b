public import Glibc
import Logging
public import RunLoopKit

/// Splits a byte stream into lines: `\n` ends a line, a `\r` before it is dropped, and invalid UTF-8 is
/// repaired rather than refused (a typo in a script must not end the session).
public struct LineSplitter: Sendable {
    private var partial: [UInt8] = []

    public init() {}

    /// Appends bytes and returns the lines they complete, without their line ends.
    public mutating func append(_ bytes: some Sequence<UInt8>) -> [String] {
        var lines: [String] = []
        for byte in bytes {
            if byte == UInt8(ascii: "\n") {
                if partial.last == UInt8(ascii: "\r") { partial.removeLast() }
                lines.append(String(decoding: partial, as: UTF8.self))
                partial.removeAll(keepingCapacity: true)
            } else {
                partial.append(byte)
            }
        }
        return lines
    }

    /// The end of the stream: a last line without a line end, if any.
    public mutating func finish() -> String? {
        defer { partial.removeAll() }
        return partial.isEmpty ? nil : String(decoding: partial, as: UTF8.self)
    }
}

/// Reads a file descriptor (standard input) on a ``RunLoop`` and hands over what arrives, then the end.
///
/// Pipes, sockets and terminals are watched as a ``RunLoopPortSource``. Descriptors epoll refuses (EPERM)
/// — a regular file (`< script.txt`) or `/dev/null` — never block a read, so they are read one chunk per
/// loop pass from a signalled ``RunLoopSource`` instead, which keeps the loop turning between chunks.
///
/// The descriptor is left blocking: on a terminal it shares its open file description with standard
/// output, so `O_NONBLOCK` would make writes to standard output fail with `EAGAIN`. One `read` per
/// readiness cannot block.
///
/// Threads: create it and use it on the loop's thread; the callbacks run there.
/// Lifetime: the owner keeps it; ``invalidate()`` (or the end of input) takes it off the loop. The
/// descriptor is never closed by this object.
public final class TerminalInput {
    public let fileDescriptor: Int32
    public let loop: RunLoop
    private let onBytes: ([UInt8]) -> Void
    private let onEnd: () -> Void
    private var port: RunLoopPortSource?
    private var chunked: RunLoopSource?
    private var buffer = [UInt8](repeating: 0, count: 4096)
    public private(set) var isValid = true

    /// Starts watching `fileDescriptor` in `modes`.
    /// - Parameters:
    ///   - onBytes: each chunk read, on the loop's thread.
    ///   - onEnd: once, at end of file or a read error (which is logged); no call after ``invalidate()``.
    /// - Throws: ``RunLoopError`` when the descriptor is not open.
    public init(
        fileDescriptor: Int32 = STDIN_FILENO, loop: RunLoop = .current, modes: [RunLoop.Mode] = [.common],
        onBytes: @escaping ([UInt8]) -> Void, onEnd: @escaping () -> Void
    ) throws(RunLoopError) {
        precondition(loop.isCurrentThread, "TerminalInput must be created on its run loop's thread")
        self.fileDescriptor = fileDescriptor
        self.loop = loop
        self.onBytes = onBytes
        self.onEnd = onEnd
        guard Self.isPollable(fileDescriptor) else {
            let source = RunLoopSource(label: "terminal input (file)") { [weak self] source in
                guard let self, self.readOnce() else { return }
                source.signal()  // more may follow: read the next chunk on the next pass
            }
            chunked = source
            for mode in modes { loop.add(source, forMode: mode) }
            source.signal()
            return
        }
        let port = try RunLoopPortSource(fileDescriptor: fileDescriptor, interest: .readable, label: "terminal input") { [weak self] _, _ in
            self?.readOnce()
        }
        self.port = port
        for mode in modes { try loop.add(port, forMode: mode) }
    }

    /// Whether epoll will accept the descriptor: pipes, sockets and terminals. RunLoopPortSource only
    /// rules out regular files and directories; other character devices (`/dev/null`) pass that check
    /// but epoll refuses them when the loop adds them (EPERM, with a libevent warning on standard
    /// error). Reads from those never block, so they go the chunked way too.
    static func isPollable(_ descriptor: Int32) -> Bool {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return true }  // let the port source report it
        let kind = info.st_mode & S_IFMT
        return kind == S_IFIFO || kind == S_IFSOCK || isatty(descriptor) == 1
    }

    deinit {
        port?.invalidate()
        chunked?.invalidate()
    }

    /// Stops reading; no callback follows. Idempotent.
    public func invalidate() {
        isValid = false
        port?.invalidate()
        port = nil
        chunked?.invalidate()
        chunked = nil
    }

    /// One read. Returns whether the input may have more.
    @discardableResult
    private func readOnce() -> Bool {
        guard isValid else { return false }
        let count = buffer.withUnsafeMutableBytes { read(fileDescriptor, $0.baseAddress, $0.count) }
        if count > 0 {
            onBytes(Array(buffer[0..<count]))
            return isValid
        }
        if count < 0, errno == EINTR || errno == EAGAIN { return true }
        if count < 0 { Logger(label: "chat-node.client").warning("reading standard input failed: \(String(cString: strerror(errno)))") }
        invalidate()
        onEnd()
        return false
    }
}
