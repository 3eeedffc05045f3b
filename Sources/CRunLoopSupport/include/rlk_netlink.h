#ifndef RLK_NETLINK_H
#define RLK_NETLINK_H
// The rtnetlink(7) values and layouts RunLoopNet's reachability reads and writes, taken from the
// kernel's own headers in netlink.c: Swift's Glibc module does not import <linux/netlink.h> or
// <linux/rtnetlink.h>, and this header includes none of them (see CRunLoopSupport.h). Every layout
// the Swift code relies on (field widths, fields in order without padding) is a _Static_assert there.
#include <stdint.h>

// Protocol and the multicast groups (RTMGRP_*, the bit-mask form bind() accepts).
extern const int32_t rlk_NETLINK_ROUTE;
extern const uint32_t rlk_RTMGRP_LINK;
extern const uint32_t rlk_RTMGRP_IPV4_IFADDR;
extern const uint32_t rlk_RTMGRP_IPV4_ROUTE;
extern const uint32_t rlk_RTMGRP_IPV6_IFADDR;
extern const uint32_t rlk_RTMGRP_IPV6_ROUTE;

// Message types (nlmsghdr.nlmsg_type).
extern const uint16_t rlk_NLMSG_NOOP;
extern const uint16_t rlk_NLMSG_ERROR;
extern const uint16_t rlk_NLMSG_DONE;
extern const uint16_t rlk_NLMSG_OVERRUN;
extern const uint16_t rlk_RTM_NEWLINK;
extern const uint16_t rlk_RTM_DELLINK;
extern const uint16_t rlk_RTM_GETLINK;
extern const uint16_t rlk_RTM_NEWADDR;
extern const uint16_t rlk_RTM_DELADDR;
extern const uint16_t rlk_RTM_GETADDR;
extern const uint16_t rlk_RTM_NEWROUTE;
extern const uint16_t rlk_RTM_DELROUTE;
extern const uint16_t rlk_RTM_GETROUTE;

// nlmsghdr.nlmsg_flags.
extern const uint16_t rlk_NLM_F_REQUEST;
extern const uint16_t rlk_NLM_F_DUMP;

// Attribute types, with the bits of rtattr.rta_type that are flags (NLA_F_NESTED, NLA_F_NET_BYTEORDER) masked off.
extern const uint16_t rlk_NLA_TYPE_MASK;
extern const uint16_t rlk_RTA_DST;
extern const uint16_t rlk_RTA_OIF;
extern const uint16_t rlk_RTA_MULTIPATH;
extern const uint16_t rlk_RTA_TABLE;
extern const uint16_t rlk_IFLA_IFNAME;

// Route types, tables, scopes and next-hop flags.
extern const uint8_t rlk_RTN_UNICAST;
extern const uint8_t rlk_RTN_LOCAL;
extern const uint32_t rlk_RT_TABLE_MAIN;
extern const uint32_t rlk_RT_TABLE_LOCAL;
extern const uint8_t rlk_RT_SCOPE_LINK;
extern const uint32_t rlk_RTNH_F_LINKDOWN;

// Link flags (ifinfomsg.ifi_flags).
extern const uint32_t rlk_IFF_UP;
extern const uint32_t rlk_IFF_LOOPBACK;
extern const uint32_t rlk_IFF_RUNNING;
extern const uint32_t rlk_IFF_LOWER_UP;

// Layouts: sizes of the fixed headers and byte offsets of the fields read. NLMSG_ALIGNTO is also
// RTA_ALIGNTO and RTNH_ALIGNTO (asserted), so one rounding serves messages, attributes and next hops.
extern const long rlk_NLMSG_ALIGNTO;
extern const long rlk_nlmsghdr_size;
extern const long rlk_nlmsghdr_type_offset;
extern const long rlk_nlmsghdr_flags_offset;
extern const long rlk_nlmsghdr_seq_offset;
extern const long rlk_rtattr_size;
extern const long rlk_rtattr_type_offset;
extern const long rlk_rtmsg_size;
extern const long rlk_rtmsg_family_offset;
extern const long rlk_rtmsg_dst_len_offset;
extern const long rlk_rtmsg_table_offset;
extern const long rlk_rtmsg_type_offset;
extern const long rlk_rtmsg_flags_offset;
extern const long rlk_rtnexthop_size;
extern const long rlk_rtnexthop_flags_offset;
extern const long rlk_rtnexthop_ifindex_offset;
extern const long rlk_ifinfomsg_size;
extern const long rlk_ifinfomsg_index_offset;
extern const long rlk_ifinfomsg_flags_offset;
extern const long rlk_ifaddrmsg_size;
extern const long rlk_ifaddrmsg_scope_offset;
extern const long rlk_ifaddrmsg_index_offset;
extern const long rlk_sockaddr_nl_size;
extern const long rlk_sockaddr_nl_family_offset;
extern const long rlk_sockaddr_nl_groups_offset;

#endif
