/*
 * learn: foreign kernel routes to the sessions that learn them (learn.h).
 *
 * Kept notifications are copies of the netlink messages, back to back in one
 * buffer per table (at most LEARN_BUFFER_MAX bytes). Replaying them in order on
 * top of a learn dump that began after the first of them is right: each is an
 * add (set the key) or a delete (clear it), so every key ends as its last
 * notification says, or as the dump showed it if none came.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

#include "learn.h"
#include "log.h"

static struct {
	uint8_t protocol;
	const struct kmsg_env *env;
	struct learn_hooks hooks;
	struct learn_stats st;
	struct ps_route rt; /* large: one, reused */
} ln;

struct kept {
	char *buf;
	size_t len, cap;
	size_t at;      /* the replay's next message */
	bool on;        /* notifications are being kept */
	bool overflow;  /* some were dropped: the dump must run again */
	bool replaying; /* the dump is complete; kept ones go out a budget at a time */
};

static struct kept kept[TABLE_MAX];

void
learn_init(uint8_t protocol, const struct kmsg_env *env, const struct learn_hooks *hooks)
{
	ln.protocol = protocol;
	ln.env = env;
	ln.hooks = *hooks;
}

/* One route message of t as a LEARN add or delete, to t's learners. */
static void
learn_msg(struct rtable *t, const struct nlmsghdr *nlh, uint8_t op)
{
	struct ps_route *rt = &ln.rt;
	struct kmsg_rt kr;

	if (kmsg_rt_parse(nlh, &kr) < 0 || kr.family != t->family)
		return;
	if (kr.rtm->rtm_protocol == ln.protocol || kr.rtm->rtm_protocol == RTPROT_KERNEL ||
	    (kr.rtm->rtm_flags & RTM_F_CLONED))
		return;
	if (kr.rtm->rtm_type != RTN_UNICAST && kr.rtm->rtm_type != RTN_BLACKHOLE &&
	    kr.rtm->rtm_type != RTN_UNREACHABLE && kr.rtm->rtm_type != RTN_PROHIBIT)
		return;
	if (op == PS_LEARN_ADD) {
		if (!kmsg_rt_attrs(&kr, ln.env, rt, NULL)) {
			ln.st.skipped++;
			return;
		}
	} else {
		/* A delete names the key (and the type); its nexthops may go. */
		memset(rt, 0, offsetof(struct ps_route, nh));
		rt->key.family = t->family;
		rt->type = kr.rtm->rtm_type;
	}
	rt->key.has = PS_KEY_TABLE | PS_KEY_METRIC | PS_KEY_TOS;
	rt->key.table = t->id;
	rt->key.plen = kr.plen;
	rt->key.tos = t->family == PS_FAM_V4 ? kr.tos : 0;
	rt->key.metric = kr.metric;
	rt->key.prefix = kr.prefix;
	rt->protocol = kr.rtm->rtm_protocol;
	rt->has |= PS_RA_PROTOCOL;
	rt->learn_op = op;
	ln.st.sent++;
	if (ln.hooks.route)
		ln.hooks.route(rt);
}

static void
refresh(const struct rtable *t, uint8_t phase)
{
	if (ln.hooks.refresh)
		ln.hooks.refresh(t->id, t->family, phase);
}

bool
learn_begin(struct rtable *t)
{
	struct kept *k = &kept[t->idx];

	if (k->on)
		return false;
	k->on = true;
	k->len = 0;
	k->overflow = false;
	return true;
}

void
learn_dump_start(struct rtable *t)
{
	refresh(t, PS_REFRESH_BEGIN);
}

void
learn_dump_msg(struct rtable *t, const struct nlmsghdr *nlh)
{
	learn_msg(t, nlh, PS_LEARN_ADD);
}

bool
learn_end(struct rtable *t, bool complete, bool whole)
{
	struct kept *k = &kept[t->idx];

	if (!complete)
		return true;
	if (k->overflow) {
		/* The dump that just ended predates notifications that were lost. */
		k->overflow = false;
		return true;
	}
	if (whole) {
		/* Before the kept ones: they are changes after the dump's. */
		ln.st.refreshes++;
		refresh(t, PS_REFRESH_END);
	}
	/* Keeping goes on while they are replayed: later ones join the end. */
	k->replaying = true;
	k->at = 0;
	return false;
}

bool
learn_replay(struct rtable *t, unsigned budget, bool *ret_again)
{
	struct kept *k = &kept[t->idx];

	for (; k->at < k->len && budget; budget--) {
		const struct nlmsghdr *nlh = (const struct nlmsghdr *)(k->buf + k->at);
		k->at += MNL_ALIGN(nlh->nlmsg_len);
		learn_msg(t, nlh, nlh->nlmsg_type == RTM_DELROUTE ? PS_LEARN_DELETE : PS_LEARN_ADD);
		ln.st.replayed++;
	}
	if (k->at < k->len && !k->overflow)
		return false;
	/* Over the bound while replaying: later notifications were lost, dump again. */
	*ret_again = k->overflow;
	if (k->overflow) {
		k->overflow = false;
		k->replaying = false;
		k->len = k->at = 0;
		return true;
	}
	free(k->buf);
	memset(k, 0, sizeof(*k));
	return true;
}

void
learn_notify(struct rtable *t, const struct nlmsghdr *nlh)
{
	struct kept *k = &kept[t->idx];
	size_t need = MNL_ALIGN(nlh->nlmsg_len);

	if (!k->on) {
		learn_msg(t, nlh, nlh->nlmsg_type == RTM_DELROUTE ? PS_LEARN_DELETE : PS_LEARN_ADD);
		return;
	}
	if (k->overflow)
		return;
	if (k->len + need > k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 65536;
		char *nb;
		while (cap < k->len + need)
			cap *= 2;
		if (cap > LEARN_BUFFER_MAX || !(nb = realloc(k->buf, cap))) {
			/* Start over: drop what was kept, and dump again when this dump ends. */
			log_warn("learn: table %u: over %u bytes of notifications during a dump; "
				 "dumping it again", t->id, LEARN_BUFFER_MAX);
			ln.st.overflows++;
			k->overflow = true;
			if (!k->replaying)
				k->len = 0;
			return;
		}
		k->buf = nb;
		k->cap = cap;
	}
	memcpy(k->buf + k->len, nlh, nlh->nlmsg_len);
	k->len += need;
}

void
learn_forget(struct rtable *t)
{
	struct kept *k = &kept[t->idx];

	free(k->buf);
	memset(k, 0, sizeof(*k));
}

void
learn_get_stats(struct learn_stats *ret)
{
	*ret = ln.st;
}
