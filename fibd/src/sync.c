/*
 * sync: first scans of the tables fibd writes to.
 *
 * Jobs run one at a time on a dedicated nonblocking netlink socket with
 * NETLINK_GET_STRICT_CHK, so that the kernel sends only the asked table and
 * protocol. A callback reads at most SYNC_DUMP_DATAGRAMS datagrams. The routes
 * of a dump are collected, and adopted only once the dump has ended with
 * NLMSG_DONE, no message carried NLM_F_DUMP_INTR, and the monitor saw no change
 * to the table (nor lost a notification) while it ran (DESIGN.md invariant 5):
 * the kernel does not flag every inconsistent dump, IPv6 ones least of all. An
 * interrupted or failed dump is discarded and retried with backoff.
 *
 * Adopting a route: its entry gets `have` = its attributes as the dump gave
 * them (interned like a client's, with the nexthop object an earlier fibd made),
 * or the adopted marker when fibd cannot read them. A client feeding the same
 * route then costs no write; a changed one is replaced, not added with EXCL and
 * refused with EEXIST; a withdraw deletes it. The
 * adopted keys are kept: `grace` seconds after the scan, those still claimed by
 * no client are withdrawn (at most SYNC_PRUNE_BUDGET per callback). A client
 * that comes back in time claims its routes by feeding them again.
 *
 * Table states: NONE (never asked), QUEUED, RUNNING, DONE. nl holds back writes
 * to a table until it is DONE (DESIGN.md invariant 7).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

#include "health.h"
#include "learn.h"
#include "log.h"
#include "feed.h"
#include "nl.h"
#include "sync.h"
#include "watch.h"

enum { SCAN_NONE, SCAN_QUEUED, SCAN_RUNNING, SCAN_DONE };

/* The attributes of an adopted route: in the kernel, not known to fibd. Never freed. */
static struct rattr adopted = { .refs = 1 };

/* Keys adopted by one scan, to be checked for claims when the grace time is over. */
struct prune {
	struct prune *next;
	uint16_t table;
	uint64_t due; /* uv_now() ms */
	struct sync_key *keys;
	size_t n, at;
};

static struct {
	uv_loop_t *loop;
	struct mnl_socket *sock;
	uint32_t grace_ms;
	struct prune *prunes; /* in order of due time */
	uv_timer_t prune_timer;
	uv_idle_t pruner;
	/* after a valid dump: its keys applied to the table a budget at a time */
	uv_idle_t applier;
	size_t apply_at;
	uint64_t apply_adopted;
	bool apply_rescan;
	bool busy;          /* a job (dump, apply, repair) is under way */
	bool dumping;       /* its dump has not ended yet */
	bool learning;      /* the job is a learn dump (every protocol, for learn.c) */
	bool learn_replaying; /* its dump is done; learn.c replays what it kept (sync_on_apply) */
	uint64_t changes_at_start, overruns_at_start;
	uv_timer_t soon;    /* debounces rescans asked for by link and address events */
	uv_timer_t periodic;
	uint32_t interval_ms;
	bool read_attrs; /* turn the routes of a dump into attributes (the daemon does) */
	struct {
		int ifindex;
		char name[PS_IFNAMSIZ];
	} ifnames[64];
	uv_poll_t poll;
	uv_timer_t retry;   /* the earliest backoff of a queued table ends */
	bool open;
	uint8_t protocol;
	uint64_t order;     /* stamps queued tables */
	struct rtable *cur;
	uint32_t seq;
	uint64_t bytes;
	struct sync_key *keys;
	size_t n_keys, cap_keys;
	bool keys_failed;
	/* notifications of the table being scanned, kept until its snapshot is applied */
	bool keeping;
	char *kept;
	size_t kept_len, kept_cap, kept_at;
	bool kept_overflow;
	_Alignas(8) char rx[65536]; /* netlink messages are 4-byte aligned */
	struct sync_stats st;
} sy;

static void sync_on_readable(uv_poll_t *h, int status, int events);
static void queue_learn(struct rtable *t);

/* The dump socket's I/O; tests script it (sync_set_io). */
static ssize_t
real_send(const void *buf, size_t len)
{
	return mnl_socket_sendto(sy.sock, buf, len);
}

static ssize_t
real_recv(void *buf, size_t len)
{
	return mnl_socket_recvfrom(sy.sock, buf, len);
}

static sync_send_fn io_send = real_send;
static sync_recv_fn io_recv = real_recv;

void
sync_set_io(sync_send_fn send_fn, sync_recv_fn recv_fn)
{
	io_send = send_fn ? send_fn : real_send;
	io_recv = recv_fn ? recv_fn : real_recv;
}

void
sync_poll(void)
{
	sync_on_readable(&sy.poll, 0, UV_READABLE);
}
static void start_next(void);

static void
sync_on_retry(uv_timer_t *h)
{
	(void)h;
	start_next();
}

/* ---- parsing ---- */

struct route_attrs {
	const struct nlattr *tb[RTA_MAX + 1];
};

static int
attr_cb(const struct nlattr *attr, void *data)
{
	struct route_attrs *ra = data;
	int type = mnl_attr_get_type(attr);

	if (type <= RTA_MAX)
		ra->tb[type] = attr;
	return MNL_CB_OK;
}

static bool
ifname_of(int ifindex, char *name)
{
	unsigned slot = (unsigned)ifindex % 64;
	char tmp[IF_NAMESIZE];

	if (ifindex <= 0)
		return false;
	if (sy.ifnames[slot].ifindex != ifindex) {
		if (!if_indextoname((unsigned)ifindex, tmp) || strlen(tmp) >= PS_IFNAMSIZ)
			return false;
		sy.ifnames[slot].ifindex = ifindex;
		memcpy(sy.ifnames[slot].name, tmp, strlen(tmp) + 1);
	}
	memcpy(name, sy.ifnames[slot].name, PS_IFNAMSIZ);
	return true;
}

