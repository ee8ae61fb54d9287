/*
 * kmsg, the codec of kernel route messages, on bytes: what the writer builds
 * reads back as the same route (unicast through a gateway and a device, ECMP
 * with weights, an IPv4 route via an IPv6 gateway, the special types, prefsrc,
 * realm, mtu and a scope), realms where the kernel keeps them (per nexthop,
 * IPv4 only), a delete names the key and fibd's protocol, a nexthop object (a
 * member and a group) reads back, the kernel's copy of a route written
 * through gateways alone names the devices it picked, and what is malformed
 * is refused rather than guessed at.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <libmnl/libmnl.h>
#include <linux/nexthop.h>

#include "kmsg.h"
#include "rattr.h"
#include "table.h"

static _Alignas(8) char buf[KMSG_MAX];
static struct ps_route in, out;

/* The environment: interface 7 is "veth7", 8 is "veth8"; no nexthop objects but those given. */
static bool
fake_ifname(int ifindex, char *name)
{
	if (ifindex != 7 && ifindex != 8)
		return false;
	snprintf(name, PS_IFNAMSIZ, "veth%d", ifindex);
	return true;
}

static struct kmsg_nhobj objs[3];
static unsigned n_objs;

static const struct kmsg_nhobj *
fake_nhobj(uint32_t id)
{
	for (unsigned i = 0; i < n_objs; i++)
		if (objs[i].id == id)
			return &objs[i];
	return NULL;
}

static const struct kmsg_env env = { .ifname = fake_ifname, .nhobj = fake_nhobj };

static void
route_init(uint8_t fam, uint8_t type)
{
	memset(&in, 0, sizeof(in));
	in.key.family = fam;
	in.type = type;
}

static void
add_nh(const char *gw, const char *dev, unsigned weight)
{
	struct ps_nexthop *nh = &in.nh[in.n_nexthops++];

	memset(nh, 0, sizeof(*nh));
	if (gw) {
		nh->gw_family = strchr(gw, ':') ? PS_FAM_V6 : PS_FAM_V4;
		inet_pton(nh->gw_family == PS_FAM_V4 ? AF_INET : AF_INET6, gw, nh->gw.b);
	}
	if (dev)
		snprintf(nh->ifname, sizeof(nh->ifname), "%s", dev);
	nh->weight = (uint16_t)weight;
}

/* Build the route `in` with its devices resolved as the writer does, and read it back into `out`. */
static size_t
round_trip(enum kmsg_op op, struct kmsg_rt *kr)
{
	struct kmsg_key k = { .table = 1000, .family = in.key.family, .plen = 24, .tos = 0, .metric = 30 };
	struct rattr *a = rattr_intern(&in);
	size_t len;

	assert_non_null(a);
	for (unsigned i = 0; i < a->n_nh; i++)
		a->nh[i].ifindex = a->nh[i].ifname[0] ? (int)(a->nh[i].ifname[4] - '0') : 0;
	inet_pton(in.key.family == PS_FAM_V4 ? AF_INET : AF_INET6,
	    in.key.family == PS_FAM_V4 ? "192.0.2.0" : "2001:db8::", k.prefix.b);
	if (in.key.family == PS_FAM_V6)
		k.plen = 48;
	len = kmsg_put_route(buf, 9, op, &k, 12, op == KMSG_DEL ? NULL : a, KMSG_INLINE);
	rattr_unref(a);
	assert_true(len <= KMSG_MAX);
	assert_int_equal(kmsg_rt_parse((struct nlmsghdr *)buf, kr), 0);
	assert_int_equal(kr->table, 1000);
	assert_int_equal(kr->metric, 30);
	assert_int_equal(kr->plen, k.plen);
	assert_memory_equal(kr->prefix.b, k.prefix.b, 16);
	assert_int_equal(kr->rtm->rtm_protocol, 12);
	return len;
}

/* out, read back, is the same route as in (as rattr interning compares them). */
static void
assert_same(void)
{
	struct rattr *a = rattr_intern(&in), *b = rattr_intern(&out);
	assert_ptr_equal(a, b);
	rattr_unref(a);
	rattr_unref(b);
}

