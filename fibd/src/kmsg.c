/*
 * kmsg: route and nexthop-object messages of rtnetlink, read and written.
 *
 * Reading is strict where a wrong guess would cost a route: every 32-bit
 * attribute fibd reads must be 4 bytes, a destination must be as long as its
 * family's address, and a route fibd cannot express exactly (another type, a
 * nexthop object it did not make, a numeric scope) is refused rather than
 * approximated. Writing follows iproute2: the table in both rtm_table and
 * RTA_TABLE, the priority always, scope link for a unicast route without a
 * gateway and universe otherwise unless the route says.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <libmnl/libmnl.h>
#include <linux/nexthop.h>

#include "kmsg.h"

static int
attr_cb(const struct nlattr *attr, void *data)
{
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(attr);

	if (type <= RTA_MAX)
		tb[type] = attr;
	return MNL_CB_OK;
}

/* The 32-bit attributes fibd reads from a route message are 4 bytes long. */
static bool
u32s_sane(const struct nlattr *const *tb)
{
	static const int u32s[] = { RTA_TABLE, RTA_PRIORITY, RTA_OIF, RTA_FLOW, RTA_NH_ID };

	for (size_t i = 0; i < sizeof(u32s) / sizeof(u32s[0]); i++)
		if (tb[u32s[i]] && mnl_attr_get_payload_len(tb[u32s[i]]) != 4)
			return false;
	return true;
}

int
kmsg_rt_parse(const struct nlmsghdr *nlh, struct kmsg_rt *ret)
{
	const struct rtmsg *rtm;
	unsigned alen;

	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*rtm)))
		return -EIO;
	rtm = mnl_nlmsg_get_payload(nlh);
	if (rtm->rtm_family != AF_INET && rtm->rtm_family != AF_INET6)
		return -EAFNOSUPPORT;
	memset(ret, 0, sizeof(*ret));
	ret->rtm = rtm;
	ret->family = rtm->rtm_family == AF_INET ? PS_FAM_V4 : PS_FAM_V6;
	alen = ret->family == PS_FAM_V4 ? 4 : 16;
	if (mnl_attr_parse(nlh, sizeof(*rtm), attr_cb, ret->tb) < 0 || !u32s_sane(ret->tb) ||
	    rtm->rtm_dst_len > alen * 8)
		return -EIO;
	if (ret->tb[RTA_DST]) {
		if (mnl_attr_get_payload_len(ret->tb[RTA_DST]) != alen)
			return -EIO;
		memcpy(ret->prefix.b, mnl_attr_get_payload(ret->tb[RTA_DST]), alen);
	}
	ret->plen = rtm->rtm_dst_len;
	ret->tos = rtm->rtm_tos;
	ret->table = ret->tb[RTA_TABLE] ? mnl_attr_get_u32(ret->tb[RTA_TABLE]) : rtm->rtm_table;
	ret->metric = ret->tb[RTA_PRIORITY] ? mnl_attr_get_u32(ret->tb[RTA_PRIORITY]) : 0;
	return 0;
}