static bool
nh_from_object(const struct nl_nhobj *o, uint16_t weight, struct ps_nexthop *nh)
{
	memset(nh, 0, sizeof(*nh));
	if (!o || o->n_members || !ifname_of(o->ifindex, nh->ifname))
		return false;
	nh->gw = o->gw;
	nh->gw_family = o->gw_family;
	nh->flags = o->flags;
	nh->weight = weight;
	return true;
}

static bool
nh_from_attrs(const struct nlattr *gw, const struct nlattr *via, int ifindex, uint8_t flags,
    uint16_t weight, struct ps_nexthop *nh)
{
	memset(nh, 0, sizeof(*nh));
	if (gw) {
		uint16_t len = mnl_attr_get_payload_len(gw);
		if (len != 4 && len != 16)
			return false;
		memcpy(nh->gw.b, mnl_attr_get_payload(gw), len);
		nh->gw_family = len == 4 ? PS_FAM_V4 : PS_FAM_V6;
	} else if (via) {
		const struct rtvia *v = mnl_attr_get_payload(via);
		if (mnl_attr_get_payload_len(via) != sizeof(*v) + 16 || v->rtvia_family != AF_INET6)
			return false;
		memcpy(nh->gw.b, v->rtvia_addr, 16);
		nh->gw_family = PS_FAM_V6;
	}
	if (ifindex && !ifname_of(ifindex, nh->ifname))
		return false;
	nh->flags = flags & RTNH_F_ONLINK ? PS_NH_ONLINK : 0;
	nh->weight = weight;
	return nh->gw_family || nh->ifname[0];
}

/* The 32-bit attributes fibd reads from a route message are 4 bytes long. */
bool
sync_attrs_sane(const struct nlattr *const *tb)
{
	static const int u32s[] = { RTA_TABLE, RTA_PRIORITY, RTA_OIF, RTA_FLOW, RTA_NH_ID };

	for (size_t i = 0; i < sizeof(u32s) / sizeof(u32s[0]); i++)
		if (tb[u32s[i]] && mnl_attr_get_payload_len(tb[u32s[i]]) != 4)
			return false;
	return true;
}

bool
sync_route_from_msg(const struct rtmsg *rtm, const struct nlattr *const *tb, uint8_t fam,
    struct ps_route *rt, uint32_t *ret_nh_id)
{
	uint32_t nh_id = 0;
	bool any_gw = false;

