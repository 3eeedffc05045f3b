#if canImport(Glibc)
import Glibc
#endif

extension NetworkReachability {
    /// What the routing table says about one address, before it is put into words.
    enum AddressVerdict: Equatable {
        case reachable
        /// The kernel has no (usable) route: worth naming the links that are down, since taking a
        /// link down removes its routes and leaves the lookup saying only "no route".
        case noRoute(String)
        /// A route exists but its link does not work; the reason names the link.
        case brokenLink(String)
    }

    /// Judges the path from the kernel's answers. `.failure` only when an answer was lost (the caller
    /// asks again); the kernel saying "no route" is a judgement, `.unreachable`.
    static func judge(target: SocketAddress?, table: some RouteTable) -> Result<NetworkPath, NetlinkSocket.QueryError> {
        guard let target else { return judgeDefaultRoute(table: table) }
        return verdict(for: target, table: table).map { verdict in
            switch verdict {
            case .reachable: return .reachable
            case .noRoute(let reason): return .unreachable(reason + brokenLinksNote(table: table))
            case .brokenLink(let reason): return .unreachable(reason)
            }
        }
    }

    /// Judges a host name by the addresses it resolved to: reachable when any of them is, otherwise
    /// unreachable with each distinct reason, in address order ("chat.example: no route to 10.1.2.3,
    /// no route to 2001:db8::1; link eth0 down").
    ///
    /// No addresses (no lookup has succeeded yet) is no judgement at all: `.reachable`, without a
    /// question to the kernel. The owner then tries, and its connection looks the name up itself —
    /// judging "the network" instead would keep a client from ever trying a name that resolves to a
    /// loopback or an on-link address in a network without a default route.
    static func judge(host: String, addresses: [SocketAddress], table: some RouteTable) -> Result<NetworkPath, NetlinkSocket.QueryError> {
        guard !addresses.isEmpty else { return .success(.reachable) }
        var reasons: [String] = []
        var noRoute = false
        for address in addresses {
            let reason: String
            switch verdict(for: address, table: table) {
            case .failure(let error): return .failure(error)
            case .success(.reachable): return .success(.reachable)
            case .success(.noRoute(let why)):
                noRoute = true
                reason = why
            case .success(.brokenLink(let why)):
                reason = why
            }
            if !reasons.contains(reason) { reasons.append(reason) }
        }
        // A link already named for one address is not named again in the note.
        let note = noRoute ? brokenLinksNote(table: table, excluding: reasons) : ""
        return .success(.unreachable("\(host): " + reasons.joined(separator: ", ") + note))
    }

    /// One address: the kernel's route lookup, then the links that route leaves through.
    static func verdict(for target: SocketAddress, table: some RouteTable) -> Result<AddressVerdict, NetlinkSocket.QueryError> {
        // Loopback needs no link that can go away (and an empty namespace's lo may even be down).
        if target.isLoopback { return .success(.reachable) }
        switch table.route(to: target) {
        case .failure(let error) where error.fromKernel:
            let name = target.scopeID == 0 ? target.ip : "\(target.ip)%\(target.scopeID)"
            // ENETUNREACH is the plain "no route"; name anything else (EHOSTUNREACH for an unreachable
            // route, EINVAL for a blackhole, ENODEV for a scope that names no interface).
            var reason = "no route to \(name)"
            if error.errno != ENETUNREACH { reason += " (\(String(cString: strerror(error.errno))))" }
            return .success(.noRoute(reason))
        case .failure(let error):
            return .failure(error)
        case .success(let route):
            // One of our own addresses: delivered locally whatever the link's state.
            if route.type == Netlink.routeTypeLocal { return .success(.reachable) }
            return judgeLinks(of: [route], table: table).map { path in
                if case .unreachable(let reason)? = path { return .brokenLink(reason) }
                return .reachable
            }
        }
    }