bool
kmsg_nhobj_parse(const struct nlmsghdr *nlh, uint8_t protocol, struct kmsg_nhobj *ret)
{
	const struct nhmsg *nhm;
	const struct nlattr *attr;

	if (nlh->nlmsg_type != RTM_NEWNEXTHOP || nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*nhm)))
		return false;
	nhm = mnl_nlmsg_get_payload(nlh);
	if (nhm->nh_protocol != protocol)
		return false;
	memset(ret, 0, sizeof(*ret));
	ret->family = nhm->nh_family == AF_INET ? PS_FAM_V4 : nhm->nh_family == AF_INET6 ? PS_FAM_V6 : 0;
	ret->flags = nhm->nh_flags & RTNH_F_ONLINK ? PS_NH_ONLINK : 0;
	mnl_attr_for_each(attr, nlh, sizeof(*nhm)) {
		uint16_t len = mnl_attr_get_payload_len(attr);
		switch (mnl_attr_get_type(attr)) {
		case NHA_ID:
			if (len == 4)
				ret->id = mnl_attr_get_u32(attr);
			break;
		case NHA_OIF:
			if (len == 4)
				ret->ifindex = (int)mnl_attr_get_u32(attr);
			break;
		case NHA_GATEWAY:
			if (len == 4 || len == 16) {
				memcpy(ret->gw.b, mnl_attr_get_payload(attr), len);
				ret->gw_family = len == 4 ? PS_FAM_V4 : PS_FAM_V6;
			}
			break;
		case NHA_GROUP: {
			const struct nexthop_grp *g = mnl_attr_get_payload(attr);
			ret->n_members = (uint16_t)(len / sizeof(*g) < PS_NEXTHOPS_MAX ? len / sizeof(*g)
										  : PS_NEXTHOPS_MAX);
			for (unsigned i = 0; i < ret->n_members; i++) {
				ret->members[i] = g[i].id;
				ret->weights[i] = (uint16_t)(g[i].weight + 1);
			}
			break;
		}
		}
	}
	return ret->id != 0;
}

/* ---- a route's attributes ---- */

static bool
nh_from_object(const struct kmsg_env *env, const struct kmsg_nhobj *o, uint16_t weight,
    struct ps_nexthop *nh)
{
	memset(nh, 0, sizeof(*nh));
	if (!o || o->n_members || !env->ifname(o->ifindex, nh->ifname))
		return false;
	nh->gw = o->gw;
	nh->gw_family = o->gw_family;
	nh->flags = o->flags;
	nh->weight = weight;
	return true;
}

/* A nexthop's gateway: RTA_GATEWAY, or RTA_VIA (IPv6, for an IPv4 route). False if malformed. */
static bool
gateway_of(const struct nlattr *gw, const struct nlattr *via, union ps_addr *addr, uint8_t *fam)
{
	*fam = 0;
	if (gw) {
		uint16_t len = mnl_attr_get_payload_len(gw);
		if (len != 4 && len != 16)
			return false;
		memcpy(addr->b, mnl_attr_get_payload(gw), len);
		*fam = len == 4 ? PS_FAM_V4 : PS_FAM_V6;
	} else if (via) {
		const struct rtvia *v = mnl_attr_get_payload(via);
		if (mnl_attr_get_payload_len(via) != sizeof(*v) + 16 || v->rtvia_family != AF_INET6)
			return false;
		memcpy(addr->b, v->rtvia_addr, 16);
		*fam = PS_FAM_V6;
	}
	return true;
}

static bool
nh_from_attrs(const struct kmsg_env *env, const struct nlattr *gw, const struct nlattr *via,
    int ifindex, uint8_t flags, uint16_t weight, struct ps_nexthop *nh)
{
	memset(nh, 0, sizeof(*nh));
	if (!gateway_of(gw, via, &nh->gw, &nh->gw_family))
		return false;
	if (ifindex && !env->ifname(ifindex, nh->ifname))
		return false;
	nh->flags = flags & RTNH_F_ONLINK ? PS_NH_ONLINK : 0;
	nh->weight = weight;
	return nh->gw_family || nh->ifname[0];
}

/* Nexthops of a route that uses object id (only the objects fibd made are known). */
static bool
nhs_from_object(const struct kmsg_env *env, uint32_t id, struct ps_route *rt)
{
	const struct kmsg_nhobj *o = env->nhobj ? env->nhobj(id) : NULL;

	if (!o)
		return false;
	if (!o->n_members) {
		rt->n_nexthops = 1;
		return nh_from_object(env, o, 1, &rt->nh[0]);
	}
	for (unsigned i = 0; i < o->n_members; i++)
		if (o->members[i] != o->id - o->n_members + i ||
		    !nh_from_object(env, env->nhobj(o->members[i]), o->weights[i], &rt->nh[i]))
			return false;
	rt->n_nexthops = o->n_members;
	return true;
}