	memset(rt, 0, offsetof(struct ps_route, nh));
	rt->key.family = fam;
	if (!sync_attrs_sane(tb))
		return false;
	if (rtm->rtm_type != RTN_UNICAST && rtm->rtm_type != RTN_BLACKHOLE &&
	    rtm->rtm_type != RTN_UNREACHABLE && rtm->rtm_type != RTN_PROHIBIT)
		return false;
	rt->type = rtm->rtm_type;
	if (rt->type == PS_RT_UNICAST) {
		if (tb[RTA_NH_ID]) {
			/* Only the objects fibd made are known here. */
			const struct nl_nhobj *o = nl_old_nh_object(mnl_attr_get_u32(tb[RTA_NH_ID]));
			if (!o)
				return false;
			nh_id = o->id;
			if (o->n_members) {
				for (unsigned i = 0; i < o->n_members; i++)
					if (o->members[i] != o->id - o->n_members + i ||
					    !nh_from_object(nl_old_nh_object(o->members[i]), o->weights[i],
						&rt->nh[i]))
						return false;
				rt->n_nexthops = o->n_members;
			} else {
				if (!nh_from_object(o, 1, &rt->nh[0]))
					return false;
				rt->n_nexthops = 1;
			}
		} else if (tb[RTA_MULTIPATH]) {
			const struct rtnexthop *nh = mnl_attr_get_payload(tb[RTA_MULTIPATH]);
			int left = mnl_attr_get_payload_len(tb[RTA_MULTIPATH]);
			while (left >= (int)sizeof(*nh) && nh->rtnh_len >= sizeof(*nh) &&
			    nh->rtnh_len <= left && rt->n_nexthops < PS_NEXTHOPS_MAX) {
				const struct nlattr *sub[RTA_MAX + 1] = { 0 };
				const struct nlattr *at = (const struct nlattr *)RTNH_DATA(nh);
				int sl = nh->rtnh_len - (int)RTNH_LENGTH(0);
				while (mnl_attr_ok(at, sl)) {
					if (mnl_attr_get_type(at) <= RTA_MAX)
						sub[mnl_attr_get_type(at)] = at;
					sl -= (int)MNL_ALIGN(at->nla_len);
					at = mnl_attr_next(at);
				}
				if (!nh_from_attrs(sub[RTA_GATEWAY], sub[RTA_VIA], nh->rtnh_ifindex,
					nh->rtnh_flags, (uint16_t)(nh->rtnh_hops + 1),
					&rt->nh[rt->n_nexthops]))
					return false;
				rt->n_nexthops++;
				left -= RTNH_ALIGN(nh->rtnh_len);
				nh = RTNH_NEXT(nh);
			}
		} else {
			if (!nh_from_attrs(tb[RTA_GATEWAY], tb[RTA_VIA],
				tb[RTA_OIF] ? (int)mnl_attr_get_u32(tb[RTA_OIF]) : 0, (uint8_t)rtm->rtm_flags,
				1, &rt->nh[0]))
				return false;
			rt->n_nexthops = 1;
		}
		if (!rt->n_nexthops)
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
	if (tb[RTA_PREFSRC] && mnl_attr_get_payload_len(tb[RTA_PREFSRC]) == (fam == PS_FAM_V4 ? 4 : 16)) {
		memcpy(rt->prefsrc.b, mnl_attr_get_payload(tb[RTA_PREFSRC]), fam == PS_FAM_V4 ? 4 : 16);
		rt->has |= PS_RA_PREFSRC;
	}
	if (tb[RTA_FLOW] && mnl_attr_get_payload_len(tb[RTA_FLOW]) == 4) {
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

/*
 * The attributes of a dumped route, in the form fibd interns: equal to what a
 * client feeds for the same route, so that feeding it again costs no write.
 * NULL when fibd cannot say (another route type, an unknown nexthop object).
 */
static struct rattr *
read_attrs(const struct rtmsg *rtm, const struct nlattr *const *tb, uint8_t fam)
{
	static struct ps_route rt;
	struct rattr *a;
	uint32_t nh_id;

	if (!sync_route_from_msg(rtm, tb, fam, &rt, &nh_id))
		return NULL;
	a = rattr_intern(&rt);
	if (a && nh_id && a->nh_state == RATTR_NH_NONE) {
		/* The object an earlier fibd made stands for these nexthops. */
		a->nh_id = nh_id;
		a->nh_state = RATTR_NH_CREATED;
	}
	return a;
}

/*
 * The walk shared by both kinds of dump: a datagram's messages, checked for
 * NLMSG_DONE, NLM_F_DUMP_INTR and errors; each route of table (id, family)
 * goes to each(). Returns as sync_parse.
 */
typedef int (*dump_route_fn)(const struct nlmsghdr *nlh, const struct rtmsg *rtm,
    const struct nlattr *const *tb, void *ctx);

static int
walk_dump(const void *buf, size_t len, uint32_t table, uint8_t family, dump_route_fn each, void *ctx)
{
	const struct nlmsghdr *nlh = buf;
	int left = (int)len;
	unsigned alen = family == PS_FAM_V4 ? 4 : 16;
	int kfam = family == PS_FAM_V4 ? AF_INET : AF_INET6;

	for (; nl_msg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
		const struct rtmsg *rtm;
		struct route_attrs ra;
		uint32_t t;
		int r;

		if (nlh->nlmsg_flags & NLM_F_DUMP_INTR)
			return -EINTR;
		if (nlh->nlmsg_type == NLMSG_DONE)
			return 1;
		if (nlh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
			if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*e)))
				return -EIO;
			return e->error ? e->error : -EIO;
		}
		if (nlh->nlmsg_type != RTM_NEWROUTE)
			continue;
		if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*rtm)))
			return -EIO;
		rtm = mnl_nlmsg_get_payload(nlh);
		memset(&ra, 0, sizeof(ra));
		if (mnl_attr_parse(nlh, sizeof(*rtm), attr_cb, &ra) < 0 || !sync_attrs_sane(ra.tb))
			return -EIO;
		t = ra.tb[RTA_TABLE] ? mnl_attr_get_u32(ra.tb[RTA_TABLE]) : rtm->rtm_table;
		if (rtm->rtm_family != kfam || t != table || rtm->rtm_dst_len > alen * 8)
			continue;
		if (ra.tb[RTA_DST] && mnl_attr_get_payload_len(ra.tb[RTA_DST]) != alen)
			return -EIO;
		if ((r = each(nlh, rtm, ra.tb, ctx)) < 0)
			return r;
	}
	return left == 0 ? 0 : -EIO;
}

/* The key of a route message (its RTA_DST checked), with its attributes if fibd reads them. */
static void
key_from_msg(const struct rtmsg *rtm, const struct nlattr *const *tb, uint8_t family,
    struct sync_key *k)
{
	memset(k, 0, sizeof(*k));
	if (tb[RTA_DST])
		memcpy(k->prefix.b, mnl_attr_get_payload(tb[RTA_DST]), mnl_attr_get_payload_len(tb[RTA_DST]));
	k->plen = rtm->rtm_dst_len;
	k->tos = rtm->rtm_tos;
	k->metric = tb[RTA_PRIORITY] ? mnl_attr_get_u32(tb[RTA_PRIORITY]) : 0;
	k->attrs = sy.read_attrs ? read_attrs(rtm, tb, family) : NULL;
}

struct parse_ctx {
	uint8_t family, protocol;
	sync_route_cb on_route;
	void *ctx;
	uint64_t *foreign;
};

static int
parse_one(const struct nlmsghdr *nlh, const struct rtmsg *rtm, const struct nlattr *const *tb,
    void *ctx)
{
	struct parse_ctx *pc = ctx;
	struct sync_key k;
	(void)nlh;

	if (rtm->rtm_protocol != pc->protocol) {
		if (pc->foreign)
			(*pc->foreign)++;
		return 0;
	}
	key_from_msg(rtm, tb, pc->family, &k);
	pc->on_route(&k, pc->ctx);
	return 0;
}

int
sync_parse(const void *buf, size_t len, uint32_t table, uint8_t family, uint8_t protocol,
    sync_route_cb on_route, void *ctx, uint64_t *ret_foreign)
{
	struct parse_ctx pc = {
		.family = family, .protocol = protocol, .on_route = on_route, .ctx = ctx,
		.foreign = ret_foreign,
	};

	return walk_dump(buf, len, table, family, parse_one, &pc);
}

static int
learn_one(const struct nlmsghdr *nlh, const struct rtmsg *rtm, const struct nlattr *const *tb,
    void *ctx)
{
	(void)rtm;
	(void)tb;
	learn_dump_msg(ctx, nlh);
	return 0;
}

/* ---- jobs ---- */

