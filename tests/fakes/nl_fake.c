/*
 * A stand-in for fibd's netlink writer in unit tests of the session logic: it
 * keeps the write queue as nl.c does (a route is queued once; a change while
 * queued costs nothing more) and lets the test decide each write's outcome.
 */
#include <stdlib.h>
#include <string.h>

#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

#include "nl.h"
#include "nl_fake.h"

static nl_done_cb done_cb;
static struct route *qhead, *qtail;
static uint64_t queued;
unsigned fake_nl_writes;
unsigned fake_nl_notified;
unsigned fake_nl_enqueues;

int
nl_init(uv_loop_t *loop, uint8_t protocol, nl_done_cb done, uint32_t monitor_buffer)
{
	(void)loop;
	(void)monitor_buffer;
	(void)protocol;
	done_cb = done;
	return 0;
}

void
nl_close(void)
{
}

void
nl_enqueue(struct route *r)
{
	fake_nl_enqueues++;
	r->flags &= (uint8_t)~(R_FAILED | R_WAITING);
	if (r->flags & R_QUEUED)
		return;
	r->flags |= R_QUEUED;
	r->qnext = NULL;
	if (qtail)
		qtail->qnext = r;
	else
		qhead = r;
	qtail = r;
	queued++;
}

uint64_t
nl_pending(void)
{
	return queued;
}

void
nl_get_stats(struct nl_stats *ret)
{
	(void)ret;
}

const char *
nl_text(uint16_t idx)
{
	(void)idx;
	return NULL;
}

unsigned
fake_nl_complete(int err)
{
	unsigned n = 0;

	while (qhead) {
		struct route *r = qhead;
		qhead = r->qnext;
		if (!qhead)
			qtail = NULL;
		r->flags &= (uint8_t)~R_QUEUED;
		queued--;
		n++;
		if (r->want == r->have) {
			done_cb(r, -1, NULL);
			continue;
		}
		fake_nl_writes++;
		if (!err) {
			rattr_unref(r->have);
			r->have = rattr_ref(r->want);
		} else {
			r->err = (uint16_t)err;
			r->flags |= R_FAILED;
		}
		done_cb(r, err, NULL);
	}
	return n;
}

void
nl_release_held(struct rtable *t)
{
	(void)t;
}

void
nl_route_lost(struct route *r)
{
	rattr_unref(r->have);
	r->have = NULL;
	nl_enqueue(r);
}

const struct nl_nhobj *
nl_old_nh_object(uint32_t id)
{
	(void)id;
	return NULL;
}

void
nl_route_changed(struct route *r, struct rattr *now)
{
	rattr_unref(r->have);
	r->have = now;
	nl_enqueue(r);
}

uint64_t fake_nl_overruns;

uint64_t
nl_monitor_catch_up(void)
{
	return fake_nl_overruns;
}

/*
 * What nl.c does with a notification by someone else, for the tests of sync's
 * replay: a deleted route of fibd's protocol is forgotten if only adopted and
 * written again if wanted; another protocol's route on a wanted key of fibd's
 * means it was lost.
 */
void
nl_route_notified(struct rtable *t, const struct nlmsghdr *nlh)
{
	const struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *attr;
	bool del = nlh->nlmsg_type == RTM_DELROUTE;
	union ps_addr prefix;
	uint32_t metric = 0;
	struct route *r;

	memset(&prefix, 0, sizeof(prefix));
	mnl_attr_for_each(attr, nlh, sizeof(*rtm)) {
		if (mnl_attr_get_type(attr) == RTA_PRIORITY)
			metric = mnl_attr_get_u32(attr);
		else if (mnl_attr_get_type(attr) == RTA_DST)
			memcpy(prefix.b, mnl_attr_get_payload(attr), mnl_attr_get_payload_len(attr));
	}
	fake_nl_notified++;
	if (del != (rtm->rtm_protocol == FAKE_NL_PROTOCOL))
		return;
	if (!(r = table_lookup(t, &prefix, rtm->rtm_dst_len, rtm->rtm_tos, metric)) || !r->have ||
	    (r->flags & (R_QUEUED | R_INFLIGHT)))
		return;
	if (!r->want) {
		if (del) {
			t->n_installed--;
			rattr_unref(r->have);
			r->have = NULL;
			table_release(r);
		}
		return;
	}
	nl_route_lost(r);
}
