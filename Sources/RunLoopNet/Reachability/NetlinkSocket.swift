#if canImport(Glibc)
import Glibc
#endif

/// A NETLINK_ROUTE socket: either subscribed to change notifications (the monitor, watched by the
/// loop) or used to ask the kernel questions (the query socket, never subscribed, so its queue only
/// ever holds answers to our own requests).
///
/// Non-blocking and close-on-exec. The descriptor belongs to the network namespace of the thread that
/// opened it, for its whole life. Not thread-safe: loop thread only.
final class NetlinkSocket {
    private(set) var fd: Int32
    /// False once a port source took over closing the descriptor.
    private var ownsDescriptor = true
    private var sequence: UInt32 = 0
    /// Big enough for any one datagram the kernel sends (a dump batch is at most ~32 KiB).
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

    /// Opens and binds the socket; `groups` are the RTMGRP_* multicast groups to join (0: none).
    /// `netlinkProtocol` is NETLINK_ROUTE except in tests that need socket() to fail.
    init(groups: UInt32, netlinkProtocol: Int32 = Netlink.routeProtocol) throws(NetError) {
        let type = Int32(SOCK_RAW.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        fd = socket(AF_NETLINK, type, netlinkProtocol)
        guard fd >= 0 else { throw .system(errno: errno, operation: "socket(AF_NETLINK, NETLINK_ROUTE)") }
        // A struct sockaddr_nl with nl_pid 0, which lets the kernel pick a unique port id.
        var address = [UInt8](repeating: 0, count: Netlink.Layout.socketAddressSize)
        let family = Netlink.Layout.socketAddressFamily
        let groupMask = Netlink.Layout.socketAddressGroups
        withUnsafeBytes(of: UInt16(AF_NETLINK)) { address.replaceSubrange(family..<(family + 2), with: $0) }
        withUnsafeBytes(of: groups) { address.replaceSubrange(groupMask..<(groupMask + 4), with: $0) }
        let status = address.withUnsafeBytes { raw in
            bind(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
        guard status == 0 else {
            let code = errno
            Glibc.close(fd)
            fd = -1
            throw .system(errno: code, operation: "bind(AF_NETLINK)")
        }
    }

    deinit { close() }

    /// Closes the descriptor, unless a port source owns it now; either way this object is done.
    func close() {
        if fd >= 0, ownsDescriptor { Glibc.close(fd) }
        fd = -1
    }

    /// Leaves closing to someone else (a port source with `closesDescriptorOnInvalidate`), which must
    /// outlive this object's reads.
    func disown() { ownsDescriptor = false }

    enum Received {
        case messages([NetlinkMessage])
        /// Nothing queued (EAGAIN).
        case empty
        /// The kernel dropped messages because our queue was full (ENOBUFS). The socket stays usable.
        case overrun
        case failed(Int32)
    }

    /// Reads one datagram without blocking.
    func receive() -> Received {
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count >= 0 { return .messages(NetlinkMessage.parse(buffer[0..<count])) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .empty
            case ENOBUFS: return .overrun
            case let code: return .failed(code)
            }
        }
    }

    // MARK: questions

    /// Why a question got no answer.
    struct QueryError: Error {
        let errno: Int32
        let operation: String
        /// True when the kernel answered with an error (NLMSG_ERROR: "no route", "no such device");
        /// false when the question or its answer was lost on the socket.
        var fromKernel = false
        var description: String { "\(operation): \(String(cString: strerror(errno)))" }
    }

    /// Sends `request` and collects the replies with its sequence number until the answer is
    /// complete: one message, or for a dump everything up to NLMSG_DONE. An NLMSG_ERROR reply becomes
    /// `.failure` with its errno.
    ///
    /// rtnetlink answers inside the send (and each further dump batch inside the recv that drains the
    /// previous one), so a non-blocking socket never has to wait; EAGAIN here means the answer was lost.
    func ask(_ build: (UInt32) -> [UInt8], dump: Bool) -> Result<[NetlinkMessage], QueryError> {
        sequence &+= 1
        let request = build(sequence)
        let sent = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        guard sent == request.count else { return .failure(QueryError(errno: errno, operation: "netlink send")) }
        var answer: [NetlinkMessage] = []
        while true {
            switch receive() {
            case .messages(let messages):
                for message in messages where message.sequence == sequence {
                    if let code = message.errorCode {
                        if code == 0 { continue }
                        return .failure(QueryError(errno: code, operation: "netlink request", fromKernel: true))
                    }
                    if message.type == Netlink.done { return .success(answer) }
                    answer.append(message)
                    if !dump { return .success(answer) }
                }
            case .empty:
                return .failure(QueryError(errno: EAGAIN, operation: "netlink answer"))
            case .overrun:
                return .failure(QueryError(errno: ENOBUFS, operation: "netlink answer"))
            case .failed(let code):
                return .failure(QueryError(errno: code, operation: "netlink recv"))
            }
        }
    }

    /// The route the kernel would use to send to `address` (RTM_GETROUTE), as `ip route get` shows it.
    func route(to address: SocketAddress) -> Result<RouteInfo, QueryError> {
        let family = UInt8(address.family == .ipv4 ? AF_INET : AF_INET6)
        let answer = ask(
            {
                NetlinkRequest.routeLookup(
                    family: family, destination: address.addressBytes, interface: address.scopeID, sequence: $0)
            }, dump: false)
        return answer.flatMap { messages in
            guard let message = messages.first, message.type == Netlink.newRoute,
                let route = RouteInfo(payload: message.payload)
            else { return .failure(QueryError(errno: EPROTO, operation: "netlink route answer")) }
            return .success(route)
        }
    }

    /// Every route of `family` (AF_INET or AF_INET6) in every table.
    func routes(family: Int32) -> Result<[RouteInfo], QueryError> {
        ask({ NetlinkRequest.routeDump(family: UInt8(family), sequence: $0) }, dump: true).map { messages in
            messages.compactMap { $0.type == Netlink.newRoute ? RouteInfo(payload: $0.payload) : nil }
        }
    }

    /// Every link (RTM_GETLINK dump).
    func links() -> Result<[LinkInfo], QueryError> {
        ask({ NetlinkRequest.link(index: 0, dump: true, sequence: $0) }, dump: true).map { messages in
            messages.compactMap { $0.type == Netlink.newLink ? LinkInfo(payload: $0.payload) : nil }
        }
    }

    /// Every address of every link (RTM_GETADDR dump).
    func addresses() -> Result<[AddressInfo], QueryError> {
        ask({ NetlinkRequest.addressDump(sequence: $0) }, dump: true).map { messages in
            messages.compactMap { $0.type == Netlink.newAddress ? AddressInfo(payload: $0.payload) : nil }
        }
    }

    /// The link with interface index `index` (RTM_GETLINK).
    func link(index: Int32) -> Result<LinkInfo, QueryError> {
        ask({ NetlinkRequest.link(index: index, sequence: $0) }, dump: false).flatMap { messages in
            guard let message = messages.first, message.type == Netlink.newLink,
                let link = LinkInfo(payload: message.payload)
            else { return .failure(QueryError(errno: EPROTO, operation: "netlink link answer")) }
            return .success(link)
        }
    }
}
