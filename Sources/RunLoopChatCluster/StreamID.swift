/// A Redis stream entry's id, `<milliseconds>-<sequence>`, compared the way Redis orders entries.
struct StreamID: Comparable, Hashable, Sendable, CustomStringConvertible {
    var milliseconds: UInt64
    var sequence: UInt64

    /// `0-0`: before every entry; reading after it reads a stream from its start.
    static let zero = StreamID(milliseconds: 0, sequence: 0)

    init(milliseconds: UInt64, sequence: UInt64) {
        self.milliseconds = milliseconds
        self.sequence = sequence
    }

    /// `nil` for a text that is not `<digits>-<digits>`.
    init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let milliseconds = UInt64(parts[0]), let sequence = UInt64(parts[1]) else { return nil }
        self.init(milliseconds: milliseconds, sequence: sequence)
    }

    /// The greatest id before this one (`0-0` stays): reading after it reads this entry first.
    var predecessor: StreamID {
        if sequence > 0 { return StreamID(milliseconds: milliseconds, sequence: sequence - 1) }
        if milliseconds > 0 { return StreamID(milliseconds: milliseconds - 1, sequence: .max) }
        return self
    }

    static func < (lhs: StreamID, rhs: StreamID) -> Bool {
        (lhs.milliseconds, lhs.sequence) < (rhs.milliseconds, rhs.sequence)
    }

    var description: String { "\(milliseconds)-\(sequence)" }
}
