import Testing

@testable import RunLoopNet

#if canImport(Glibc)
import Glibc
#endif

/// Addresses keep their bytes inline (no array per address): what they say must not change.
@Suite struct SocketAddressTests {
    @Test func addressesKeepTheirFamilyBytesPortAndScope() throws {
        let v4 = try #require(SocketAddress(ip: "192.168.1.20", port: 8080))
        #expect(v4.family == .ipv4 && v4.addressBytes == [192, 168, 1, 20] && v4.port == 8080)
        #expect(v4.description == "192.168.1.20:8080")
        let v6 = try #require(SocketAddress(ip: "[2001:db8::1]", port: 443))
        #expect(v6.family == .ipv6 && v6.addressBytes == [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [1])
        #expect(v6.description == "[2001:db8::1]:443")
        #expect(SocketAddress(ip: "fe80::1%1", port: 0)?.scopeID == 1)
        #expect(SocketAddress.ipv6Loopback(port: 5).ip == "::1")
        #expect(SocketAddress.ipv4Any(port: 0).ip == "0.0.0.0")
        #expect(v4.withPort(1).addressBytes == v4.addressBytes && v4.withPort(1).port == 1)
    }

    @Test func equalityAndHashingSeeEveryPart() throws {
        let a = try #require(SocketAddress(ip: "10.0.0.1", port: 1))
        #expect(a == SocketAddress(ip: "10.0.0.1", port: 1))
        #expect(a != SocketAddress(ip: "10.0.0.2", port: 1))
        #expect(a != a.withPort(2))
        // All-zero bytes both: only the family tells them apart.
        #expect(SocketAddress.ipv6Any(port: 1) != SocketAddress.ipv4Any(port: 1))
        #expect(SocketAddress(ip: "fe80::1%1", port: 0) != SocketAddress(ip: "fe80::1%2", port: 0))
        #expect(Set([a, a.withPort(1), SocketAddress(ip: "10.0.0.1", port: 1)!]).count == 1)
    }

    @Test func roundTripsThroughTheKernel() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        let wanted = SocketAddress.ipv4Loopback(port: 0)
        #expect(wanted.withSockAddr { bind(fd, $0, $1) } == 0)
        let bound = try #require(SocketAddress.of(fd, peer: false))
        #expect(bound.ip == "127.0.0.1" && bound.port != 0)
        #expect(bound == wanted.withPort(bound.port))
    }
}