/*
 * Walk RTA_MULTIPATH: cb(nexthop, its attributes by type, ctx) for each, while
 * it returns true. False if a nexthop is malformed or cb refused one.
 */
static bool
multipath_walk(const struct nlattr *mp,
    bool (*cb)(const struct rtnexthop *nh, const struct nlattr *const *sub, void *ctx), void *ctx)
{
	const struct rtnexthop *nh = mnl_attr_get_payload(mp);
	int left = mnl_attr_get_payload_len(mp);

	while (left >= (int)sizeof(*nh) && nh->rtnh_len >= sizeof(*nh) && nh->rtnh_len <= left) {
		const struct nlattr *sub[RTA_MAX + 1] = { 0 };
		const struct nlattr *at = (const struct nlattr *)RTNH_DATA(nh);
		int sl = nh->rtnh_len - (int)RTNH_LENGTH(0);
		while (mnl_attr_ok(at, sl)) {
			if (mnl_attr_get_type(at) <= RTA_MAX)
				sub[mnl_attr_get_type(at)] = at;
			sl -= (int)MNL_ALIGN(at->nla_len);
			at = mnl_attr_next(at);
		}
		if (!cb(nh, sub, ctx))
			return false;
		left -= RTNH_ALIGN(nh->rtnh_len);
		nh = RTNH_NEXT(nh);
	}
	return true;
}

struct mp_read {
	const struct kmsg_env *env;
	struct ps_route *rt;
	unsigned n_flow;   /* nexthops with a realm (a nonzero RTA_FLOW) */
	uint32_t flow;     /* the last of them */
	bool flows_differ; /* not all the same */
};

static bool
mp_read_one(const struct rtnexthop *nh, const struct nlattr *const *sub, void *ctx)
{
	struct mp_read *m = ctx;

	if (m->rt->n_nexthops >= PS_NEXTHOPS_MAX)
		return true; /* the rest is not read; fibd writes no more */
	if (!nh_from_attrs(m->env, sub[RTA_GATEWAY], sub[RTA_VIA], nh->rtnh_ifindex, nh->rtnh_flags,
		(uint16_t)(nh->rtnh_hops + 1), &m->rt->nh[m->rt->n_nexthops]))
		return false;
	if (sub[RTA_FLOW]) {
		uint32_t flow;
		if (mnl_attr_get_payload_len(sub[RTA_FLOW]) != 4)
			return false;
		if ((flow = mnl_attr_get_u32(sub[RTA_FLOW])) != 0) {
			m->flows_differ |= m->n_flow && flow != m->flow;
			m->flow = flow;
			m->n_flow++;
		}
	}
	m->rt->n_nexthops++;
	return true;
}

/*
 * The nexthops of an ECMP route. The kernel keeps an IPv4 realm per nexthop
 * (0 is none): the route has one when every nexthop has the same; other mixes
 * the protocol cannot carry, and the route is refused. IPv6 has no realms.
 */
static bool
nhs_from_multipath(const struct kmsg_env *env, const struct nlattr *mp, struct ps_route *rt)
{
	struct mp_read m = { .env = env, .rt = rt };

	if (!multipath_walk(mp, mp_read_one, &m) || rt->n_nexthops == 0)
		return false;
	if (rt->key.family != PS_FAM_V4)
		return true;
	if (m.n_flow && (m.flows_differ || m.n_flow != rt->n_nexthops))
		return false;
	if (m.n_flow) {
		rt->realm = m.flow;
		rt->has |= PS_RA_REALM;
	}
	return true;
}

