import Glibc
import Testing

@testable import RunLoopNet

/// A routing table made up by the test: routes per destination, links, addresses, and questions that
/// get lost. Counts the questions asked.
final class VirtualRouteTable: RouteTable {
    static let eth0: Int32 = 2
    static let wlan0: Int32 = 3
    static let up = Netlink.linkFlagUp | Netlink.linkFlagRunning | Netlink.linkFlagLowerUp

    /// The route the kernel would pick, by destination IP; a destination missing here gets ENETUNREACH.
    var routes: [String: RouteInfo] = [:]
    /// Every route per family, for the default-route judgement.
    var table: [Int32: [RouteInfo]] = [:]
    var linksByIndex: [Int32: LinkInfo] = [
        1: LinkInfo(index: 1, name: "lo", flags: Netlink.linkFlagUp | Netlink.linkFlagLoopback | Netlink.linkFlagRunning),
        eth0: LinkInfo(index: eth0, name: "eth0", flags: up),
        wlan0: LinkInfo(index: wlan0, name: "wlan0", flags: up)
    ]
    /// eth0 and wlan0 have a global address each, so a down link among them is named.
    var addressList = [AddressInfo(interface: eth0, scope: 0), AddressInfo(interface: wlan0, scope: 0)]
    /// Destinations whose question is lost on the socket (EAGAIN).
    var lost: Set<String> = []
    private(set) var questions = 0

    /// A route to `ip` through `interface`.
    func route(_ ip: String, via interface: Int32, hopFlags: UInt32 = 0) {
        let family = ip.contains(":") ? UInt8(AF_INET6) : UInt8(AF_INET)
        routes[ip] = RouteInfo(
            family: family, destinationLength: family == UInt8(AF_INET) ? 24 : 64,
            nextHops: [(interface, hopFlags)])
    }

    func setLink(_ index: Int32, flags: UInt32) {
        linksByIndex[index]?.flags = flags
    }

    func route(to address: SocketAddress) -> Result<RouteInfo, NetlinkSocket.QueryError> {
        questions += 1
        if lost.contains(address.ip) { return .failure(.init(errno: EAGAIN, operation: "netlink answer")) }
        guard let route = routes[address.ip] else {
            return .failure(.init(errno: ENETUNREACH, operation: "netlink request", fromKernel: true))
        }
        return .success(route)
    }

    func routes(family: Int32) -> Result<[RouteInfo], NetlinkSocket.QueryError> {
        questions += 1
        return .success(table[family] ?? [])
    }

    func links() -> Result<[LinkInfo], NetlinkSocket.QueryError> {
        questions += 1
        return .success(linksByIndex.values.sorted { $0.index < $1.index })
    }

    func addresses() -> Result<[AddressInfo], NetlinkSocket.QueryError> {
        questions += 1
        return .success(addressList)
    }

    func link(index: Int32) -> Result<LinkInfo, NetlinkSocket.QueryError> {
        questions += 1
        guard let link = linksByIndex[index] else {
            return .failure(.init(errno: ENODEV, operation: "netlink request", fromKernel: true))
        }
        return .success(link)
    }
}

private func addresses(_ ips: String...) -> [SocketAddress] {
    ips.map { SocketAddress(ip: $0, port: 0)! }
}

/// The judgement of a host name by its resolved addresses, on a virtual routing table.
@Suite("Reachability: judging a host name")
struct ReachabilityEvaluationTests {
    @Test("before any lookup has succeeded a name is reachable, and the table is not asked")
    func unresolvedIsReachable() throws {
        let table = VirtualRouteTable()
        let path = NetworkReachability.judge(host: "chat.test", addresses: [], table: table)
        #expect(try path.get() == .reachable)
        #expect(table.questions == 0)
    }

    @Test("a name whose address has a working route is reachable in a network without a default route")
    func onLinkAddressWithoutDefaultRoute() throws {
        let table = VirtualRouteTable()
        table.route("192.168.7.20", via: VirtualRouteTable.eth0)
        // The old judgement for names: any default route. There is none.
        #expect(try NetworkReachability.judge(target: nil, table: table).get() == .unreachable("no default route"))
        let path = NetworkReachability.judge(host: "chat.lan", addresses: addresses("192.168.7.20"), table: table)
        #expect(try path.get() == .reachable)
    }