static void
test_unicast_round_trips(void **state)
{
	struct kmsg_rt kr;
	(void)state;

	route_init(PS_FAM_V4, PS_RT_UNICAST);
	add_nh("198.51.100.1", "veth7", 1);
	round_trip(KMSG_REPLACE, &kr);
	assert_true(((struct nlmsghdr *)buf)->nlmsg_flags & NLM_F_REPLACE);
	assert_true(kmsg_rt_attrs(&kr, &env, &out, NULL));
	assert_same();

	/* ECMP with weights, one nexthop on-link. */
	route_init(PS_FAM_V4, PS_RT_UNICAST);
	add_nh("198.51.100.1", "veth7", 3);
	add_nh("198.51.100.2", "veth8", 1);
	in.nh[1].flags = PS_NH_ONLINK;
	round_trip(KMSG_ADD_EXCL, &kr);
	assert_true(((struct nlmsghdr *)buf)->nlmsg_flags & NLM_F_EXCL);
	assert_true(kmsg_rt_attrs(&kr, &env, &out, NULL));
	assert_int_equal(out.n_nexthops, 2);
	assert_int_equal(out.nh[0].weight, 3);
	assert_same();

	/* IPv4 via an IPv6 gateway (RTA_VIA), with prefsrc, realm, mtu and a scope. */
	route_init(PS_FAM_V4, PS_RT_UNICAST);
	add_nh("2001:db8:ff::1", "veth7", 1);
	in.has = PS_RA_PREFSRC | PS_RA_REALM | PS_RA_MTU | PS_RA_SCOPE;
	inet_pton(AF_INET, "198.51.100.2", in.prefsrc.b);
	in.realm = 7;
	in.mtu = 1400;
	in.scope = RT_SCOPE_LINK;
	round_trip(KMSG_REPLACE, &kr);
	assert_non_null(kr.tb[RTA_VIA]);
	assert_true(kmsg_rt_attrs(&kr, &env, &out, NULL));
	assert_same();

	/*
	 * The widest route: as many nexthops as the protocol allows, each an IPv6
	 * gateway of an IPv4 route (RTA_VIA, the largest), with prefsrc, realm
	 * (with each nexthop, as the kernel keeps it) and mtu. Over 10 KiB:
	 * KMSG_MAX must hold it.
	 */
	route_init(PS_FAM_V4, PS_RT_UNICAST);
	for (unsigned i = 0; i < PS_NEXTHOPS_MAX; i++) {
		char gw[64];
		snprintf(gw, sizeof(gw), "2001:db8:ff::%x", i + 1);
		add_nh(gw, i % 2 ? "veth8" : "veth7", 1 + i % 7);
	}
	in.has = PS_RA_PREFSRC | PS_RA_REALM | PS_RA_MTU;
	inet_pton(AF_INET, "198.51.100.2", in.prefsrc.b);
	in.realm = 7;
	in.mtu = 1400;
	assert_true(round_trip(KMSG_REPLACE, &kr) > 10240);
	assert_true(kmsg_rt_attrs(&kr, &env, &out, NULL));
	assert_int_equal(out.n_nexthops, PS_NEXTHOPS_MAX);
	assert_same();

	/* A gateway alone: the kernel is left to pick the device. */
	route_init(PS_FAM_V6, PS_RT_UNICAST);
	add_nh("2001:db8:ff::1", NULL, 1);
	round_trip(KMSG_REPLACE, &kr);
	assert_null(kr.tb[RTA_OIF]);
	assert_true(kmsg_rt_attrs(&kr, &env, &out, NULL));
	assert_same();
}

/* The first RTA_FLOW inside the i-th nexthop of kr's RTA_MULTIPATH, or NULL. */
static struct nlattr *
nh_flow(const struct kmsg_rt *kr, unsigned i)
{
	struct rtnexthop *nh = mnl_attr_get_payload(kr->tb[RTA_MULTIPATH]);
	struct nlattr *at;
	int left;

	while (i--)
		nh = RTNH_NEXT(nh);
	at = (struct nlattr *)RTNH_DATA(nh);
	left = nh->rtnh_len - (int)RTNH_LENGTH(0);
	for (; mnl_attr_ok(at, left); left -= (int)MNL_ALIGN(at->nla_len), at = mnl_attr_next(at))
		if (mnl_attr_get_type(at) == RTA_FLOW)
			return at;
	return NULL;
}

