#if canImport(Glibc)
import Glibc
#endif

/// Output waiting for the socket: chunks with a read position, so partial sends never copy what is
/// left and draining is amortised O(1). Small writes are coalesced into the last chunk so a burst of
/// tiny messages goes out in few `send` calls.
struct OutputQueue {
    private var chunks: [[UInt8]] = []
    private var head = 0
    private var offset = 0
    /// Bytes waiting.
    private(set) var count = 0

    private static let coalesceLimit = 16 * 1024

    var isEmpty: Bool { count == 0 }

    mutating func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        count += bytes.count
        if head < chunks.count, bytes.count < Self.coalesceLimit,
            chunks[chunks.count - 1].count + bytes.count <= Self.coalesceLimit
        {
            chunks[chunks.count - 1].append(contentsOf: bytes)
        } else {
            chunks.append(bytes)
        }
    }

    enum Outcome {
        case drained
        case blocked
        case failed(Int32)
    }

    /// Sends until the queue is empty or the kernel pushes back. Returns the bytes sent and why it stopped.
    mutating func flush(to fd: Int32) -> (sent: Int, outcome: Outcome) {
        var sent = 0
        while head < chunks.count {
            let start = offset
            let result = chunks[head].withUnsafeBytes { raw in
                Socket.send(fd, UnsafeRawBufferPointer(rebasing: raw[start...]))
            }
            if result < 0 {
                let code = Int32(-result)
                compact()
                return (sent, code == EAGAIN || code == EWOULDBLOCK ? .blocked : .failed(code))
            }
            sent += result
            count -= result
            offset += result
            guard offset == chunks[head].count else {
                // A short send means the socket buffer is full; asking again would only see EAGAIN.
                compact()
                return (sent, .blocked)
            }
            chunks[head] = []
            head += 1
            offset = 0
        }
        // Let the array go: an idle connection should hold no buffer for output it once queued.
        chunks = []
        head = 0
        return (sent, .drained)
    }

    mutating func removeAll() {
        chunks = []
        head = 0
        offset = 0
        count = 0
    }

    private mutating func compact() {
        if head > 16 && head * 2 >= chunks.count {
            chunks.removeFirst(head)
            head = 0
        }
    }
}
