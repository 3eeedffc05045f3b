import CRunLoopSupport

/// The rtnetlink(7) values and layouts reachability needs, under names that say what they are for.
/// They come from the kernel's headers through CRunLoopSupport (Swift's Glibc module does not import
/// <linux/netlink.h> or <linux/rtnetlink.h>), which also asserts the field widths and orders the
/// readers and builders below rely on. Everything is in host byte order except addresses (network order).
enum Netlink {
    // Protocol and multicast groups (RTMGRP_*, the legacy bit-mask form accepted by bind).
    static let routeProtocol = rlk_NETLINK_ROUTE
    static let groupLink = rlk_RTMGRP_LINK
    static let groupIPv4Address = rlk_RTMGRP_IPV4_IFADDR
    static let groupIPv4Route = rlk_RTMGRP_IPV4_ROUTE
    static let groupIPv6Address = rlk_RTMGRP_IPV6_IFADDR
    static let groupIPv6Route = rlk_RTMGRP_IPV6_ROUTE
    static let reachabilityGroups = groupLink | groupIPv4Address | groupIPv6Address | groupIPv4Route | groupIPv6Route

    // Message types.
    static let noop = rlk_NLMSG_NOOP
    static let error = rlk_NLMSG_ERROR
    static let done = rlk_NLMSG_DONE
    static let overrun = rlk_NLMSG_OVERRUN
    static let newLink = rlk_RTM_NEWLINK
    static let delLink = rlk_RTM_DELLINK
    static let getLink = rlk_RTM_GETLINK
    static let newAddress = rlk_RTM_NEWADDR
    static let delAddress = rlk_RTM_DELADDR
    static let getAddress = rlk_RTM_GETADDR
    static let newRoute = rlk_RTM_NEWROUTE
    static let delRoute = rlk_RTM_DELROUTE
    static let getRoute = rlk_RTM_GETROUTE

    // nlmsghdr flags.
    static let flagRequest = rlk_NLM_F_REQUEST
    static let flagDump = rlk_NLM_F_DUMP  // NLM_F_ROOT | NLM_F_MATCH

    // Route attributes and values.
    /// The attribute type without its flag bits (NLA_F_NESTED / NLA_F_NET_BYTEORDER).
    static let attributeTypeMask = rlk_NLA_TYPE_MASK
    static let routeAttributeDestination = rlk_RTA_DST
    static let routeAttributeOutputInterface = rlk_RTA_OIF
    static let routeAttributeMultipath = rlk_RTA_MULTIPATH
    static let routeAttributeTable = rlk_RTA_TABLE
    static let routeTypeUnicast = rlk_RTN_UNICAST
    static let routeTypeLocal = rlk_RTN_LOCAL
    static let tableMain = rlk_RT_TABLE_MAIN
    static let tableLocal = rlk_RT_TABLE_LOCAL
    static let nexthopLinkDown = rlk_RTNH_F_LINKDOWN

    // Link attributes and flags.
    static let linkAttributeName = rlk_IFLA_IFNAME
    static let linkFlagUp = rlk_IFF_UP
    static let linkFlagLoopback = rlk_IFF_LOOPBACK
    static let linkFlagRunning = rlk_IFF_RUNNING  // operationally up
    static let linkFlagLowerUp = rlk_IFF_LOWER_UP  // carrier

    /// RT_SCOPE_LINK: link-local addresses, which every up link has and which route nowhere else.
    static let scopeLink = rlk_RT_SCOPE_LINK

    /// Sizes of the fixed headers and offsets of the fields read from them.
    enum Layout {
        static let headerSize = rlk_nlmsghdr_size
        static let headerType = rlk_nlmsghdr_type_offset
        static let headerFlags = rlk_nlmsghdr_flags_offset
        static let headerSequence = rlk_nlmsghdr_seq_offset
        static let attributeHeaderSize = rlk_rtattr_size
        static let attributeType = rlk_rtattr_type_offset
        static let routeMessageSize = rlk_rtmsg_size
        static let routeFamily = rlk_rtmsg_family_offset
        static let routeDestinationLength = rlk_rtmsg_dst_len_offset
        static let routeTable = rlk_rtmsg_table_offset
        static let routeType = rlk_rtmsg_type_offset
        static let routeFlags = rlk_rtmsg_flags_offset
        static let nextHopSize = rlk_rtnexthop_size
        static let nextHopFlags = rlk_rtnexthop_flags_offset
        static let nextHopInterface = rlk_rtnexthop_ifindex_offset
        static let linkMessageSize = rlk_ifinfomsg_size
        static let linkIndex = rlk_ifinfomsg_index_offset
        static let linkFlags = rlk_ifinfomsg_flags_offset
        static let addressMessageSize = rlk_ifaddrmsg_size
        static let addressScope = rlk_ifaddrmsg_scope_offset
        static let addressInterface = rlk_ifaddrmsg_index_offset
        static let socketAddressSize = rlk_sockaddr_nl_size
        static let socketAddressFamily = rlk_sockaddr_nl_family_offset
        static let socketAddressGroups = rlk_sockaddr_nl_groups_offset
    }