/*
 * Realms as the kernel keeps them: an IPv4 route's own for one nexthop, each
 * nexthop's for ECMP (a route-level one there the kernel refuses unless it
 * matches the first nexthop's), none for IPv6 (dropped unsaid). An ECMP route
 * whose nexthops' realms differ, or only some have one, is refused.
 */
static void put_parse(struct kmsg_rt *kr, unsigned how);

static void
test_realms(void **state)
{
	struct kmsg_rt kr;
	struct nlattr *at;
	(void)state;

	route_init(PS_FAM_V4, PS_RT_UNICAST);
	add_nh("198.51.100.1", "veth7", 1);
	in.has = PS_RA_REALM;
	in.realm = 5;
	round_trip(KMSG_REPLACE, &kr);
	assert_non_null(kr.tb[RTA_FLOW]);
	assert_true(kmsg_rt_attrs(&kr, &env, &out, NULL));
	assert_same();

	add_nh("198.51.100.2", "veth8", 2);
	round_trip(KMSG_REPLACE, &kr);
	assert_null(kr.tb[RTA_FLOW]);
	assert_non_null(nh_flow(&kr, 0));
	assert_non_null(nh_flow(&kr, 1));
	assert_true(kmsg_rt_attrs(&kr, &env, &out, NULL));
	assert_int_equal(out.realm, 5);
	assert_same();
	/* The nexthops' realms differ: not expressible. */
	{
		uint32_t six = 6;
		memcpy(mnl_attr_get_payload(nh_flow(&kr, 1)), &six, sizeof(six));
	}
	assert_false(kmsg_rt_attrs(&kr, &env, &out, NULL));
	/* Only the first has one: neither. */
	nh_flow(&kr, 1)->nla_type = RTA_UNSPEC;
	assert_false(kmsg_rt_attrs(&kr, &env, &out, NULL));

	/* A nexthop's RTA_FLOW of 2 bytes: malformed. */
	route_init(PS_FAM_V4, PS_RT_UNICAST);
	add_nh("198.51.100.1", "veth7", 1);
	add_nh("198.51.100.2", "veth8", 2);
	in.has = PS_RA_REALM;
	in.realm = 5;
	round_trip(KMSG_REPLACE, &kr);
	at = nh_flow(&kr, 1);
	assert_non_null(at);
	at->nla_len = MNL_ATTR_HDRLEN + 2;
	assert_false(kmsg_rt_attrs(&kr, &env, &out, NULL));

	/* Realm 0 is none: nothing written, for one nexthop or several. */
	route_init(PS_FAM_V4, PS_RT_UNICAST);
	add_nh("198.51.100.1", "veth7", 1);
	in.has = PS_RA_REALM;
	round_trip(KMSG_REPLACE, &kr);
	assert_null(kr.tb[RTA_FLOW]);
	add_nh("198.51.100.2", "veth8", 2);
	round_trip(KMSG_REPLACE, &kr);
	assert_null(nh_flow(&kr, 0));

	/* Through a nexthop object: the object has no realm to take. */
	route_init(PS_FAM_V4, PS_RT_UNICAST);
	add_nh("198.51.100.1", "veth7", 1);
	in.has = PS_RA_REALM;
	in.realm = 5;
	put_parse(&kr, KMSG_NH_OBJECT);
	assert_null(kr.tb[RTA_FLOW]);

	/* IPv6: none written, for one nexthop or several. */
	route_init(PS_FAM_V6, PS_RT_UNICAST);
	add_nh("2001:db8:ff::1", "veth7", 1);
	in.has = PS_RA_REALM;
	in.realm = 5;
	round_trip(KMSG_REPLACE, &kr);
	assert_null(kr.tb[RTA_FLOW]);
	add_nh("2001:db8:ff::2", "veth8", 1);
	round_trip(KMSG_REPLACE, &kr);
	assert_null(kr.tb[RTA_FLOW]);
	assert_null(nh_flow(&kr, 0));
	assert_null(nh_flow(&kr, 1));
}