bool
kmsg_rt_attrs(const struct kmsg_rt *kr, const struct kmsg_env *env, struct ps_route *rt,
    uint32_t *ret_nh_id)
{
	const struct rtmsg *rtm = kr->rtm;
	const struct nlattr *const *tb = kr->tb;
	uint8_t fam = kr->family;
	unsigned alen = fam == PS_FAM_V4 ? 4 : 16;
	uint32_t nh_id = 0;
	bool any_gw = false;

	memset(rt, 0, offsetof(struct ps_route, nh));
	rt->key.family = fam;
	if (rtm->rtm_type != RTN_UNICAST && rtm->rtm_type != RTN_BLACKHOLE &&
	    rtm->rtm_type != RTN_UNREACHABLE && rtm->rtm_type != RTN_PROHIBIT)
		return false;
	rt->type = rtm->rtm_type;
	if (rt->type == PS_RT_UNICAST) {
		bool ok;
		if (tb[RTA_NH_ID]) {
			nh_id = mnl_attr_get_u32(tb[RTA_NH_ID]);
			ok = nhs_from_object(env, nh_id, rt);
		} else if (tb[RTA_MULTIPATH]) {
			ok = nhs_from_multipath(env, tb[RTA_MULTIPATH], rt);
		} else {
			ok = nh_from_attrs(env, tb[RTA_GATEWAY], tb[RTA_VIA],
			    tb[RTA_OIF] ? (int)mnl_attr_get_u32(tb[RTA_OIF]) : 0, (uint8_t)rtm->rtm_flags, 1,
			    &rt->nh[0]);
			rt->n_nexthops = 1;
		}
		if (!ok)
			return false;
	}
	for (unsigned i = 0; i < rt->n_nexthops; i++)
		any_gw |= rt->nh[i].gw_family != 0;
	/* Scope as fibd writes it by default is no attribute; IPv6 has no scopes. */
	if (fam == PS_FAM_V4 &&
	    rtm->rtm_scope != (rt->type == PS_RT_UNICAST && !any_gw ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE)) {
		rt->has |= PS_RA_SCOPE;
		rt->scope = rtm->rtm_scope;
	}
	if (tb[RTA_PREFSRC] && mnl_attr_get_payload_len(tb[RTA_PREFSRC]) == alen) {
		memcpy(rt->prefsrc.b, mnl_attr_get_payload(tb[RTA_PREFSRC]), alen);
		rt->has |= PS_RA_PREFSRC;
	}
	/* (a route-level realm: IPv4's, one nexthop; 0 is none) */
	if (fam == PS_FAM_V4 && tb[RTA_FLOW] && mnl_attr_get_u32(tb[RTA_FLOW]) && !(rt->has & PS_RA_REALM)) {
		rt->realm = mnl_attr_get_u32(tb[RTA_FLOW]);
		rt->has |= PS_RA_REALM;
	}
	if (tb[RTA_METRICS]) {
		const struct nlattr *m;
		mnl_attr_for_each_nested(m, tb[RTA_METRICS])
			if (mnl_attr_get_type(m) == RTAX_MTU && mnl_attr_get_payload_len(m) == 4 &&
			    mnl_attr_get_u32(m)) {
				rt->mtu = mnl_attr_get_u32(m);
				rt->has |= PS_RA_MTU;
			}
	}
	/* Only what the protocol can carry (a numeric scope, say, it cannot). */
	if (ps_route_validate(rt, 0, NULL) < 0)
		return false;
	if (ret_nh_id)
		*ret_nh_id = nh_id;
	return true;
}

/* ---- the devices the kernel picked ---- */

/* The kernel's nexthops of an echoed route: gateway and device each. */
struct oif_list {
	unsigned n;
	bool bad;
	struct {
		union ps_addr gw;
		uint8_t fam;
		bool taken;
		int ifindex;
	} nh[64];
};