static void
collect(const struct sync_key *k, void *ctx)
{
	(void)ctx;
	if (sy.keys_failed) {
		rattr_unref(k->attrs);
		return;
	}
	if (sy.n_keys == sy.cap_keys) {
		size_t cap = sy.cap_keys ? sy.cap_keys * 2 : 1024;
		struct sync_key *nk = realloc(sy.keys, cap * sizeof(*nk));
		if (!nk) {
			rattr_unref(k->attrs);
			sy.keys_failed = true;
			return;
		}
		sy.keys = nk;
		sy.cap_keys = cap;
	}
	sy.keys[sy.n_keys++] = *k;
}

static void sync_on_prune_timer(uv_timer_t *h);

static void
prune_arm(void)
{
	uint64_t now = uv_now(sy.loop);

	if (!sy.prunes || uv_is_active((uv_handle_t *)&sy.pruner))
		return;
	uv_timer_start(&sy.prune_timer, sync_on_prune_timer,
	    sy.prunes->due > now ? sy.prunes->due - now : 0, 0);
}

/* Put a prune job in the list, in order of due time. */
static void
prune_insert(struct prune *p)
{
	struct prune **link;

	for (link = &sy.prunes; *link && (*link)->due <= p->due; link = &(*link)->next)
		;
	p->next = *link;
	*link = p;
}

/*
 * Hand the adopted keys of t's scan to a prune job due after the grace time,
 * or at once for a first scan when every client that fed t before the restart
 * has fed it again (sync_table_claimed).
 */
static void
prune_schedule(struct rtable *t)
{
	struct prune *p = calloc(1, sizeof(*p));

	if (!p) {
		log_warn("sync: table %u: out of memory; its unclaimed routes will stay", t->id);
		return;
	}
	p->table = t->idx;
	p->due = uv_now(sy.loop) + (t->claims_in && !sy.apply_rescan ? 0 : sy.grace_ms);
	p->keys = sy.keys; /* the job takes the vector; collecting starts a new one */
	p->n = sy.n_keys;
	sy.keys = NULL;
	sy.n_keys = sy.cap_keys = 0;
	prune_insert(p);
	prune_arm();
}

void
sync_table_claimed(struct rtable *t)
{
	bool running = sy.open && uv_is_active((uv_handle_t *)&sy.pruner);
	struct prune **link = &sy.prunes, *now = NULL, *head = NULL;

	t->claims_in = true;
	if (running && sy.prunes) {
		/* The job under way stays first. */
		head = sy.prunes;
		sy.prunes = head->next;
	}
	/* Jobs already waiting for t (its first scan is done): due now. */
	while (*link) {
		struct prune *p = *link;
		if (p->table != t->idx) {
			link = &p->next;
			continue;
		}
		*link = p->next;
		p->due = 0;
		p->next = now;
		now = p;
	}
	while (now) {
		struct prune *p = now;
		now = p->next;
		prune_insert(p);
	}
	if (head) {
		head->next = sy.prunes;
		sy.prunes = head;
	}
	if (sy.open && !running) {
		uv_timer_stop(&sy.prune_timer);
		prune_arm();
	}
}

/* Withdraw adopted routes that no client claimed, a budget at a time. */
static void
sync_on_prune(uv_idle_t *h)
{
	uint64_t t0 = health_cb_begin();
	struct prune *p = sy.prunes;
	struct rtable *t;
	unsigned budget = SYNC_PRUNE_BUDGET;
	(void)h;

	if (!p) {
		uv_idle_stop(&sy.pruner);
		return;
	}
	t = table_at(p->table);
	for (; p->at < p->n && budget; p->at++, budget--) {
		const struct sync_key *k = &p->keys[p->at];
		struct route *r = table_lookup(t, &k->prefix, k->plen, k->tos, k->metric);
		/* Unclaimed: no owner wants it, yet the kernel has it (fibd adopted it). */
		if (!r || r->owner != OWNER_NONE || r->want || !r->have)
			continue;
		sy.st.routes_pruned++;
		nl_enqueue(r);
	}
	if (p->at == p->n) {
		log_info("sync: table %u: grace time over, %llu unclaimed routes withdrawn so far",
		    t->id, (unsigned long long)sy.st.routes_pruned);
		sy.prunes = p->next;
		free(p->keys);
		free(p);
		uv_idle_stop(&sy.pruner);
		prune_arm();
	}
	health_cb_end(t0, "sync prune");
}

static void
sync_on_prune_timer(uv_timer_t *h)
{
	(void)h;
	uv_idle_start(&sy.pruner, sync_on_prune);
}

static void job_done(void);
static void rescan_done(void);

/* A scan of t waits in the queue (once), in the order asked for. */
static void
mark_queued(struct rtable *t)
{
	if (t->scan_queued)
		return;
	t->scan_queued = true;
	t->scan_order = ++sy.order;
}

/* Release the attributes of collected keys from i on (a discarded dump, a failure). */
static void
drop_attrs(size_t i)
{
	for (; i < sy.n_keys; i++)
		sy.keys[i].attrs = rattr_unref(sy.keys[i].attrs);
}

/*
 * One key of a valid dump (or of a kept notification): adopt it if fibd does
 * not know it (have = the attributes the dump gave, or the adopted marker when
 * fibd could not read them), see whether someone changed it, and mark it seen
 * in this epoch. Consumes k->attrs. False when out of memory.
 */
