// Only kernel UAPI headers: <linux/if.h> after glibc's <net/if.h> would hide IFF_LOWER_UP.
#include "rlk_netlink.h"
#include <stddef.h>
#include <linux/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#define FIELD_SIZE(type, field) sizeof(((type *)0)->field)

const int32_t rlk_NETLINK_ROUTE = NETLINK_ROUTE;
const uint32_t rlk_RTMGRP_LINK = RTMGRP_LINK;
const uint32_t rlk_RTMGRP_IPV4_IFADDR = RTMGRP_IPV4_IFADDR;
const uint32_t rlk_RTMGRP_IPV4_ROUTE = RTMGRP_IPV4_ROUTE;
const uint32_t rlk_RTMGRP_IPV6_IFADDR = RTMGRP_IPV6_IFADDR;
const uint32_t rlk_RTMGRP_IPV6_ROUTE = RTMGRP_IPV6_ROUTE;

const uint16_t rlk_NLMSG_NOOP = NLMSG_NOOP;
const uint16_t rlk_NLMSG_ERROR = NLMSG_ERROR;
const uint16_t rlk_NLMSG_DONE = NLMSG_DONE;
const uint16_t rlk_NLMSG_OVERRUN = NLMSG_OVERRUN;
const uint16_t rlk_RTM_NEWLINK = RTM_NEWLINK;
const uint16_t rlk_RTM_DELLINK = RTM_DELLINK;
const uint16_t rlk_RTM_GETLINK = RTM_GETLINK;
const uint16_t rlk_RTM_NEWADDR = RTM_NEWADDR;
const uint16_t rlk_RTM_DELADDR = RTM_DELADDR;
const uint16_t rlk_RTM_GETADDR = RTM_GETADDR;
const uint16_t rlk_RTM_NEWROUTE = RTM_NEWROUTE;
const uint16_t rlk_RTM_DELROUTE = RTM_DELROUTE;
const uint16_t rlk_RTM_GETROUTE = RTM_GETROUTE;

const uint16_t rlk_NLM_F_REQUEST = NLM_F_REQUEST;
const uint16_t rlk_NLM_F_DUMP = NLM_F_DUMP;

const uint16_t rlk_NLA_TYPE_MASK = (uint16_t)NLA_TYPE_MASK;
const uint16_t rlk_RTA_DST = RTA_DST;
const uint16_t rlk_RTA_OIF = RTA_OIF;
const uint16_t rlk_RTA_MULTIPATH = RTA_MULTIPATH;
const uint16_t rlk_RTA_TABLE = RTA_TABLE;
const uint16_t rlk_IFLA_IFNAME = IFLA_IFNAME;

const uint8_t rlk_RTN_UNICAST = RTN_UNICAST;
const uint8_t rlk_RTN_LOCAL = RTN_LOCAL;
const uint32_t rlk_RT_TABLE_MAIN = RT_TABLE_MAIN;
const uint32_t rlk_RT_TABLE_LOCAL = RT_TABLE_LOCAL;
const uint8_t rlk_RT_SCOPE_LINK = RT_SCOPE_LINK;
const uint32_t rlk_RTNH_F_LINKDOWN = RTNH_F_LINKDOWN;

const uint32_t rlk_IFF_UP = IFF_UP;
const uint32_t rlk_IFF_LOOPBACK = IFF_LOOPBACK;
const uint32_t rlk_IFF_RUNNING = IFF_RUNNING;
const uint32_t rlk_IFF_LOWER_UP = IFF_LOWER_UP;

// The exported types above are as wide as the kernel's: nothing is cut off on the way to Swift.
_Static_assert(RTMGRP_IPV6_ROUTE <= UINT32_MAX, "RTMGRP_* fit sockaddr_nl.nl_groups");
_Static_assert(RTM_GETROUTE <= UINT16_MAX && NLMSG_OVERRUN <= UINT16_MAX, "message types fit nlmsg_type");
_Static_assert(RTA_TABLE <= UINT16_MAX && IFLA_IFNAME <= UINT16_MAX, "attribute types fit rta_type");
_Static_assert(RTN_LOCAL <= UINT8_MAX && RT_SCOPE_LINK <= UINT8_MAX, "route types and scopes fit a byte");
_Static_assert(RT_TABLE_LOCAL <= UINT8_MAX, "RT_TABLE_LOCAL fits rtm_table, so no RTA_TABLE is needed for it");
_Static_assert(RTNH_F_LINKDOWN <= UINT8_MAX, "next-hop flags fit rtnh_flags");
_Static_assert(NLA_F_NESTED == 0x8000 && NLA_F_NET_BYTEORDER == 0x4000, "only the top two bits of rta_type are flags");

