/// A pending "read exactly N" or "read up to a delimiter".
struct ReadRequest {
    enum Kind {
        case exactly(Int)
        case delimiter([UInt8], maximumLength: Int)
    }

    let kind: Kind
    let timeout: Duration?
    let completion: (TCPConnection, [UInt8]) -> Void
    /// For a delimiter read: runs instead of the failure close when the limit is passed.
    var onOverflow: ((TCPConnection) -> Void)? = nil
    /// How far the buffer was already searched for the delimiter, so arrivals are not rescanned.
    var scanned = 0

    /// Buffered input needed before the request can complete or fail.
    var need: Int {
        switch kind {
        case .exactly(let count): return count
        case .delimiter(let delimiter, let maximumLength): return maximumLength + delimiter.count
        }
    }
}