    @Test("localhost's addresses are loopback: reachable without a question, whatever the links")
    func loopbackName() throws {
        let table = VirtualRouteTable()
        table.setLink(1, flags: Netlink.linkFlagLoopback)
        let path = NetworkReachability.judge(host: "localhost", addresses: addresses("::1", "127.0.0.1"), table: table)
        #expect(try path.get() == .reachable)
        #expect(table.questions == 0)
    }

    @Test("reachable when any address is: a first address without a route does not decide")
    func anyAddressWins() throws {
        let table = VirtualRouteTable()
        table.route("10.1.2.3", via: VirtualRouteTable.wlan0)
        let path = NetworkReachability.judge(host: "chat.test", addresses: addresses("2001:db8::1", "10.1.2.3"), table: table)
        #expect(try path.get() == .reachable)
    }

    @Test("no address has a route: every distinct reason in address order, the down link named once")
    func noRouteToAny() throws {
        let table = VirtualRouteTable()
        table.setLink(VirtualRouteTable.eth0, flags: 0)
        let path = NetworkReachability.judge(host: "chat.test", addresses: addresses("10.1.2.3", "2001:db8::1"), table: table)
        #expect(try path.get() == .unreachable("chat.test: no route to 10.1.2.3, no route to 2001:db8::1; link eth0 down"))
    }

    @Test("routes kept through a link without carrier: the link is the reason, said once for two addresses")
    func noCarrier() throws {
        let table = VirtualRouteTable()
        table.route("10.1.2.3", via: VirtualRouteTable.eth0, hopFlags: Netlink.nexthopLinkDown)
        table.route("10.1.2.4", via: VirtualRouteTable.eth0, hopFlags: Netlink.nexthopLinkDown)
        table.setLink(VirtualRouteTable.eth0, flags: Netlink.linkFlagUp)
        let path = NetworkReachability.judge(host: "chat.test", addresses: addresses("10.1.2.3", "10.1.2.4"), table: table)
        #expect(try path.get() == .unreachable("chat.test: link eth0 has no carrier"))
    }

    @Test("a broken link for one address and no route for another: both said, then the down link")
    func mixedReasons() throws {
        let table = VirtualRouteTable()
        table.route("10.1.2.3", via: VirtualRouteTable.eth0)
        table.setLink(VirtualRouteTable.eth0, flags: Netlink.linkFlagUp)
        table.setLink(VirtualRouteTable.wlan0, flags: 0)
        let path = NetworkReachability.judge(host: "chat.test", addresses: addresses("10.1.2.3", "2001:db8::1"), table: table)
        #expect(try path.get() == .unreachable("chat.test: link eth0 has no carrier, no route to 2001:db8::1; link wlan0 down"))
    }

    @Test("a lost answer is no judgement: the caller asks again")
    func lostAnswer() {
        let table = VirtualRouteTable()
        table.lost = ["10.1.2.3"]
        let path = NetworkReachability.judge(host: "chat.test", addresses: addresses("10.1.2.3"), table: table)
        guard case .failure(let error) = path else {
            Issue.record("expected a failure, got \(path)")
            return
        }
        #expect(!error.fromKernel)
    }

    @Test("an address target is judged as before: the kernel's no route, then the down link")
    func addressTarget() throws {
        let table = VirtualRouteTable()
        table.setLink(VirtualRouteTable.wlan0, flags: 0)
        let path = NetworkReachability.judge(target: SocketAddress(ip: "10.1.2.3", port: 7100), table: table)
        #expect(try path.get() == .unreachable("no route to 10.1.2.3; link wlan0 down"))
        table.route("10.1.2.3", via: VirtualRouteTable.eth0)
        #expect(try NetworkReachability.judge(target: SocketAddress(ip: "10.1.2.3", port: 7100), table: table).get() == .reachable)
    }
}