    /// NLMSG_ALIGN, RTA_ALIGN and RTNH_ALIGN, which round alike.
    @inline(__always)
    static func align(_ length: Int) -> Int { (length + rlk_NLMSG_ALIGNTO - 1) & ~(rlk_NLMSG_ALIGNTO - 1) }

    /// A human word for a message type, for debug logs ("link", "address removed" ...).
    static func kind(of type: UInt16) -> String {
        switch type {
        case newLink: return "link changed"
        case delLink: return "link removed"
        case newAddress: return "address added"
        case delAddress: return "address removed"
        case newRoute: return "route added"
        case delRoute: return "route removed"
        case noop: return "noop"
        case error: return "error"
        case done: return "done"
        case overrun: return "overrun"
        default: return "type \(type)"
        }
    }
}

/// One netlink message inside a received datagram: its header fields and payload bytes.
struct NetlinkMessage {
    let type: UInt16
    let flags: UInt16
    let sequence: UInt32
    /// The bytes after the header, up to the message's length.
    let payload: ArraySlice<UInt8>

    /// Splits a datagram into its messages. A truncated or malformed tail is dropped: the kernel
    /// never sends one, and for change notifications only the fact that something arrived matters.
    static func parse(_ datagram: ArraySlice<UInt8>) -> [NetlinkMessage] {
        var messages: [NetlinkMessage] = []
        var offset = datagram.startIndex
        let headerSize = Netlink.Layout.headerSize
        while datagram.endIndex - offset >= headerSize {
            // nlmsg_len comes first.
            let length = Int(datagram.u32(at: offset))
            guard length >= headerSize, length <= datagram.endIndex - offset else { break }
            messages.append(
                NetlinkMessage(
                    type: datagram.u16(at: offset + Netlink.Layout.headerType),
                    flags: datagram.u16(at: offset + Netlink.Layout.headerFlags),
                    sequence: datagram.u32(at: offset + Netlink.Layout.headerSequence),
                    payload: datagram[(offset + headerSize)..<(offset + length)]))
            offset += Netlink.align(length)
        }
        return messages
    }

    /// For an NLMSG_ERROR message: the positive errno it carries (0 is an acknowledgement).
    var errorCode: Int32? {
        guard type == Netlink.error, payload.count >= 4 else { return nil }
        return -Int32(bitPattern: payload.u32(at: payload.startIndex))
    }
}

/// Route attributes (struct rtattr runs) after a fixed-size family header.
struct NetlinkAttributes {
    private(set) var values: [UInt16: ArraySlice<UInt8>] = [:]

    init(_ bytes: ArraySlice<UInt8>) {
        var offset = bytes.startIndex
        let headerSize = Netlink.Layout.attributeHeaderSize
        while bytes.endIndex - offset >= headerSize {
            // rta_len comes first.
            let length = Int(bytes.u16(at: offset))
            let type = bytes.u16(at: offset + Netlink.Layout.attributeType) & Netlink.attributeTypeMask
            guard length >= headerSize, length <= bytes.endIndex - offset else { break }
            values[type] = bytes[(offset + headerSize)..<(offset + length)]
            offset += Netlink.align(length)
        }
    }

    subscript(type: UInt16) -> ArraySlice<UInt8>? { values[type] }

    func u32(_ type: UInt16) -> UInt32? {
        guard let value = values[type], value.count >= 4 else { return nil }
        return value.u32(at: value.startIndex)
    }

    /// A NUL-terminated string attribute (IFLA_IFNAME).
    func string(_ type: UInt16) -> String? {
        guard let value = values[type] else { return nil }
        return String(decoding: value.prefix { $0 != 0 }, as: UTF8.self)
    }
}

/// A route as RTM_NEWROUTE describes it: enough to tell a default route and where it leaves.
struct RouteInfo: Equatable {
    var family: UInt8
    var destinationLength: UInt8
    var table: UInt32
    var type: UInt8
    var flags: UInt32
    /// Output interfaces: RTA_OIF, or each next hop of a multipath route, with that hop's flags.
    var nextHops: [(interface: Int32, flags: UInt32)]