static void
oif_add(struct oif_list *l, const struct nlattr *gw, const struct nlattr *via, int ifindex)
{
	if (l->n == 64) {
		l->bad = true;
		return;
	}
	memset(&l->nh[l->n].gw, 0, sizeof(l->nh[l->n].gw));
	if (!gateway_of(gw, via, &l->nh[l->n].gw, &l->nh[l->n].fam)) {
		l->bad = true;
		return;
	}
	l->nh[l->n].taken = false;
	l->nh[l->n++].ifindex = ifindex;
}

static bool
oif_one(const struct rtnexthop *nh, const struct nlattr *const *sub, void *ctx)
{
	oif_add(ctx, sub[RTA_GATEWAY], sub[RTA_VIA], nh->rtnh_ifindex);
	return true;
}

/* The first of the kernel's nexthops not taken yet with nh's gateway (and its device, if nh names one). */
static int
oif_take(struct oif_list *l, const struct rnh *nh, bool by_device)
{
	for (unsigned k = 0; k < l->n; k++)
		if (!l->nh[k].taken && l->nh[k].fam == nh->gw_family && !memcmp(l->nh[k].gw.b, nh->gw.b, 16) &&
		    (!by_device || l->nh[k].ifindex == nh->ifindex)) {
			l->nh[k].taken = true;
			return l->nh[k].ifindex;
		}
	return 0;
}

bool
kmsg_rt_oifs(const struct kmsg_rt *kr, const struct rattr *a, int *oif)
{
	static struct oif_list l;
	const struct nlattr *const *tb = kr->tb;

	if (!a->n_nh || a->n_nh > 64 || tb[RTA_NH_ID])
		return false;
	l.n = 0;
	l.bad = false;
	if (tb[RTA_MULTIPATH]) {
		if (!multipath_walk(tb[RTA_MULTIPATH], oif_one, &l))
			return false;
	} else {
		oif_add(&l, tb[RTA_GATEWAY], tb[RTA_VIA], tb[RTA_OIF] ? (int)mnl_attr_get_u32(tb[RTA_OIF]) : 0);
	}
	if (l.bad || l.n != a->n_nh)
		return false;
	/* Nexthops with a device first, by gateway and device; then those given by their gateway alone. */
	for (unsigned i = 0; i < a->n_nh; i++)
		oif[i] = a->nh[i].ifname[0] ? oif_take(&l, &a->nh[i], true) : 0;
	for (unsigned i = 0; i < a->n_nh; i++)
		if (!a->nh[i].ifname[0])
			oif[i] = oif_take(&l, &a->nh[i], false);
	for (unsigned i = 0; i < a->n_nh; i++)
		if (oif[i] <= 0)
			return false;
	return true;
}

/* ---- writing ---- */

static struct nlmsghdr *
msg_start(void *buf, uint16_t type, uint16_t flags, uint32_t seq)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	nlh->nlmsg_seq = seq;
	return nlh;
}

static void
put_gateway(struct nlmsghdr *nlh, unsigned route_fam, const struct rnh *nh)
{
	if (!nh->gw_family)
		return;
	if (nh->gw_family == route_fam) {
		mnl_attr_put(nlh, RTA_GATEWAY, nh->gw_family == PS_FAM_V4 ? 4 : 16, nh->gw.b);
	} else {
		/* IPv4 route via an IPv6 gateway (RFC 5549). */
		struct {
			struct rtvia via;
			uint8_t addr[16];
		} v;
		v.via.rtvia_family = AF_INET6;
		memcpy(v.addr, nh->gw.b, 16);
		mnl_attr_put(nlh, RTA_VIA, sizeof(v.via) + 16, &v);
	}
}

/*
 * The nexthops written inline. An ECMP route's realm goes with each nexthop:
 * the kernel keeps it there, and refuses a route-level RTA_FLOW that differs
 * from the first nexthop's ("Nexthop class id does not match RTA_FLOW").
 */
