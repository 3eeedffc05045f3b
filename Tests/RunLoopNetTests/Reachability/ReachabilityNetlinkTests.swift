import Glibc
import Testing

@testable import RunLoopNet

/// The netlink messages reachability reads, built by hand: no socket, no root.
@Suite("Reachability netlink parsing")
struct ReachabilityNetlinkTests {
    private func message(type: UInt16, sequence: UInt32 = 7, body: (inout NetlinkRequest) -> Void) -> [UInt8] {
        var request = NetlinkRequest(type: type, flags: 0, sequence: sequence)
        body(&request)
        return request.finish()
    }

    private func linkMessage(index: Int32, flags: UInt32, name: String) -> [UInt8] {
        message(type: Netlink.newLink) {
            $0.append(bytes: [0, 0, 1, 0])  // family, pad, type ARPHRD_ETHER
            $0.append(index)
            $0.append(flags)
            $0.append(UInt32(0))
            $0.appendAttribute(Netlink.linkAttributeName, Array(name.utf8) + [0])
        }
    }

    @Test("a datagram splits into its aligned messages; a truncated tail is dropped")
    func splitsDatagrams() {
        let link = linkMessage(index: 3, flags: 0x1_0041, name: "eth0")
        let error = message(type: Netlink.error) {
            $0.append(Int32(-ENETUNREACH))
            $0.append(bytes: Array(repeating: 0, count: 16))  // the request's header
        }
        let datagram = link + error + [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
        let messages = NetlinkMessage.parse(datagram[...])
        #expect(messages.map(\.type) == [Netlink.newLink, Netlink.error])
        #expect(messages.map(\.sequence) == [7, 7])
        #expect(messages[0].errorCode == nil)
        #expect(messages[1].errorCode == ENETUNREACH)
        // A length that runs past the end stops the walk instead of reading beyond it.
        var lying = link
        lying[0] = 200
        #expect(NetlinkMessage.parse(lying[...]).isEmpty)
    }

    @Test("a link's flags say whether traffic can leave through it, and why not")
    func linkProblems() throws {
        let bytes = linkMessage(index: 3, flags: Netlink.linkFlagUp | Netlink.linkFlagRunning | Netlink.linkFlagLowerUp, name: "eth0")
        let working = try #require(LinkInfo(payload: NetlinkMessage.parse(bytes[...])[0].payload))
        #expect(working == LinkInfo(index: 3, name: "eth0", flags: 0x1_0041))
        #expect(working.problem == nil)
        #expect(LinkInfo(index: 3, name: "eth0", flags: 0).problem == "link eth0 down")
        #expect(LinkInfo(index: 3, name: "eth0", flags: Netlink.linkFlagUp).problem == "link eth0 has no carrier")
        #expect(LinkInfo(index: 1, name: "lo", flags: Netlink.linkFlagUp | Netlink.linkFlagLoopback).problem == nil)
    }

    @Test("a multipath default route lists every next hop with its flags")
    func multipathRoute() throws {
        let bytes = message(type: Netlink.newRoute) {
            $0.append(bytes: [UInt8(AF_INET), 0, 0, 0, 254, 3, 0, Netlink.routeTypeUnicast])
            $0.append(UInt32(0))
            var hops = NetlinkRequest(type: 0, flags: 0, sequence: 0)
            hops.append(bytes: [8, 0, 0, 0]); hops.append(Int32(4))  // len 8, flags 0, hops 0, ifindex 4
            hops.append(bytes: [8, 0, UInt8(Netlink.nexthopLinkDown), 0]); hops.append(Int32(5))
            $0.appendAttribute(Netlink.routeAttributeMultipath, Array(hops.bytes.dropFirst(Netlink.Layout.headerSize)))
        }
        let route = try #require(RouteInfo(payload: NetlinkMessage.parse(bytes[...])[0].payload))
        #expect(route.destinationLength == 0)
        #expect(route.table == 254)
        #expect(route.type == Netlink.routeTypeUnicast)
        #expect(route.nextHops.map(\.interface) == [4, 5])
        #expect(route.nextHops.map(\.flags) == [0, Netlink.nexthopLinkDown])
    }

    @Test("RTA_TABLE overrides the 8-bit table of rtmsg, and RTA_OIF gives the interface")
    func routeTableAttribute() throws {
        let bytes = message(type: Netlink.newRoute) {
            $0.append(bytes: [UInt8(AF_INET6), 0, 0, 0, 252, 3, 0, Netlink.routeTypeUnicast])
            $0.append(UInt32(0))
            $0.appendAttribute(Netlink.routeAttributeTable, withUnsafeBytes(of: UInt32(51820)) { Array($0) })
            $0.appendAttribute(Netlink.routeAttributeOutputInterface, withUnsafeBytes(of: UInt32(9)) { Array($0) })
        }
        let route = try #require(RouteInfo(payload: NetlinkMessage.parse(bytes[...])[0].payload))
        #expect(route.table == 51820)
        #expect(route.nextHops.map(\.interface) == [9])
    }

    @Test("a route lookup request is what `ip route get` sends")
    func routeLookupRequest() throws {
        let target = [UInt8]([10, 1, 2, 3])
        let bytes = NetlinkRequest.routeLookup(family: UInt8(AF_INET), destination: target, interface: 0, sequence: 42)
        let parsed = NetlinkMessage.parse(bytes[...])
        #expect(parsed.count == 1)
        #expect(bytes.count == 16 + 12 + 8)
        #expect(parsed[0].type == Netlink.getRoute)
        #expect(parsed[0].flags == Netlink.flagRequest)
        #expect(parsed[0].sequence == 42)
        let payload = parsed[0].payload
        #expect(payload[payload.startIndex + 1] == 32, "a /32 destination")
        let attributes = NetlinkAttributes(payload.dropFirst(Netlink.Layout.routeMessageSize))
        #expect(attributes[Netlink.routeAttributeDestination].map(Array.init) == target)
        #expect(attributes[Netlink.routeAttributeOutputInterface] == nil)
    }
}
