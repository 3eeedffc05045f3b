/// The message text both drivers send: the send time (CLOCK_MONOTONIC ns, 20 zero-padded decimal
/// digits) padded with 'x' to a fixed size. Publisher and subscribers are on the same machine and read
/// the same clock, so a subscriber's receive time minus this is the delivery latency.
public enum Payload {
    public static let digits = 20

    public static func make(sentAt: UInt64, bytes: Int) -> String {
        let time = String(sentAt)
        return String(repeating: "0", count: max(0, digits - time.utf8.count)) + time
            + String(repeating: "x", count: max(0, bytes - digits))
    }

    /// The send time at the start of `text`, or nil if it does not start with 20 digits.
    public static func sentAt(_ text: String) -> UInt64? {
        var value: UInt64 = 0
        var count = 0
        for byte in text.utf8 {
            guard count < digits else { break }
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value &* 10 &+ UInt64(byte - UInt8(ascii: "0"))
            count += 1
        }
        return count == digits ? value : nil
    }
}