// One rounding for messages, attributes and next hops.
_Static_assert(NLMSG_ALIGNTO == 4 && RTA_ALIGNTO == NLMSG_ALIGNTO && RTNH_ALIGNTO == NLMSG_ALIGNTO,
               "netlink, rtattr and rtnexthop align alike");
const long rlk_NLMSG_ALIGNTO = NLMSG_ALIGNTO;

// struct nlmsghdr: NetlinkRequest writes len, type, flags, seq, pid in this order; the parser loads
// len and seq as 32-bit and type and flags as 16-bit values.
_Static_assert(offsetof(struct nlmsghdr, nlmsg_len) == 0 && FIELD_SIZE(struct nlmsghdr, nlmsg_len) == 4, "nlmsg_len");
_Static_assert(offsetof(struct nlmsghdr, nlmsg_type) == 4 && FIELD_SIZE(struct nlmsghdr, nlmsg_type) == 2, "nlmsg_type");
_Static_assert(offsetof(struct nlmsghdr, nlmsg_flags) == 6 && FIELD_SIZE(struct nlmsghdr, nlmsg_flags) == 2, "nlmsg_flags");
_Static_assert(offsetof(struct nlmsghdr, nlmsg_seq) == 8 && FIELD_SIZE(struct nlmsghdr, nlmsg_seq) == 4, "nlmsg_seq");
_Static_assert(offsetof(struct nlmsghdr, nlmsg_pid) == 12 && sizeof(struct nlmsghdr) == 16, "nlmsg_pid last");
_Static_assert(NLMSG_HDRLEN == sizeof(struct nlmsghdr), "the header needs no padding");
const long rlk_nlmsghdr_size = sizeof(struct nlmsghdr);
const long rlk_nlmsghdr_type_offset = offsetof(struct nlmsghdr, nlmsg_type);
const long rlk_nlmsghdr_flags_offset = offsetof(struct nlmsghdr, nlmsg_flags);
const long rlk_nlmsghdr_seq_offset = offsetof(struct nlmsghdr, nlmsg_seq);

// struct rtattr: a 16-bit length, then a 16-bit type, then the value.
_Static_assert(offsetof(struct rtattr, rta_len) == 0 && FIELD_SIZE(struct rtattr, rta_len) == 2, "rta_len");
_Static_assert(offsetof(struct rtattr, rta_type) == 2 && FIELD_SIZE(struct rtattr, rta_type) == 2, "rta_type");
_Static_assert(sizeof(struct rtattr) == 4 && RTA_LENGTH(0) == sizeof(struct rtattr), "rta value follows the header");
const long rlk_rtattr_size = sizeof(struct rtattr);
const long rlk_rtattr_type_offset = offsetof(struct rtattr, rta_type);

// struct rtmsg: the route requests write eight bytes (family ... type) and a 32-bit rtm_flags in order.
_Static_assert(offsetof(struct rtmsg, rtm_family) == 0 && offsetof(struct rtmsg, rtm_dst_len) == 1
               && offsetof(struct rtmsg, rtm_src_len) == 2 && offsetof(struct rtmsg, rtm_tos) == 3
               && offsetof(struct rtmsg, rtm_table) == 4 && offsetof(struct rtmsg, rtm_protocol) == 5
               && offsetof(struct rtmsg, rtm_scope) == 6 && offsetof(struct rtmsg, rtm_type) == 7, "rtmsg bytes");
_Static_assert(FIELD_SIZE(struct rtmsg, rtm_table) == 1 && FIELD_SIZE(struct rtmsg, rtm_type) == 1, "rtmsg bytes are bytes");
_Static_assert(offsetof(struct rtmsg, rtm_flags) == 8 && FIELD_SIZE(struct rtmsg, rtm_flags) == 4
               && sizeof(struct rtmsg) == 12, "rtm_flags last");
