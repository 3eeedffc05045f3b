/// The few rtnetlink(7) definitions reachability needs, spelled out here because Swift's Glibc module
/// does not import <linux/netlink.h> or <linux/rtnetlink.h>. These are kernel ABI: the numbers and
/// layouts never change. Everything is in host byte order except addresses (network order).
enum Netlink {
    // Protocol and multicast groups (RTMGRP_*, the legacy bit-mask form accepted by bind).
    static let routeProtocol: Int32 = 0  // NETLINK_ROUTE
    static let groupLink: UInt32 = 0x1  // RTMGRP_LINK
    static let groupIPv4Address: UInt32 = 0x10  // RTMGRP_IPV4_IFADDR
    static let groupIPv4Route: UInt32 = 0x40  // RTMGRP_IPV4_ROUTE
    static let groupIPv6Address: UInt32 = 0x100  // RTMGRP_IPV6_IFADDR
    static let groupIPv6Route: UInt32 = 0x400  // RTMGRP_IPV6_ROUTE
    static let reachabilityGroups = groupLink | groupIPv4Address | groupIPv6Address | groupIPv4Route | groupIPv6Route

    // Message types.
    static let noop: UInt16 = 1  // NLMSG_NOOP
    static let error: UInt16 = 2  // NLMSG_ERROR
    static let done: UInt16 = 3  // NLMSG_DONE
    static let overrun: UInt16 = 4  // NLMSG_OVERRUN
    static let newLink: UInt16 = 16  // RTM_NEWLINK
    static let delLink: UInt16 = 17
    static let getLink: UInt16 = 18
    static let newAddress: UInt16 = 20  // RTM_NEWADDR
    static let delAddress: UInt16 = 21
    static let getAddress: UInt16 = 22
    static let newRoute: UInt16 = 24  // RTM_NEWROUTE
    static let delRoute: UInt16 = 25
    static let getRoute: UInt16 = 26

    // nlmsghdr flags.
    static let flagRequest: UInt16 = 0x1  // NLM_F_REQUEST
    static let flagDump: UInt16 = 0x300  // NLM_F_ROOT | NLM_F_MATCH

    // Route attributes and values.
    static let routeAttributeDestination: UInt16 = 1  // RTA_DST
    static let routeAttributeOutputInterface: UInt16 = 4  // RTA_OIF
    static let routeAttributeMultipath: UInt16 = 9  // RTA_MULTIPATH
    static let routeAttributeTable: UInt16 = 15  // RTA_TABLE
    static let routeTypeUnicast: UInt8 = 1  // RTN_UNICAST
    static let routeTypeLocal: UInt8 = 2  // RTN_LOCAL
    static let tableLocal: UInt32 = 255  // RT_TABLE_LOCAL
    static let nexthopLinkDown: UInt32 = 0x10  // RTNH_F_LINKDOWN

    // Link attributes and flags.
    static let linkAttributeName: UInt16 = 3  // IFLA_IFNAME
    static let linkFlagUp: UInt32 = 0x1  // IFF_UP
    static let linkFlagLoopback: UInt32 = 0x8  // IFF_LOOPBACK
    static let linkFlagRunning: UInt32 = 0x40  // IFF_RUNNING (operationally up)
    static let linkFlagLowerUp: UInt32 = 0x1_0000  // IFF_LOWER_UP (carrier)

    // Sizes.
    static let headerSize = 16  // nlmsghdr
    static let routeMessageSize = 12  // rtmsg
    static let linkMessageSize = 16  // ifinfomsg
    static let addressMessageSize = 8  // ifaddrmsg
    /// RT_SCOPE_LINK: link-local addresses, which every up link has and which route nowhere else.
    static let scopeLink: UInt8 = 253

    /// NLMSG_ALIGN / RTA_ALIGN: both round up to 4.
    @inline(__always)
    static func align(_ length: Int) -> Int { (length + 3) & ~3 }

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
    /// The bytes after the 16-byte header, up to the message's length.
    let payload: ArraySlice<UInt8>

    /// Splits a datagram into its messages. A truncated or malformed tail is dropped: the kernel
    /// never sends one, and for change notifications only the fact that something arrived matters.
    static func parse(_ datagram: ArraySlice<UInt8>) -> [NetlinkMessage] {
        var messages: [NetlinkMessage] = []
        var offset = datagram.startIndex
        while datagram.endIndex - offset >= Netlink.headerSize {
            let length = Int(datagram.u32(at: offset))
            guard length >= Netlink.headerSize, length <= datagram.endIndex - offset else { break }
            messages.append(NetlinkMessage(
                type: datagram.u16(at: offset + 4),
                flags: datagram.u16(at: offset + 6),
                sequence: datagram.u32(at: offset + 8),
                payload: datagram[(offset + Netlink.headerSize)..<(offset + length)]))
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
        while bytes.endIndex - offset >= 4 {
            let length = Int(bytes.u16(at: offset))
            // The top bits of the type are NLA_F_NESTED / NLA_F_NET_BYTEORDER.
            let type = bytes.u16(at: offset + 2) & 0x3FFF
            guard length >= 4, length <= bytes.endIndex - offset else { break }
            values[type] = bytes[(offset + 4)..<(offset + length)]
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
    init(family: UInt8, destinationLength: UInt8, table: UInt32 = 254, type: UInt8 = Netlink.routeTypeUnicast,
         flags: UInt32 = 0, nextHops: [(interface: Int32, flags: UInt32)]) {
        self.family = family
        self.destinationLength = destinationLength
        self.table = table
        self.type = type
        self.flags = flags
        self.nextHops = nextHops
    }

    /// Reads an RTM_NEWROUTE payload (rtmsg + attributes); nil if too short.
    init?(payload: ArraySlice<UInt8>) {
        guard payload.count >= Netlink.routeMessageSize else { return nil }
        let base = payload.startIndex
        family = payload[base]
        destinationLength = payload[base + 1]
        type = payload[base + 7]
        flags = payload.u32(at: base + 8)
        let attributes = NetlinkAttributes(payload[(base + Netlink.routeMessageSize)...])
        table = attributes.u32(Netlink.routeAttributeTable) ?? UInt32(payload[base + 4])
        nextHops = []
        if let interface = attributes.u32(Netlink.routeAttributeOutputInterface) {
            nextHops.append((Int32(bitPattern: interface), flags))
        }
        if let hops = attributes[Netlink.routeAttributeMultipath] {
            // struct rtnexthop { u16 len; u8 flags; u8 hops; s32 ifindex; } followed by its attributes.
            var offset = hops.startIndex
            while hops.endIndex - offset >= 8 {
                let length = Int(hops.u16(at: offset))
                guard length >= 8, length <= hops.endIndex - offset else { break }
                nextHops.append((Int32(bitPattern: hops.u32(at: offset + 4)), UInt32(hops[offset + 2])))
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
        guard payload.count >= Netlink.linkMessageSize else { return nil }
        let base = payload.startIndex
        index = Int32(bitPattern: payload.u32(at: base + 4))
        flags = payload.u32(at: base + 8)
        let attributes = NetlinkAttributes(payload[(base + Netlink.linkMessageSize)...])
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

/// Builds request messages.
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
        append(UInt16(4 + value.count))
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
        guard payload.count >= Netlink.addressMessageSize else { return nil }
        scope = payload[payload.startIndex + 3]
        interface = Int32(bitPattern: payload.u32(at: payload.startIndex + 4))
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
