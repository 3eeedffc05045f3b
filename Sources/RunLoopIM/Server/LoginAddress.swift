import RunLoopIMCore
import RunLoopNet

/// Whom a login limit counts: an IPv4 address, or an IPv6 /64 — one subscriber's usual allocation,
/// so a host cannot dodge the limits by changing the low 64 bits of its address. An IPv4-mapped IPv6
/// address (a dual-stack listener's IPv4 peer) counts as the IPv4 address.
struct LoginAddress: Hashable, Sendable, CustomStringConvertible {
    let bytes: [UInt8]

    init(_ address: SocketAddress?) {
        guard let address else {
            bytes = []
            return
        }
        let raw = address.addressBytes
        switch address.family {
        case .ipv4:
            bytes = raw
        case .ipv6:
            if raw.count == 16, raw[0..<10].allSatisfy({ $0 == 0 }), raw[10] == 0xFF, raw[11] == 0xFF {
                bytes = Array(raw[12..<16])
            } else {
                bytes = Array(raw.prefix(8))
            }
        }
    }

    var description: String {
        switch bytes.count {
        case 4:
            return bytes.map(String.init).joined(separator: ".")
        case 8:
            let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            return groups.joined(separator: ":") + "::/64"
        default:
            return "unknown address"
        }
    }
}