const long rlk_rtmsg_size = sizeof(struct rtmsg);
const long rlk_rtmsg_family_offset = offsetof(struct rtmsg, rtm_family);
const long rlk_rtmsg_dst_len_offset = offsetof(struct rtmsg, rtm_dst_len);
const long rlk_rtmsg_table_offset = offsetof(struct rtmsg, rtm_table);
const long rlk_rtmsg_type_offset = offsetof(struct rtmsg, rtm_type);
const long rlk_rtmsg_flags_offset = offsetof(struct rtmsg, rtm_flags);

// struct rtnexthop: a 16-bit length, an 8-bit flags, the hop count, a 32-bit interface index.
_Static_assert(offsetof(struct rtnexthop, rtnh_len) == 0 && FIELD_SIZE(struct rtnexthop, rtnh_len) == 2, "rtnh_len");
_Static_assert(FIELD_SIZE(struct rtnexthop, rtnh_flags) == 1 && FIELD_SIZE(struct rtnexthop, rtnh_ifindex) == 4,
               "rtnh_flags and rtnh_ifindex");
const long rlk_rtnexthop_size = sizeof(struct rtnexthop);
const long rlk_rtnexthop_flags_offset = offsetof(struct rtnexthop, rtnh_flags);
const long rlk_rtnexthop_ifindex_offset = offsetof(struct rtnexthop, rtnh_ifindex);

// struct ifinfomsg: the link request writes family, pad, a 16-bit type, then index, flags and change
// as 32-bit values, in order.
_Static_assert(offsetof(struct ifinfomsg, ifi_family) == 0 && offsetof(struct ifinfomsg, ifi_type) == 2
               && FIELD_SIZE(struct ifinfomsg, ifi_type) == 2, "ifinfomsg family and type");
_Static_assert(offsetof(struct ifinfomsg, ifi_index) == 4 && FIELD_SIZE(struct ifinfomsg, ifi_index) == 4
               && offsetof(struct ifinfomsg, ifi_flags) == 8 && FIELD_SIZE(struct ifinfomsg, ifi_flags) == 4
               && offsetof(struct ifinfomsg, ifi_change) == 12 && sizeof(struct ifinfomsg) == 16, "ifinfomsg words");
const long rlk_ifinfomsg_size = sizeof(struct ifinfomsg);
const long rlk_ifinfomsg_index_offset = offsetof(struct ifinfomsg, ifi_index);
const long rlk_ifinfomsg_flags_offset = offsetof(struct ifinfomsg, ifi_flags);

// struct ifaddrmsg: the address dump writes four bytes (family, prefix length, flags, scope) and a
// 32-bit index, in order.
_Static_assert(offsetof(struct ifaddrmsg, ifa_family) == 0 && offsetof(struct ifaddrmsg, ifa_prefixlen) == 1
               && offsetof(struct ifaddrmsg, ifa_flags) == 2 && offsetof(struct ifaddrmsg, ifa_scope) == 3
               && FIELD_SIZE(struct ifaddrmsg, ifa_scope) == 1, "ifaddrmsg bytes");
_Static_assert(offsetof(struct ifaddrmsg, ifa_index) == 4 && FIELD_SIZE(struct ifaddrmsg, ifa_index) == 4
               && sizeof(struct ifaddrmsg) == 8, "ifa_index last");
const long rlk_ifaddrmsg_size = sizeof(struct ifaddrmsg);
const long rlk_ifaddrmsg_scope_offset = offsetof(struct ifaddrmsg, ifa_scope);
const long rlk_ifaddrmsg_index_offset = offsetof(struct ifaddrmsg, ifa_index);

// struct sockaddr_nl: a 16-bit family, padding, the port id, then the 32-bit group mask.
_Static_assert(FIELD_SIZE(struct sockaddr_nl, nl_family) == 2 && FIELD_SIZE(struct sockaddr_nl, nl_groups) == 4,
               "nl_family and nl_groups");
const long rlk_sockaddr_nl_size = sizeof(struct sockaddr_nl);
const long rlk_sockaddr_nl_family_offset = offsetof(struct sockaddr_nl, nl_family);
const long rlk_sockaddr_nl_groups_offset = offsetof(struct sockaddr_nl, nl_groups);