static void
put_nexthops(struct nlmsghdr *nlh, struct rtmsg *rtm, unsigned fam, const struct rattr *a)
{
	if (a->n_nh == 1) {
		const struct rnh *nh = &a->nh[0];
		put_gateway(nlh, fam, nh);
		if (nh->ifindex > 0)
			mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)nh->ifindex);
		if (nh->flags & PS_NH_ONLINK)
			rtm->rtm_flags |= RTNH_F_ONLINK;
	} else if (a->n_nh > 1) {
		struct nlattr *mp = mnl_attr_nest_start(nlh, RTA_MULTIPATH);
		for (unsigned i = 0; i < a->n_nh; i++) {
			const struct rnh *nh = &a->nh[i];
			struct rtnexthop *rtnh = mnl_nlmsg_get_payload_tail(nlh);
			nlh->nlmsg_len += RTNH_ALIGN(sizeof(*rtnh));
			memset(rtnh, 0, sizeof(*rtnh));
			rtnh->rtnh_hops = (uint8_t)(nh->weight - 1);
			rtnh->rtnh_ifindex = nh->ifindex > 0 ? nh->ifindex : 0;
			rtnh->rtnh_flags = (nh->flags & PS_NH_ONLINK) ? RTNH_F_ONLINK : 0;
			put_gateway(nlh, fam, nh);
			if (rattr_realm(a))
				mnl_attr_put_u32(nlh, RTA_FLOW, rattr_realm(a));
			rtnh->rtnh_len = (unsigned short)((char *)mnl_nlmsg_get_payload_tail(nlh) -
			    (char *)rtnh);
		}
		mnl_attr_nest_end(nlh, mp);
	}
}

static struct rtmsg *
put_rtmsg(struct nlmsghdr *nlh, const struct kmsg_key *k, uint8_t protocol)
{
	struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));

	rtm->rtm_family = k->family == PS_FAM_V4 ? AF_INET : AF_INET6;
	rtm->rtm_table = k->table < 256 ? (uint8_t)k->table : RT_TABLE_UNSPEC;
	rtm->rtm_protocol = protocol;
	mnl_attr_put_u32(nlh, RTA_TABLE, k->table);
	return rtm;
}

size_t
kmsg_put_route(void *buf, uint32_t seq, enum kmsg_op op, const struct kmsg_key *k,
    uint8_t protocol, const struct rattr *a, unsigned how)
{
	static const uint16_t flags[] = {
		[KMSG_ADD_EXCL] = NLM_F_CREATE | NLM_F_EXCL,
		[KMSG_REPLACE] = NLM_F_CREATE | NLM_F_REPLACE,
		[KMSG_DEL] = 0,
	};
	struct nlmsghdr *nlh = msg_start(buf, op == KMSG_DEL ? RTM_DELROUTE : RTM_NEWROUTE,
	    (uint16_t)(NLM_F_ACK | flags[op] | (how & KMSG_ECHO ? NLM_F_ECHO : 0)), seq);
	struct rtmsg *rtm = put_rtmsg(nlh, k, protocol);
	unsigned alen = k->family == PS_FAM_V4 ? 4 : 16;
	bool any_gw = false;

	rtm->rtm_dst_len = k->plen;
	rtm->rtm_tos = k->tos;
	mnl_attr_put(nlh, RTA_DST, alen, k->prefix.b);
	mnl_attr_put_u32(nlh, RTA_PRIORITY, k->metric);
	if (op == KMSG_DEL) {
		/* Deletes name fibd's protocol: the kernel never deletes a foreign route for us. */
		rtm->rtm_scope = RT_SCOPE_NOWHERE;
		rtm->rtm_type = RTN_UNSPEC;
		return nlh->nlmsg_len;
	}
	rtm->rtm_type = a->type;
	for (unsigned i = 0; i < a->n_nh; i++)
		any_gw |= a->nh[i].gw_family != 0;
	if (a->has & PS_RA_SCOPE)
		rtm->rtm_scope = a->scope;
	else
		rtm->rtm_scope = a->type == PS_RT_UNICAST && !any_gw ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
	if (how & KMSG_NH_OBJECT)
		mnl_attr_put_u32(nlh, RTA_NH_ID, a->nh_id);
	else
		put_nexthops(nlh, rtm, k->family, a);
	if (a->has & PS_RA_PREFSRC)
		mnl_attr_put(nlh, RTA_PREFSRC, alen, a->prefsrc.b);
	/*
	 * A realm is IPv4's (IPv6 drops it unsaid), kept per nexthop, 0 meaning
	 * none: with an object, none (nl_send.c writes such a route inline);
	 * ECMP's above.
	 */
	if (rattr_realm(a) && !(how & KMSG_NH_OBJECT) && a->n_nh <= 1)
		mnl_attr_put_u32(nlh, RTA_FLOW, rattr_realm(a));
	if (a->has & PS_RA_MTU) {
		struct nlattr *mx = mnl_attr_nest_start(nlh, RTA_METRICS);
		mnl_attr_put_u32(nlh, RTAX_MTU, a->mtu);
		mnl_attr_nest_end(nlh, mx);
	}
	return nlh->nlmsg_len;
}