static void
test_types_and_delete(void **state)
{
	static const uint8_t types[] = { PS_RT_BLACKHOLE, PS_RT_UNREACHABLE, PS_RT_PROHIBIT };
	struct kmsg_rt kr;
	(void)state;

	for (unsigned i = 0; i < 3; i++) {
		route_init(PS_FAM_V6, types[i]);
		round_trip(KMSG_REPLACE, &kr);
		assert_true(kmsg_rt_attrs(&kr, &env, &out, NULL));
		assert_int_equal(out.type, types[i]);
		assert_same();
	}
	/* A delete: the key and fibd's protocol, nothing of the route. */
	route_init(PS_FAM_V4, PS_RT_UNICAST);
	add_nh("198.51.100.1", "veth7", 1);
	round_trip(KMSG_DEL, &kr);
	assert_int_equal(((struct nlmsghdr *)buf)->nlmsg_type, RTM_DELROUTE);
	assert_null(kr.tb[RTA_GATEWAY]);
	assert_int_equal(kr.rtm->rtm_scope, RT_SCOPE_NOWHERE);
}

/* A route through fibd's nexthop objects reads back through them; an unknown object is refused. */
static void
test_nexthop_objects(void **state)
{
	struct kmsg_rt kr;
	struct rattr *a;
	struct kmsg_key k = { .table = 100, .family = PS_FAM_V4, .plen = 24 };
	(void)state;

	route_init(PS_FAM_V4, PS_RT_UNICAST);
	add_nh("198.51.100.1", "veth7", 2);
	add_nh("198.51.100.2", "veth8", 1);
	a = rattr_intern(&in);
	a->nh[0].ifindex = 7;
	a->nh[1].ifindex = 8;
	a->nh_id = 0x10000002; /* the group; members 0x10000000 and 0x10000001 */
	n_objs = 0;
	for (int m = 0; m < 2; m++) {
		kmsg_put_nh_object(buf, 1, 12, a, m, a->nh_id - 2 + (uint32_t)m);
		((struct nlmsghdr *)buf)->nlmsg_type = RTM_NEWNEXTHOP;
		assert_true(kmsg_nhobj_parse((struct nlmsghdr *)buf, 12, &objs[n_objs++]));
	}
	kmsg_put_nh_object(buf, 1, 12, a, -1, a->nh_id);
	assert_false(kmsg_nhobj_parse((struct nlmsghdr *)buf, 13, &objs[n_objs])); /* not fibd's */
	assert_true(kmsg_nhobj_parse((struct nlmsghdr *)buf, 12, &objs[n_objs++]));
	assert_int_equal(objs[2].n_members, 2);
	assert_int_equal(objs[2].weights[0], 2);

	kmsg_put_route(buf, 2, KMSG_REPLACE, &k, 12, a, KMSG_NH_OBJECT);
	assert_int_equal(kmsg_rt_parse((struct nlmsghdr *)buf, &kr), 0);
	assert_non_null(kr.tb[RTA_NH_ID]);
	{
		uint32_t id = 0;
		assert_true(kmsg_rt_attrs(&kr, &env, &out, &id));
		assert_int_equal(id, a->nh_id);
	}
	assert_same();
	n_objs = 0; /* an object fibd does not know: not expressible */
	assert_false(kmsg_rt_attrs(&kr, &env, &out, NULL));
	rattr_unref(a);
}

/* Build the route of `in`, devices as named (vethN is N), with how; parse it into kr. */
static void
put_parse(struct kmsg_rt *kr, unsigned how)
{
	struct kmsg_key k = { .table = 100, .family = PS_FAM_V4, .plen = 24 };
	struct rattr *a = rattr_intern(&in);

	assert_non_null(a);
	for (unsigned i = 0; i < a->n_nh; i++)
		a->nh[i].ifindex = a->nh[i].ifname[0] ? (int)(a->nh[i].ifname[4] - '0') : 0;
	kmsg_put_route(buf, 3, KMSG_ADD_EXCL, &k, 12, a, how);
	rattr_unref(a);
	assert_int_equal(kmsg_rt_parse((struct nlmsghdr *)buf, kr), 0);
}