static bool
apply_key(struct rtable *t, struct sync_key *k)
{
	struct route *r = table_insert(t, &k->prefix, k->plen, k->tos, k->metric);

	if (!r) {
		k->attrs = rattr_unref(k->attrs);
		return false;
	}
	if (t->diffing) {
		if (!r->want)
			watch_diff(t, DIFF_EXTRA, r, k->attrs);
		else if (k->attrs && !rattr_fulfils(k->attrs, r->want))
			watch_diff(t, DIFF_DIFFERS, r, k->attrs);
	}
	if (r->have) {
		/*
		 * Someone changed a route of fibd's behind its back (it kept fibd's
		 * protocol, so no notification told): write it again. What the
		 * kernel filled in (the device of a gateway given alone) is no change. Not when the
		 * kernel acknowledged a write of it since the dump began (seen is then
		 * already this epoch): the dump may predate that write.
		 */
		if (sy.apply_rescan && k->attrs && !rattr_fulfils(k->attrs, r->have) && r->want &&
		    r->seen != t->epoch && !(r->flags & (R_QUEUED | R_INFLIGHT))) {
			sy.st.routes_changed++;
			nl_route_changed(r, k->attrs);
			k->attrs = NULL;
		}
		r->seen = t->epoch;
		k->attrs = rattr_unref(k->attrs);
		return true;
	}
	r->seen = t->epoch;
	/* What the dump said the route is, or "something fibd did not read". */
	if (log_is_debug()) {
		union ps_addr p;
		char text[64];
		route_prefix(r, &p);
		inet_ntop(t->family == PS_FAM_V4 ? AF_INET : AF_INET6, p.b, text, sizeof(text));
		log_debug("sync: table %u: adopting %s/%u tos %u metric %u", t->id, text, k->plen,
		    k->tos, k->metric);
	}
	r->have = k->attrs ? k->attrs : rattr_ref(&adopted);
	k->attrs = NULL;
	r->flags &= (uint8_t)~R_EXCL;
	t->n_installed++;
	sy.apply_adopted++;
	return true;
}

/* ---- notifications kept during a scan (DESIGN invariant 6) ---- */

bool
sync_keeps(const struct rtable *t)
{
	return sy.keeping && sy.cur == t;
}

void
sync_keep(struct rtable *t, const struct nlmsghdr *nlh)
{
	size_t need = MNL_ALIGN(nlh->nlmsg_len);

	(void)t;
	if (sy.kept_overflow)
		return;
	if (sy.kept_len + need > sy.kept_cap) {
		size_t cap = sy.kept_cap ? sy.kept_cap * 2 : 65536;
		char *nb;
		while (cap < sy.kept_len + need)
			cap *= 2;
		if (cap > SYNC_KEEP_MAX || !(nb = realloc(sy.kept, cap))) {
			/* The scan cannot be made whole: it is taken again (sync_on_readable). */
			log_warn("sync: table %u: over %u bytes of notifications during its scan",
			    sy.cur->id, SYNC_KEEP_MAX);
			sy.st.keep_overflows++;
			sy.kept_overflow = true;
			return;
		}
		sy.kept = nb;
		sy.kept_cap = cap;
	}
	memcpy(sy.kept + sy.kept_len, nlh, nlh->nlmsg_len);
	sy.kept_len += need;
}

static void
keep_start(void)
{
	sy.keeping = true;
	sy.kept_len = sy.kept_at = 0;
	sy.kept_overflow = false;
}

static void
keep_stop(void)
{
	sy.keeping = false;
	sy.kept_len = sy.kept_at = 0;
	sy.kept_overflow = false;
	if (sy.kept_cap > 65536) { /* a burst does not stay resident */
		free(sy.kept);
		sy.kept = NULL;
		sy.kept_cap = 0;
	}
}

/*
 * One kept notification, on top of the applied snapshot: a route of fibd's
 * protocol that someone added or replaced is applied as a dump would show it
 * (adopted if unknown; kept in the prune list); anything else is what a
 * notification means at any time (nl_route_notified).
 */
static void
replay_one(struct rtable *t, const struct nlmsghdr *nlh)
{
	const struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);
	struct route_attrs ra;
	struct sync_key k;

	sy.st.notifications_replayed++;
	if (nlh->nlmsg_type != RTM_NEWROUTE || rtm->rtm_protocol != sy.protocol) {
		nl_route_notified(t, nlh);
		return;
	}
	memset(&ra, 0, sizeof(ra));
	if (mnl_attr_parse(nlh, sizeof(*rtm), attr_cb, &ra) < 0 || !sync_attrs_sane(ra.tb) ||
	    (ra.tb[RTA_DST] && mnl_attr_get_payload_len(ra.tb[RTA_DST]) != (t->family == PS_FAM_V4 ? 4u : 16u)))
		return;
	key_from_msg(rtm, ra.tb, t->family, &k);
	if (!apply_key(t, &k))
		return;
	collect(&k, NULL); /* for the prune check, if adopted; already applied */
	sy.apply_at = sy.n_keys;
}

/*
 * Apply a valid dump's keys, then replay the notifications kept since it began,
 * SYNC_APPLY_BUDGET of both per callback (apply_key, replay_one). Then a first
 * scan releases the writes that waited for it; a rescan has feed look for the
 * routes it lost.
 */
