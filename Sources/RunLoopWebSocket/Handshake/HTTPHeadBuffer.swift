/// The bytes of an HTTP head as they arrive, up to the blank line that ends it: pure, so the head is
/// found the same way whatever stream carries it (TCP, or TLS over TCP).
struct HTTPHeadBuffer {
    /// What the bytes so far amount to.
    enum Outcome: Equatable {
        /// No blank line yet, and room for more.
        case incomplete
        /// The head, blank line included, and the bytes that came behind it (the peer's first frames).
        case head([UInt8], rest: [UInt8])
        /// `maximumLength` bytes without a blank line.
        case overflow
    }

    private static let end: [UInt8] = [13, 10, 13, 10]
    let maximumLength: Int
    private var bytes: [UInt8] = []

    init(maximumLength: Int) {
        self.maximumLength = max(Self.end.count, maximumLength)
    }

    mutating func append(_ more: [UInt8]) -> Outcome {
        // The blank line may straddle two arrivals: look again from just before the new bytes.
        let searchFrom = max(0, bytes.count - (Self.end.count - 1))
        bytes += more
        let limit = min(bytes.count, maximumLength)
        var index = searchFrom
        while index + Self.end.count <= limit {
            if bytes[index] == 13, bytes[index + 1] == 10, bytes[index + 2] == 13, bytes[index + 3] == 10 {
                let headEnd = index + Self.end.count
                let head = Array(bytes[..<headEnd])
                let rest = Array(bytes[headEnd...])
                bytes = []
                return .head(head, rest: rest)
            }
            index += 1
        }
        return bytes.count >= maximumLength ? .overflow : .incomplete
    }
}
