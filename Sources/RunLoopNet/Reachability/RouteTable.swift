/// The questions reachability asks about the routing table and the links: ``NetlinkSocket`` asks the
/// kernel; tests answer from a table of their own, so the judgement can be checked on any input.
///
/// Each answer is `.failure` with `fromKernel` set when the kernel said no ("no route", "no such
/// device"), and without it when the question or its answer was lost.
protocol RouteTable {
    /// The route the kernel would use to send to `address` (RTM_GETROUTE).
    func route(to address: SocketAddress) -> Result<RouteInfo, NetlinkSocket.QueryError>
    /// Every route of `family` (AF_INET or AF_INET6) in every table.
    func routes(family: Int32) -> Result<[RouteInfo], NetlinkSocket.QueryError>
    /// Every link.
    func links() -> Result<[LinkInfo], NetlinkSocket.QueryError>
    /// Every address of every link.
    func addresses() -> Result<[AddressInfo], NetlinkSocket.QueryError>
    /// The link with interface index `index`.
    func link(index: Int32) -> Result<LinkInfo, NetlinkSocket.QueryError>
}

extension NetlinkSocket: RouteTable {}