static void
sync_on_apply(uv_idle_t *h)
{
	uint64_t t0 = health_cb_begin();
	struct rtable *t = sy.cur;
	unsigned budget = SYNC_APPLY_BUDGET;
	bool again = false;
	(void)h;

	if (sy.learn_replaying) {
		if (learn_replay(t, LEARN_REPLAY_BUDGET, &again)) {
			uv_idle_stop(&sy.applier);
			sy.learn_replaying = false;
			if (again)
				queue_learn(t);
			job_done();
		}
		health_cb_end(t0, "learn replay");
		return;
	}
	for (; sy.apply_at < sy.n_keys && budget; sy.apply_at++, budget--) {
		if (!apply_key(t, &sy.keys[sy.apply_at])) {
			log_warn("sync: table %u: out of memory adopting routes", t->id);
			drop_attrs(sy.apply_at);
			sy.apply_at = sy.n_keys;
			break;
		}
	}
	/* Notifications that come while these are replayed are kept and replayed too. */
	while (sy.apply_at == sy.n_keys && sy.kept_at < sy.kept_len && budget && !sy.kept_overflow) {
		const struct nlmsghdr *nlh = (const struct nlmsghdr *)(sy.kept + sy.kept_at);
		sy.kept_at += MNL_ALIGN(nlh->nlmsg_len);
		replay_one(t, nlh);
		budget--;
	}
	if (sy.apply_at < sy.n_keys || (sy.kept_at < sy.kept_len && !sy.kept_overflow)) {
		health_cb_end(t0, "sync apply");
		return;
	}
	uv_idle_stop(&sy.applier);
	if (sy.kept_overflow) {
		/* Notifications were lost after the dump: what it showed may be stale. */
		log_warn("sync: table %u: notifications lost while its scan was applied; scanning it again",
		    t->id);
		mark_queued(t);
	}
	keep_stop();
	sy.st.routes_adopted += sy.apply_adopted;
	log_info("sync: table %u %s: %s done, %llu routes of fibd's adopted", t->id,
	    family_name(t->family), sy.apply_rescan ? "rescan" : "first scan",
	    (unsigned long long)sy.apply_adopted);
	t->scanned_at = (int64_t)time(NULL);
	t->scan_routes = sy.n_keys;
	if (sy.apply_adopted)
		prune_schedule(t);
	sy.n_keys = 0;
	if (!sy.apply_rescan) {
		t->scan = SCAN_DONE;
		nl_release_held(t);
		job_done();
	} else if (t->dump_unsure) {
		/* What an unsure dump lacks may be there: no route is taken for lost from it. */
		rescan_done();
	} else {
		feed_repair(t, rescan_done);
	}
	health_cb_end(t0, "sync apply");
}

/* A rescan's repair walk is over: a diff waiting for it has all it needs. */
static void
rescan_done(void)
{
	if (sy.cur->diffing)
		watch_diff_end(sy.cur, sy.cur->scan_routes, sy.cur->dump_unsure);
	job_done();
}

static void
job_done(void)
{
	sy.cur = NULL;
	sy.busy = false;
	start_next();
}

static void
job_end(bool ok, const char *why)
{
	struct rtable *t = sy.cur;
	bool learning = sy.learning;

	sy.dumping = false;
	sy.learning = false;
	if (ok) {
		sy.st.dumps_completed++;
		t->scan_retry_ms = 0;
	}
	if (learning && ok) {
		log_info("sync: table %u %s: learn dump done", t->id,
		    family_name(t->family));
		if (learn_end(t, true)) {
			queue_learn(t); /* notifications were lost during it: again */
			job_done();
			return;
		}
		/* What was kept during it goes out a budget at a time (sync_on_apply). */
		sy.learn_replaying = true;
		uv_idle_start(&sy.applier, sync_on_apply);
		return;
	}
	if (ok) {
		/* A scan: an IPv6 dump during which others changed the table is unsure. */
		t->dump_unsure = t->family == PS_FAM_V6 && t->changes != sy.changes_at_start;
		t->churn_discards = 0;
		if (t->dump_unsure) {
			sy.st.dumps_unsure++;
			log_info("sync: table %u inet6: changed by others during %u dumps in a row; "
				 "using this one for what it shows, not for what it lacks",
			    t->id, SYNC_CHURN_TRIES + 1);
		}
		sy.apply_rescan = t->scan == SCAN_DONE;
		if (sy.apply_rescan && t->diff_waiting)
			watch_diff_begin(t);
		sy.apply_at = 0;
		sy.apply_adopted = 0;
		sy.keys_failed = false;
		uv_idle_start(&sy.applier, sync_on_apply);
		return;
	}
	/*
	 * Again after a pause that doubles with each discard. The backoff is the
	 * table's own: other tables' scans go ahead meanwhile, so a table under
	 * churn does not hold up the first scan of another.
	 */
	t->scan_discards++;
	if (t->scan_retry_ms < SYNC_RETRY_MIN_MS)
		t->scan_retry_ms = SYNC_RETRY_MIN_MS;
	log_warn("sync: table %u %s: %sdump discarded (%s); retrying in %u ms", t->id,
	    family_name(t->family), learning ? "learn " : "", why, t->scan_retry_ms);
	t->scan_not_before = uv_now(sy.loop) + t->scan_retry_ms;
	t->scan_retry_ms = t->scan_retry_ms * 2 > SYNC_RETRY_MAX_MS ? SYNC_RETRY_MAX_MS : t->scan_retry_ms * 2;
	if (learning) {
		learn_end(t, false);
		queue_learn(t);
	} else {
		if (t->scan != SCAN_DONE)
			t->scan = SCAN_QUEUED;
		mark_queued(t);
	}
	drop_attrs(0);
	sy.n_keys = 0;
	sy.keys_failed = false;
	keep_stop();
	sy.cur = NULL;
	sy.busy = false;
	start_next();
}

static void
enqueue(struct rtable *t)
{
	mark_queued(t);
	start_next();
}

static void
queue_learn(struct rtable *t)
{
	if (t->learn_queued)
		return;
	t->learn_queued = true;
	t->learn_order = ++sy.order;
}

/* Kinds of job, in the order they go. */
enum job { JOB_FIRST_SCAN, JOB_LEARN, JOB_RESCAN, JOB_NONE };

/* The job a table waits for first, and when it was queued. */
static enum job
job_of(const struct rtable *t, uint64_t *ret_order)
{
	if (t->scan_queued && t->scan != SCAN_DONE) {
		*ret_order = t->scan_order;
		return JOB_FIRST_SCAN;
	}
	if (t->learn_queued) {
		*ret_order = t->learn_order;
		return JOB_LEARN;
	}
	*ret_order = t->scan_order;
	return t->scan_queued ? JOB_RESCAN : JOB_NONE;
}

/*
 * The next table to dump: first scans before rescans (writes wait for them),
 * then in the order they were queued; tables in backoff wait, and the retry
 * timer wakes the queue when the earliest backoff ends.
 */