    static func == (a: RouteInfo, b: RouteInfo) -> Bool {
        a.family == b.family && a.destinationLength == b.destinationLength && a.table == b.table
            && a.type == b.type && a.flags == b.flags
            && a.nextHops.elementsEqual(b.nextHops) { $0.interface == $1.interface && $0.flags == $1.flags }
    }

    /// A route as a test's virtual routing table holds it.
    init(
        family: UInt8, destinationLength: UInt8, table: UInt32 = Netlink.tableMain, type: UInt8 = Netlink.routeTypeUnicast,
        flags: UInt32 = 0, nextHops: [(interface: Int32, flags: UInt32)]
    ) {
        self.family = family
        self.destinationLength = destinationLength
        self.table = table
        self.type = type
        self.flags = flags
        self.nextHops = nextHops
    }

    /// Reads an RTM_NEWROUTE payload (rtmsg + attributes); nil if too short.
    init?(payload: ArraySlice<UInt8>) {
        guard payload.count >= Netlink.Layout.routeMessageSize else { return nil }
        let base = payload.startIndex
        family = payload[base + Netlink.Layout.routeFamily]
        destinationLength = payload[base + Netlink.Layout.routeDestinationLength]
        type = payload[base + Netlink.Layout.routeType]
        flags = payload.u32(at: base + Netlink.Layout.routeFlags)
        let attributes = NetlinkAttributes(payload[(base + Netlink.Layout.routeMessageSize)...])
        // rtm_table holds only tables below 256; RTA_TABLE holds any.
        table = attributes.u32(Netlink.routeAttributeTable) ?? UInt32(payload[base + Netlink.Layout.routeTable])
        nextHops = []
        if let interface = attributes.u32(Netlink.routeAttributeOutputInterface) {
            nextHops.append((Int32(bitPattern: interface), flags))
        }
        if let hops = attributes[Netlink.routeAttributeMultipath] {
            // Each struct rtnexthop (rtnh_len first) is followed by its attributes.
            let hopSize = Netlink.Layout.nextHopSize
            var offset = hops.startIndex
            while hops.endIndex - offset >= hopSize {
                let length = Int(hops.u16(at: offset))
                guard length >= hopSize, length <= hops.endIndex - offset else { break }
                nextHops.append(
                    (
                        Int32(bitPattern: hops.u32(at: offset + Netlink.Layout.nextHopInterface)),
                        UInt32(hops[offset + Netlink.Layout.nextHopFlags])
                    ))
                offset += Netlink.align(length)
            }
        }
    }
}

/// A link as RTM_NEWLINK describes it.
struct LinkInfo: Equatable {
    var index: Int32
    var name: String
    var flags: UInt32

    /// Reads an RTM_NEWLINK payload (ifinfomsg + attributes); nil if too short.
    init?(payload: ArraySlice<UInt8>) {
        guard payload.count >= Netlink.Layout.linkMessageSize else { return nil }
        let base = payload.startIndex
        index = Int32(bitPattern: payload.u32(at: base + Netlink.Layout.linkIndex))
        flags = payload.u32(at: base + Netlink.Layout.linkFlags)
        let attributes = NetlinkAttributes(payload[(base + Netlink.Layout.linkMessageSize)...])
        name = attributes.string(Netlink.linkAttributeName) ?? "#\(index)"
    }

    init(index: Int32, name: String, flags: UInt32) {
        self.index = index
        self.name = name
        self.flags = flags
    }

    /// Why traffic cannot leave through this link, or nil if it can.
    ///
    /// IFF_UP is the administrative state (`ip link set down`); IFF_LOWER_UP is the carrier (cable,
    /// Wi-Fi association, the other end of a veth). Loopback has no carrier to lose.
    var problem: String? {
        if flags & Netlink.linkFlagUp == 0 { return "link \(name) down" }
        if flags & Netlink.linkFlagLoopback != 0 { return nil }
        if flags & Netlink.linkFlagLowerUp == 0 || flags & Netlink.linkFlagRunning == 0 {
            return "link \(name) has no carrier"
        }
        return nil
    }
}

/// Builds request messages, writing each fixed header field by field in the kernel's order (order and
/// widths asserted in CRunLoopSupport's netlink.c).
struct NetlinkRequest {
    private(set) var bytes: [UInt8]