static void
test_kernel_devices(void **state)
{
	struct kmsg_rt kr;
	struct rattr *want;
	int oif[2];
	(void)state;

	/* What a client fed: two gateways, no device. */
	route_init(PS_FAM_V4, PS_RT_UNICAST);
	add_nh("198.51.100.1", NULL, 1);
	add_nh("198.51.100.2", NULL, 1);
	want = rattr_intern(&in);
	put_parse(&kr, KMSG_ECHO);
	assert_true(((struct nlmsghdr *)buf)->nlmsg_flags & NLM_F_ECHO);
	assert_false(kmsg_rt_oifs(&kr, want, oif)); /* no device in it: nothing learnt */

	/* The kernel's copy, its nexthops in another order: matched by gateway. */
	route_init(PS_FAM_V4, PS_RT_UNICAST);
	add_nh("198.51.100.2", "veth8", 1);
	add_nh("198.51.100.1", "veth7", 1);
	put_parse(&kr, KMSG_INLINE);
	assert_false(((struct nlmsghdr *)buf)->nlmsg_flags & NLM_F_ECHO);
	assert_true(kmsg_rt_oifs(&kr, want, oif));
	assert_int_equal(oif[0], 7);
	assert_int_equal(oif[1], 8);

	/* The object for the first nexthop goes on the device the kernel picked. */
	want->nh[0].kifindex = oif[0];
	kmsg_put_nh_object(buf, 1, 12, want, 0, 0x10000000);
	((struct nlmsghdr *)buf)->nlmsg_type = RTM_NEWNEXTHOP;
	n_objs = 0;
	assert_true(kmsg_nhobj_parse((struct nlmsghdr *)buf, 12, &objs[0]));
	assert_int_equal(objs[0].ifindex, 7);

	/* A copy with another gateway, or one that uses an object, says nothing of these. */
	route_init(PS_FAM_V4, PS_RT_UNICAST);
	add_nh("198.51.100.2", "veth8", 1);
	add_nh("198.51.100.3", "veth7", 1);
	put_parse(&kr, KMSG_INLINE);
	assert_false(kmsg_rt_oifs(&kr, want, oif));
	route_init(PS_FAM_V4, PS_RT_UNICAST);
	add_nh("198.51.100.1", "veth7", 1);
	put_parse(&kr, KMSG_NH_OBJECT);
	assert_false(kmsg_rt_oifs(&kr, want, oif));
	rattr_unref(want);
}

static void
test_malformed_refused(void **state)
{
	struct kmsg_rt kr;
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	struct rtmsg *rtm;
	(void)state;

	/* Too short for its header. */
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWROUTE;
	assert_int_equal(kmsg_rt_parse(nlh, &kr), -EIO);
	/* Another family. */
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = AF_BRIDGE;
	assert_int_equal(kmsg_rt_parse(nlh, &kr), -EAFNOSUPPORT);
	/* A table attribute of 2 bytes. */
	rtm->rtm_family = AF_INET;
	mnl_attr_put_u16(nlh, RTA_TABLE, 100);
	assert_int_equal(kmsg_rt_parse(nlh, &kr), -EIO);
	/* A destination of 16 bytes in an IPv4 route. */
	nlh = mnl_nlmsg_put_header(buf);
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = AF_INET;
	rtm->rtm_dst_len = 24;
	mnl_attr_put(nlh, RTA_DST, 16, "0123456789abcdef");
	assert_int_equal(kmsg_rt_parse(nlh, &kr), -EIO);
	/* A prefix length over 32. */
	nlh = mnl_nlmsg_put_header(buf);
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = AF_INET;
	rtm->rtm_dst_len = 33;
	assert_int_equal(kmsg_rt_parse(nlh, &kr), -EIO);
	/* Parsed, but a type fibd does not carry (local): not expressible. */
	rtm->rtm_dst_len = 32;
	rtm->rtm_type = RTN_LOCAL;
	assert_int_equal(kmsg_rt_parse(nlh, &kr), 0);
	assert_false(kmsg_rt_attrs(&kr, &env, &out, NULL));
	/* A device fibd cannot name. */
	rtm->rtm_type = RTN_UNICAST;
	mnl_attr_put_u32(nlh, RTA_OIF, 99);
	assert_int_equal(kmsg_rt_parse(nlh, &kr), 0);
	assert_false(kmsg_rt_attrs(&kr, &env, &out, NULL));
}

static int
setup(void **state)
{
	(void)state;
	return table_init();
}

static int
teardown(void **state)
{
	(void)state;
	table_shutdown();
	rattr_shutdown();
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unicast_round_trips),
		cmocka_unit_test(test_realms),
		cmocka_unit_test(test_types_and_delete),
		cmocka_unit_test(test_nexthop_objects),
		cmocka_unit_test(test_kernel_devices),
		cmocka_unit_test(test_malformed_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
