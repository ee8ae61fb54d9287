/*
 * kmsg: the kernel's route messages, read and written. The codec layer (see
 * docs/design.md): no socket, no loop, no state of its own. The writer builds
 * its messages here, and the dump, the monitor and learn read theirs here, so
 * that one reading of a route serves all of them and is tested on bytes.
 *
 * Reading needs two lookups it cannot make itself: an interface's name from
 * its index, and a nexthop object an earlier fibd left; the caller hands them
 * in a struct kmsg_env.
 */
#ifndef FIBD_KMSG_H
#define FIBD_KMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include <proto-shim/msg.h>

#include "rattr.h"
#include "table.h"

/*
 * kmsg_ok - whether a netlink message of len bytes left is whole. As
 * mnl_nlmsg_ok, but a length over 2 GiB is refused instead of read as a
 * negative number (then the walk would run off the buffer).
 */
static inline bool
kmsg_ok(const struct nlmsghdr *nlh, int len)
{
	return len >= (int)sizeof(*nlh) && nlh->nlmsg_len >= sizeof(*nlh) &&
	    nlh->nlmsg_len <= (unsigned)len;
}

/* A route message, parsed: its header, attributes by type, and its key. */
struct kmsg_rt {
	const struct rtmsg *rtm;
	const struct nlattr *tb[RTA_MAX + 1];
	uint8_t family; /* PS_FAM_V4 or PS_FAM_V6 */
	uint32_t table; /* RTA_TABLE, else rtm_table */
	union ps_addr prefix;
	uint8_t plen;
	uint8_t tos;
	uint32_t metric; /* RTA_PRIORITY, else 0 */
};

/*
 * kmsg_rt_parse - an RTM_NEWROUTE or RTM_DELROUTE message. Returns 0; -EAFNOSUPPORT
 * for a family fibd does not keep; -EIO if malformed (short, attributes that
 * run over, a 32-bit attribute of another size, a destination of the wrong
 * length or a prefix length over the family's). The result borrows from nlh.
 */
int kmsg_rt_parse(const struct nlmsghdr *nlh, struct kmsg_rt *ret);

/* A nexthop object of fibd's, as a dump of them (RTM_GETNEXTHOP) shows it. */
struct kmsg_nhobj {
	uint32_t id;
	uint8_t family;    /* of the nexthop, 0 for a group */
	uint8_t gw_family; /* 0: no gateway */
	uint8_t flags;     /* PS_NH_ONLINK */
	int ifindex;
	union ps_addr gw;
	uint16_t n_members; /* a group: member ids and weights */
	uint32_t members[PS_NEXTHOPS_MAX];
	uint16_t weights[PS_NEXTHOPS_MAX];
};

/* kmsg_nhobj_parse - an RTM_NEWNEXTHOP message of `protocol`; false for others or malformed. */
bool kmsg_nhobj_parse(const struct nlmsghdr *nlh, uint8_t protocol, struct kmsg_nhobj *ret);

struct kmsg_env {
	/* the name of interface ifindex into name (PS_IFNAMSIZ bytes); false if unknown */
	bool (*ifname)(int ifindex, char *name);
	/* the nexthop object of fibd's with this id, or NULL */
	const struct kmsg_nhobj *(*nhobj)(uint32_t id);
};

/*
 * kmsg_rt_attrs - a parsed route as proto-shim attributes in *rt (the key's
 * family only; the caller fills the rest of the key). False for what fibd
 * cannot express: other route types, nexthop objects it did not make, a
 * numeric scope. *ret_nh_id (if not NULL): the object the route uses, or 0.
 */
bool kmsg_rt_attrs(const struct kmsg_rt *kr, const struct kmsg_env *env, struct ps_route *rt,
    uint32_t *ret_nh_id);

/*
 * kmsg_rt_oifs - the devices the kernel gave the nexthops of a route it sent
 * back (kr, an echo of a route written with a's nexthops inline): oif[i] for
 * a->nh[i], each matched by its gateway (and by its device, a->nh[i].ifindex,
 * when it names one). False if one has no device, the nexthops differ in
 * number, a has over 64, or the route uses a nexthop object.
 */
bool kmsg_rt_oifs(const struct kmsg_rt *kr, const struct rattr *a, int *oif);

/* ---- writing: each builder puts one message at buf, which has room for KMSG_MAX ---- */

/*
 * The largest message built here, with room to spare: a route of 256
 * nexthops, each an IPv6 gateway of an IPv4 route with its realm (40 bytes in
 * RTA_MULTIPATH), with every attribute, is about 10.1 KiB (test_kmsg.c builds
 * it); a group of as many is 2 KiB.
 */
#define KMSG_MAX 12288

enum kmsg_op { KMSG_ADD_EXCL, KMSG_REPLACE, KMSG_DEL };

struct kmsg_key {
	uint32_t table;
	uint8_t family;
	union ps_addr prefix;
	uint8_t plen;
	uint8_t tos;
	uint32_t metric;
};

/* The key fibd writes a route of its with: its table's, its prefix, tos and metric. */
static inline struct kmsg_key
kmsg_route_key(const struct route *r)
{
	const struct rtable *t = table_at(r->rt);
	struct kmsg_key k = { .table = t->id, .family = t->family, .plen = route_plen(r),
		.tos = r->tos, .metric = r->metric };

	route_prefix(r, &k.prefix);
	return k;
}

/* How kmsg_put_route writes a route's nexthops (flags). */
#define KMSG_INLINE 0u
#define KMSG_NH_OBJECT 1u /* refer to a's kernel nexthop object (a->nh_id) */
#define KMSG_ECHO 2u      /* NLM_F_ECHO: the kernel sends the route back as it made it */

/*
 * kmsg_put_route - RTM_NEWROUTE (with NLM_F_EXCL or NLM_F_REPLACE) or
 * RTM_DELROUTE for a route of `protocol`, with NLM_F_ACK (the writer takes it
 * back from all but a batch's last message) and sequence seq.
 * a: the attributes (NULL for a delete); its nexthops' ifindex must be
 * resolved. how: KMSG_* flags. Returns the message's length.
 */
size_t kmsg_put_route(void *buf, uint32_t seq, enum kmsg_op op, const struct kmsg_key *k,
    uint8_t protocol, const struct rattr *a, unsigned how);

/*
 * kmsg_put_nh_object - RTM_NEWNEXTHOP (NLM_F_EXCL) for a's nexthop `member`
 * (on its device, or the one the kernel picked: kifindex),
 * or for the group of all of them (member < 0: members are ids a->nh_id -
 * a->n_nh ..), with id `id`. Returns the message's length.
 */
size_t kmsg_put_nh_object(void *buf, uint32_t seq, uint8_t protocol, const struct rattr *a,
    int member, uint32_t id);

/* kmsg_put_nh_del - RTM_DELNEXTHOP of object id. */
size_t kmsg_put_nh_del(void *buf, uint32_t seq, uint32_t id);

/*
 * kmsg_put_dump - RTM_GETROUTE dump of one table and family, of routes of
 * `protocol` only (0: every protocol); with NETLINK_GET_STRICT_CHK the kernel
 * filters by both.
 */
size_t kmsg_put_dump(void *buf, uint32_t seq, uint32_t table, uint8_t family, uint8_t protocol);

#endif