    /// A header with length 0 (fixed by ``finish()``).
    init(type: UInt16, flags: UInt16, sequence: UInt32) {
        bytes = []
        bytes.reserveCapacity(64)
        append(UInt32(0))
        append(type)
        append(flags)
        append(sequence)
        append(UInt32(0))  // port id 0: the kernel
    }

    mutating func append<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value) { bytes.append(contentsOf: $0) }
    }

    mutating func append(bytes more: [UInt8]) { bytes.append(contentsOf: more) }

    /// One rtattr with `value`, padded to 4 bytes.
    mutating func appendAttribute(_ type: UInt16, _ value: [UInt8]) {
        append(UInt16(Netlink.Layout.attributeHeaderSize + value.count))
        append(type)
        bytes.append(contentsOf: value)
        while bytes.count % 4 != 0 { bytes.append(0) }
    }

    /// Writes the total length into the header and returns the message.
    func finish() -> [UInt8] {
        var result = bytes
        withUnsafeBytes(of: UInt32(result.count)) { raw in
            for (index, byte) in raw.enumerated() { result[index] = byte }
        }
        return result
    }

    /// RTM_GETROUTE for one destination: the kernel's own route lookup, no packet sent.
    static func routeLookup(family: UInt8, destination: [UInt8], interface: UInt32, sequence: UInt32) -> [UInt8] {
        var request = NetlinkRequest(type: Netlink.getRoute, flags: Netlink.flagRequest, sequence: sequence)
        // rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags.
        request.append(bytes: [family, UInt8(destination.count * 8), 0, 0, 0, 0, 0, 0])
        request.append(UInt32(0))
        request.appendAttribute(Netlink.routeAttributeDestination, destination)
        if interface != 0 {
            withUnsafeBytes(of: interface) { request.appendAttribute(Netlink.routeAttributeOutputInterface, Array($0)) }
        }
        return request.finish()
    }

    /// RTM_GETROUTE dump of every route of `family`.
    static func routeDump(family: UInt8, sequence: UInt32) -> [UInt8] {
        var request = NetlinkRequest(type: Netlink.getRoute, flags: Netlink.flagRequest | Netlink.flagDump, sequence: sequence)
        request.append(bytes: [family, 0, 0, 0, 0, 0, 0, 0])
        request.append(UInt32(0))
        return request.finish()
    }

    /// RTM_GETLINK for one interface index, or every link when `index` is 0 and `dump` is set.
    static func link(index: Int32, dump: Bool = false, sequence: UInt32) -> [UInt8] {
        let flags = dump ? Netlink.flagRequest | Netlink.flagDump : Netlink.flagRequest
        var request = NetlinkRequest(type: Netlink.getLink, flags: flags, sequence: sequence)
        // ifinfomsg: family, pad, type, index, flags, change.
        request.append(bytes: [0, 0, 0, 0])
        request.append(index)
        request.append(UInt32(0))
        request.append(UInt32(0))
        return request.finish()
    }
}

extension NetlinkRequest {
    /// RTM_GETADDR dump of every address of every family.
    static func addressDump(sequence: UInt32) -> [UInt8] {
        var request = NetlinkRequest(type: Netlink.getAddress, flags: Netlink.flagRequest | Netlink.flagDump, sequence: sequence)
        // ifaddrmsg: family, prefixlen, flags, scope, index.
        request.append(bytes: [0, 0, 0, 0])
        request.append(UInt32(0))
        return request.finish()
    }
}

/// An address as RTM_NEWADDR describes it: only where it lives and how far it reaches.
struct AddressInfo: Equatable {
    var interface: Int32
    var scope: UInt8

    init(interface: Int32, scope: UInt8) {
        self.interface = interface
        self.scope = scope
    }

    /// Reads an RTM_NEWADDR payload (ifaddrmsg); nil if too short.
    init?(payload: ArraySlice<UInt8>) {
        guard payload.count >= Netlink.Layout.addressMessageSize else { return nil }
        scope = payload[payload.startIndex + Netlink.Layout.addressScope]
        interface = Int32(bitPattern: payload.u32(at: payload.startIndex + Netlink.Layout.addressInterface))
    }
}

extension ArraySlice<UInt8> {
    /// A host-order integer at an absolute index of the slice.
    @inline(__always)
    func u16(at index: Int) -> UInt16 {
        withUnsafeBytes { $0.loadUnaligned(fromByteOffset: index - startIndex, as: UInt16.self) }
    }

    @inline(__always)
    func u32(at index: Int) -> UInt32 {
        withUnsafeBytes { $0.loadUnaligned(fromByteOffset: index - startIndex, as: UInt32.self) }
    }
}