static struct rtable *
pick_next(enum job *ret_job)
{
	uint64_t now = uv_now(sy.loop), wait = UINT64_MAX;
	struct rtable *best = NULL;
	enum job best_rank = JOB_NONE;
	uint64_t best_order = 0;

	for (unsigned i = 0; i < table_count(); i++) {
		struct rtable *t = table_at((uint16_t)i);
		uint64_t order;
		enum job rank = job_of(t, &order);
		if (rank == JOB_NONE)
			continue;
		if (t->scan_not_before > now) {
			if (t->scan_not_before - now < wait)
				wait = t->scan_not_before - now;
			continue;
		}
		if (!best || rank < best_rank || (rank == best_rank && order < best_order)) {
			best = t;
			best_rank = rank;
			best_order = order;
		}
	}
	if (!best && wait != UINT64_MAX)
		uv_timer_start(&sy.retry, sync_on_retry, wait, 0);
	*ret_job = best_rank;
	return best;
}

static void
start_next(void)
{
	_Alignas(8) char buf[256];
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;
	struct rtable *t;
	enum job job;

	if (!sy.open || sy.busy || !(t = pick_next(&job)))
		return;
	sy.cur = t;
	sy.busy = true;
	sy.dumping = true;
	sy.overruns_at_start = nl_monitor_catch_up();
	sy.changes_at_start = t->changes;
	sy.learning = job == JOB_LEARN;
	if (sy.learning) {
		t->learn_queued = false;
		learn_begin(t); /* keep what changes from here on, to replay after the dump */
	} else {
		t->scan_queued = false;
		keep_start(); /* a scan's notifications: replayed once its snapshot is applied */
		if (t->scan == SCAN_DONE) {
			/*
			 * A new epoch from the moment the dump is asked for: routes the
			 * kernel acknowledges from now on carry it too (nl.c), so the repair
			 * walk does not take a route installed after the dump's snapshot
			 * for a lost one.
			 */
			t->epoch++;
		} else {
			t->scan = SCAN_RUNNING;
		}
	}
	sy.bytes = 0;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = ++sy.seq;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = t->family == PS_FAM_V4 ? AF_INET : AF_INET6;
	rtm->rtm_table = t->id < 256 ? (uint8_t)t->id : RT_TABLE_UNSPEC;
	rtm->rtm_protocol = sy.learning ? 0 : sy.protocol; /* a learn dump takes every protocol */
	mnl_attr_put_u32(nlh, RTA_TABLE, t->id);
	sy.st.dumps_started++;
	if (io_send(nlh, nlh->nlmsg_len) < 0) {
		sy.st.dumps_failed++;
		job_end(false, strerror(errno));
	}
}

static void
sync_on_readable(uv_poll_t *h, int status, int events)
{
	uint64_t t0 = health_cb_begin();
	(void)h;
	(void)events;

	/*
	 * ENOBUFS (the dump lost messages) shows as POLLERR, and libuv stops the
	 * handle on it: watch again, and read the error below.
	 */
	if (status < 0)
		uv_poll_start(&sy.poll, UV_READABLE, sync_on_readable);
	for (int i = 0; i < SYNC_DUMP_DATAGRAMS && sy.dumping; i++) {
		ssize_t n = io_recv(sy.rx, sizeof(sy.rx));
		int r;
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			sy.st.dumps_failed++;
			/* ENOBUFS: the dump lost messages. Anything else: it is broken too. */
			job_end(false, strerror(errno));
			break;
		}
		sy.bytes += (uint64_t)n;
		if (sy.bytes > SYNC_DUMP_CAP) {
			sy.st.dumps_failed++;
			job_end(false, "over the size cap");
			break;
		}
		if (sy.learning)
			r = walk_dump(sy.rx, (size_t)n, sy.cur->id, sy.cur->family, learn_one, sy.cur);
		else
			r = sync_parse(sy.rx, (size_t)n, sy.cur->id, sy.cur->family, sy.protocol, collect,
			    NULL, &sy.st.foreign_seen);
		if (r == 1 && sy.learning)
			job_end(true, NULL); /* what changed meanwhile is replayed (learn.c) */
		else if (r == 1 && !sy.keys_failed && nl_monitor_catch_up() != sy.overruns_at_start) {
			sy.st.dumps_failed++;
			job_end(false, "the monitor overran during the dump: notifications were lost");
		} else if (r == 1 && sy.kept_overflow) {
			sy.st.dumps_failed++;
			job_end(false, "too many notifications during the dump to keep");
		} else if (r == 1 && !sy.keys_failed && sy.cur->family == PS_FAM_V6 &&
		    sy.cur->changes != sy.changes_at_start &&
		    sy.cur->churn_discards < SYNC_CHURN_TRIES) {
			/*
			 * An IPv4 dump is the table as of each prefix's turn, and the kept
			 * notifications, replayed in order, bring every prefix up to date.
			 * An IPv6 dump under churn is worse: the kernel's walker, restarted
			 * on a tree change, skips by count, so routes nobody touched can be
			 * missing or doubled, and no NLM_F_DUMP_INTR says so (50-churn
			 * measures it). No notification covers those: such a dump is taken
			 * again. After SYNC_CHURN_TRIES in a row one is used, as unsure:
			 * what it shows is true, what it lacks is not trusted (job_end).
			 */
			sy.cur->churn_discards++;
			sy.st.dumps_interrupted++;
			job_end(false, "IPv6 table changed during the dump");
		} else if (r == 1)
			job_end(!sy.keys_failed, "out of memory");
		else if (r == -EINTR) {
			sy.st.dumps_interrupted++;
			job_end(false, "interrupted by a change (NLM_F_DUMP_INTR)");
		} else if (r < 0) {
			sy.st.dumps_failed++;
			job_end(false, strerror(-r));
		}
	}
	health_cb_end(t0, "sync dump");
}