size_t
kmsg_put_nh_object(void *buf, uint32_t seq, uint8_t protocol, const struct rattr *a, int member,
    uint32_t id)
{
	struct nlmsghdr *nlh = msg_start(buf, RTM_NEWNEXTHOP, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, seq);
	struct nhmsg *nhm = mnl_nlmsg_put_extra_header(nlh, sizeof(*nhm));

	nhm->nh_protocol = protocol;
	mnl_attr_put_u32(nlh, NHA_ID, id);
	if (member < 0) {
		struct nexthop_grp grp[PS_NEXTHOPS_MAX];
		for (unsigned i = 0; i < a->n_nh; i++) {
			memset(&grp[i], 0, sizeof(grp[i]));
			grp[i].id = a->nh_id - a->n_nh + i;
			grp[i].weight = (uint8_t)(a->nh[i].weight - 1);
		}
		nhm->nh_family = AF_UNSPEC;
		mnl_attr_put(nlh, NHA_GROUP, a->n_nh * sizeof(grp[0]), grp);
	} else {
		const struct rnh *nh = &a->nh[member];
		unsigned fam = nh->gw_family ? nh->gw_family : a->family;
		nhm->nh_family = fam == PS_FAM_V4 ? AF_INET : AF_INET6;
		if (nh->flags & PS_NH_ONLINK)
			nhm->nh_flags |= RTNH_F_ONLINK;
		int oif = nh->ifindex > 0 ? nh->ifindex : nh->kifindex;
		if (oif > 0)
			mnl_attr_put_u32(nlh, NHA_OIF, (uint32_t)oif);
		if (nh->gw_family)
			mnl_attr_put(nlh, NHA_GATEWAY, nh->gw_family == PS_FAM_V4 ? 4 : 16, nh->gw.b);
	}
	return nlh->nlmsg_len;
}

size_t
kmsg_put_nh_del(void *buf, uint32_t seq, uint32_t id)
{
	struct nlmsghdr *nlh = msg_start(buf, RTM_DELNEXTHOP, NLM_F_ACK, seq);
	struct nhmsg *nhm = mnl_nlmsg_put_extra_header(nlh, sizeof(*nhm));

	/* A delete names the id alone: the kernel refuses other header fields. */
	nhm->nh_family = AF_UNSPEC;
	mnl_attr_put_u32(nlh, NHA_ID, id);
	return nlh->nlmsg_len;
}

size_t
kmsg_put_dump(void *buf, uint32_t seq, uint32_t table, uint8_t family, uint8_t protocol)
{
	struct nlmsghdr *nlh = msg_start(buf, RTM_GETROUTE, NLM_F_DUMP, seq);
	const struct kmsg_key k = { .table = table, .family = family };

	put_rtmsg(nlh, &k, protocol);
	return nlh->nlmsg_len;
}