    /// Any default route, IPv4 or IPv6, in any table but `local`, whose link works.
    private static func judgeDefaultRoute(table: some RouteTable) -> Result<NetworkPath, NetlinkSocket.QueryError> {
        var defaults: [RouteInfo] = []
        for family in [AF_INET, AF_INET6] {
            switch table.routes(family: family) {
            case .success(let routes):
                defaults += routes.filter {
                    $0.destinationLength == 0 && $0.type == Netlink.routeTypeUnicast && $0.table != Netlink.tableLocal
                }
            case .failure(let error) where error.fromKernel:
                // EAFNOSUPPORT: IPv6 disabled. Nothing to find there.
                continue
            case .failure(let error):
                return .failure(error)
            }
        }
        if defaults.isEmpty { return .success(.unreachable("no default route" + brokenLinksNote(table: table))) }
        return judgeLinks(of: defaults, table: table).map { $0 ?? .reachable }
    }

    /// "; link eth0 down" for the configured links that are not working, to say why a route is
    /// missing: taking a link down administratively removes its routes, so the route lookup alone only
    /// says "no route". Only links with an address wider than link-local count, so that the tunnels a
    /// host keeps down by default (tunl0, sit0) are not blamed, nor problems already `named` in the
    /// reason. Empty when there is nothing to blame (or a question fails: this is only a hint).
    private static func brokenLinksNote(table: some RouteTable, excluding named: [String] = []) -> String {
        guard case .success(let links) = table.links(), case .success(let addresses) = table.addresses() else { return "" }
        let configured = Set(addresses.filter { $0.scope < Netlink.scopeLink }.map(\.interface))
        let problems =
            links
            .filter { $0.flags & Netlink.linkFlagLoopback == 0 && configured.contains($0.index) }
            .compactMap(\.problem)
            .filter { !named.contains($0) }
        return problems.isEmpty ? "" : "; " + problems.joined(separator: ", ")
    }

    /// `nil` when one next hop of one of `routes` leaves through a working link; otherwise the reason
    /// for the first that does not.
    ///
    /// The route alone is not enough: when a link loses its carrier (cable out, peer veth down) the
    /// kernel keeps IPv4 routes through it, merely flagged `linkdown`, and still answers RTM_GETROUTE
    /// with them. Only an administrative down removes them.
    private static func judgeLinks(of routes: [RouteInfo], table: some RouteTable) -> Result<NetworkPath?, NetlinkSocket.QueryError> {
        var firstProblem: String?
        var links: [Int32: LinkInfo] = [:]
        for route in routes {
            // A route without an output interface (a gateway resolved elsewhere): the kernel's word.
            if route.nextHops.isEmpty { return .success(nil) }
            for hop in route.nextHops {
                let link: LinkInfo
                if let known = links[hop.interface] {
                    link = known
                } else {
                    switch table.link(index: hop.interface) {
                    case .success(let found): link = found
                    case .failure(let error) where error.fromKernel:
                        // The link went away between the two questions; the next message says so.
                        link = LinkInfo(index: hop.interface, name: "#\(hop.interface)", flags: 0)
                    case .failure(let error):
                        return .failure(error)
                    }
                    links[hop.interface] = link
                }
                var problem = link.problem
                if problem == nil, hop.flags & Netlink.nexthopLinkDown != 0 { problem = "link \(link.name) has no carrier" }
                guard let problem else { return .success(nil) }
                if firstProblem == nil { firstProblem = problem }
            }
        }
        return .success(.unreachable(firstProblem ?? "no usable route"))
    }
}

extension SocketAddress {
    /// 127.0.0.0/8, ::1, or ::ffff:127.x.y.z.
    var isLoopback: Bool {
        switch family {
        case .ipv4:
            return addressBytes.first == 127
        case .ipv6:
            if addressBytes == Array(repeating: 0, count: 15) + [1] { return true }
            let mapped = Array(repeating: UInt8(0), count: 10) + [0xFF, 0xFF]
            return Array(addressBytes.prefix(12)) == mapped && addressBytes[12] == 127
        }
    }
}