bool
sync_table_ready(struct rtable *t)
{
	if (t->scan == SCAN_DONE)
		return true;
	if (!sy.open) {
		/* Without a dump socket there is nothing to wait for. */
		t->scan = SCAN_DONE;
		return true;
	}
	if (t->scan == SCAN_NONE) {
		t->scan = SCAN_QUEUED;
		enqueue(t);
	}
	return false;
}

bool
sync_table_ready_now(const struct rtable *t)
{
	return !sy.open || t->scan == SCAN_DONE || t->scan == SCAN_NONE;
}

void
sync_route_exists(struct rtable *t)
{
	if (t->dump_unsure && t->scan == SCAN_DONE && !t->scan_queued) {
		log_info("sync: table %u inet6: a route of fibd's may be there unseen; rescanning", t->id);
		enqueue(t);
	}
}

bool
sync_rescan_table(struct rtable *t)
{
	/* A table whose first scan is still to come gets nothing from a rescan. */
	if (!sy.open || t->scan != SCAN_DONE)
		return false;
	/*
	 * Asked again while its dump runs: once more afterwards, since the change
	 * that made someone ask may have come after the dump's snapshot.
	 */
	enqueue(t);
	return true;
}

void
sync_learn_table(struct rtable *t)
{
	if (!sy.open)
		return;
	/*
	 * Even while one runs: it began before this learner came, which missed
	 * the adds already sent.
	 */
	learn_begin(t);
	queue_learn(t);
	start_next();
}

void
sync_rescan_all(void)
{
	for (unsigned i = 0; i < table_count(); i++)
		sync_rescan_table(table_at((uint16_t)i));
}

/*
 * Rescan once the writer is quiet: during a bulk load the monitor overruns on
 * fibd's own notifications, and dumping a table that is still being written
 * proves little.
 */
static void
sync_on_soon(uv_timer_t *h)
{
	if (nl_pending()) {
		uv_timer_start(h, sync_on_soon, SYNC_RESCAN_DELAY_MS, 0);
		return;
	}
	sy.st.rescans_triggered++;
	sync_rescan_all();
}

void
sync_rescan_soon(void)
{
	if (sy.open)
		uv_timer_start(&sy.soon, sync_on_soon, SYNC_RESCAN_DELAY_MS, 0);
}

static void
sync_on_periodic(uv_timer_t *h)
{
	(void)h;
	sync_rescan_all();
}

int
sync_init(uv_loop_t *loop, uint8_t protocol, uint32_t grace_s, uint32_t interval_s)
{
	int one = 1, size = 32 << 20;

	memset(&sy, 0, sizeof(sy)); /* nothing of an earlier run (tests init again) */
	sy.loop = loop;
	sy.protocol = protocol;
	sy.grace_ms = grace_s * 1000;
	sy.interval_ms = interval_s * 1000;
	sy.read_attrs = true;
	sy.sock = mnl_socket_open2(NETLINK_ROUTE, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (!sy.sock)
		return -errno;
	if (mnl_socket_bind(sy.sock, 0, MNL_SOCKET_AUTOPID) < 0 ||
	    mnl_socket_setsockopt(sy.sock, NETLINK_GET_STRICT_CHK, &one, sizeof(one)) < 0) {
		int err = -errno;
		mnl_socket_close(sy.sock);
		return err;
	}
	if (setsockopt(mnl_socket_get_fd(sy.sock), SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		setsockopt(mnl_socket_get_fd(sy.sock), SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	uv_poll_init(loop, &sy.poll, mnl_socket_get_fd(sy.sock));
	uv_poll_start(&sy.poll, UV_READABLE, sync_on_readable);
	uv_timer_init(loop, &sy.retry);
	uv_timer_init(loop, &sy.prune_timer);
	uv_idle_init(loop, &sy.pruner);
	uv_idle_init(loop, &sy.applier);
	uv_timer_init(loop, &sy.soon);
	uv_timer_init(loop, &sy.periodic);
	if (sy.interval_ms)
		uv_timer_start(&sy.periodic, sync_on_periodic, sy.interval_ms, sy.interval_ms);
	sy.open = true;
	return 0;
}

void
sync_set_times(uint32_t grace_s, uint32_t interval_s)
{
	sy.grace_ms = grace_s * 1000;
	if (interval_s * 1000 == sy.interval_ms || !sy.open)
		return;
	sy.interval_ms = interval_s * 1000;
	uv_timer_stop(&sy.periodic);
	if (sy.interval_ms)
		uv_timer_start(&sy.periodic, sync_on_periodic, sy.interval_ms, sy.interval_ms);
}

void
sync_close(void)
{
	if (!sy.open)
		return;
	sy.open = false;
	uv_close((uv_handle_t *)&sy.poll, NULL);
	uv_close((uv_handle_t *)&sy.retry, NULL);
	uv_close((uv_handle_t *)&sy.prune_timer, NULL);
	uv_close((uv_handle_t *)&sy.pruner, NULL);
	uv_close((uv_handle_t *)&sy.applier, NULL);
	uv_close((uv_handle_t *)&sy.soon, NULL);
	uv_close((uv_handle_t *)&sy.periodic, NULL);
	mnl_socket_close(sy.sock);
	while (sy.prunes) {
		struct prune *p = sy.prunes;
		sy.prunes = p->next;
		free(p->keys);
		free(p);
	}
	drop_attrs(0);
	free(sy.keys);
	sy.keys = NULL;
	sy.n_keys = sy.cap_keys = 0;
	keep_stop();
	free(sy.kept);
	sy.kept = NULL;
	sy.kept_cap = 0;
}

void
sync_get_stats(struct sync_stats *ret)
{
	*ret = sy.st;
}
