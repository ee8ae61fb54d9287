/*
 * sync_notify: route notifications and the sync engine. Others' changes (the
 * monitor's route hook, sync_kernel_route) count as changes of their table,
 * go to its learners and listeners, and are kept while the table's scan runs,
 * to be replayed in order on its snapshot (sync.c, replay_one; docs/design.md,
 * invariant 6); otherwise they are acted on at once (sync_route_notified).
 * fibd's own deletes acknowledged during a scan are kept the same way
 * (sync_route_deleted), as the kernel's echo would be.
 */
#include <stdlib.h>
#include <string.h>

#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

#include "event.h"
#include "kmsg.h"
#include "learn.h"
#include "log.h"
#include "nl.h"
#include "sync-internal.h"

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
			/* The scan cannot be made whole: it is taken again (dump_end). */
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

void
sync_keep_start(void)
{
	sy.keeping = true;
	sy.kept_len = sy.kept_at = 0;
	sy.kept_overflow = false;
}

void
sync_keep_stop(void)
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
 * What a route notification by someone else (RTM_NEWROUTE, RTM_DELROUTE) of
 * table t means for fibd's route there: one of fibd's that is wanted and not
 * being written, deleted or replaced by another protocol, is written again; an
 * adopted one that was deleted is forgotten.
 */
void
sync_route_notified(struct rtable *t, const struct nlmsghdr *nlh, const struct kmsg_rt *kr)
{
	bool del = nlh->nlmsg_type == RTM_DELROUTE;
	struct route *r;

	if (del != (kr->rtm->rtm_protocol == sy.protocol))
		return; /* our own adds and others' deletes say nothing about our routes */
	if (!(r = table_lookup(t, &kr->prefix, kr->plen, kr->tos, kr->metric)))
		return;
	if (!r->have || (r->flags & (R_QUEUED | R_INFLIGHT)))
		return;
	if (!r->want) {
		/* An adopted route, gone: nothing of fibd's is left there to withdraw. */
		if (del) {
			nl_route_forget(r);
			table_release(r);
		}
		return;
	}
	log_info("sync: table %u: a route of fibd's was %s by someone else; writing it again", t->id,
	    del ? "deleted" : "replaced");
	nl_route_lost(r);
}

void
sync_route_deleted(struct route *r)
{
	struct rtable *t = table_at(r->rt);
	uint32_t buf[64]; /* (aligned for netlink) */
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	struct kmsg_key k;

	if (!sync_keeps(t))
		return;
	k = kmsg_route_key(r);
	kmsg_put_route(buf, 0, KMSG_DEL, &k, sy.protocol, NULL, KMSG_INLINE);
	nlh->nlmsg_pid = nl_portid(); /* as the kernel stamps a notification of fibd's write */
	sync_keep(t, nlh);
}

/*
 * A route notification from the monitor (someone else's change: fibd's own
 * writes are filtered off). It counts as a change of its table (can a dump of
 * it be trusted?), goes to the table's learners and to listeners; while the
 * table's scan runs it is kept to be replayed on the scan's snapshot (docs/design.md,
 * invariant 6), otherwise it means what sync_route_notified says.
 */
void
sync_kernel_route(const struct nlmsghdr *nlh, const struct kmsg_rt *kr)
{
	struct rtable *t = table_get(kr->table, kr->family, false);

	if (!t)
		return;
	t->changes++;
	if (t->learners)
		learn_notify(t, nlh);
	if (event_wanted())
		event_emit(&(struct event){
		    .kind = nlh->nlmsg_type == RTM_DELROUTE ? EV_KERNEL_DEL : EV_KERNEL_ADD, .t = t, .kr = kr });
	if (sync_keeps(t))
		sync_keep(t, nlh);
	else
		sync_route_notified(t, nlh, kr);
}
