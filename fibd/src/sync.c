/*
 * sync: one job at a time (sync_queue.c picks it): a dump of one table through
 * dump.c, then its snapshot applied and the notifications kept meanwhile
 * replayed on it, a budget at a time; then a first scan releases the writes
 * that waited for it (docs/design.md, invariant 7), and a rescan has its lost
 * routes repaired (prune.c).
 *
 * A dump counts only when it ended with its own NLMSG_DONE, no message carried
 * NLM_F_DUMP_INTR, and the monitor lost no notification while it ran
 * (invariant 5); an IPv6 dump during which others changed the table is
 * discarded too. A discarded dump is retried with backoff, and nothing is
 * adopted from it; after a few lost to notifications or churn in a row, one is
 * used, an IPv6 one as unsure (docs/design.md). An IPv6 rescan during which
 * fibd itself wrote the table is used, but its repair waits for another dump,
 * whose routes add to its own (sync_on_apply; route_seen).
 *
 * Adopting a route: its entry gets `have` = its attributes as the dump gave
 * them (interned like a client's, with the nexthop object an earlier fibd made),
 * or the adopted marker when fibd cannot read them. A client feeding the same
 * route then costs no write; a changed one is replaced, not added with EXCL and
 * refused with EEXIST; a withdraw deletes it. Adopted keys go to prune.c, which
 * withdraws those no client claims.
 *
 * Others' changes (the monitor's route hook, sync_kernel_route) are kept while
 * their table's scan runs (invariant 6), and otherwise acted on at once: a
 * route of fibd's someone deleted or took over is written again (sync_notify.c
 * keeps them; replay_one here replays them on the snapshot).
 *
 * Table states: NONE (never asked), QUEUED, RUNNING, DONE.
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

#include "dump.h"
#include "event.h"
#include "health.h"
#include "kmsg.h"
#include "learn.h"
#include "log.h"
#include "monitor.h"
#include "nl.h"
#include "prune.h"
#include "sync-internal.h"

struct sync_state sy;




/* ---- reading routes ---- */

/* Interface names by index, cached (a dump names the same few again and again). */
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

const struct kmsg_env sync_env = { .ifname = ifname_of, .nhobj = nl_old_nh_object };

/*
 * The attributes of a dumped route, in the form fibd interns: equal to what a
 * client feeds for the same route, so that feeding it again costs no write.
 * NULL when fibd cannot say (another route type, an unknown nexthop object).
 */
static struct rattr *
read_attrs(const struct kmsg_rt *kr)
{
	static struct ps_route rt;
	struct rattr *a;
	uint32_t nh_id;

	if (!kmsg_rt_attrs(kr, &sync_env, &rt, &nh_id))
		return NULL;
	a = rattr_intern(&rt);
	if (a && nh_id && a->nh_state == RATTR_NH_NONE && nl_claim_old_nh_object(nh_id)) {
		/*
		 * The object an earlier fibd made stands for these nexthops. Once:
		 * another set may use it too (a route fed without its device), through
		 * this one. Until a route holds the set, a dump thrown away frees it
		 * without deleting the object (nh_dump_only).
		 */
		a->nh_id = nh_id;
		a->nh_state = RATTR_NH_CREATED;
		a->nh_dump_only = 1;
	}
	return a;
}

/* The key of a route message, with its attributes if fibd reads them. */
static void
key_from_msg(const struct kmsg_rt *kr, struct scan_key *k)
{
	memset(k, 0, sizeof(*k));
	k->prefix = kr->prefix;
	k->plen = kr->plen;
	k->tos = kr->tos;
	k->metric = kr->metric;
	k->attrs = sy.read_attrs ? read_attrs(kr) : NULL;
}

/* ---- jobs ---- */

static void
collect(const struct scan_key *k)
{
	if (sy.keys_failed) {
		rattr_unref(k->attrs);
		return;
	}
	if (sy.n_keys == sy.cap_keys) {
		size_t cap = sy.cap_keys ? sy.cap_keys * 2 : 1024;
		struct scan_key *nk = realloc(sy.keys, cap * sizeof(*nk));
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

static void job_done(void);
static void rescan_done(void);
static void learn_again(struct rtable *t);

/* A scan of t waits in the queue (once), in the order asked for. */
void
sync_mark_queued(struct rtable *t)
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

static void
diff_one(struct rtable *t, enum diff_kind kind, const struct route *r, const struct rattr *kernel)
{
	event_emit(&(struct event){ .kind = EV_DIFF, .t = t, .r = r, .diff = kind, .kernel = kernel });
}

/*
 * One key of a valid dump (or of a kept notification): adopt it if fibd does
 * not know it (have = the attributes the dump gave, or the adopted marker when
 * fibd could not read them), see whether someone changed it, and mark it seen
 * in this epoch. Consumes k->attrs. False when out of memory.
 */
static bool
apply_key(struct rtable *t, struct scan_key *k)
{
	struct route *r = table_insert(t, &k->prefix, k->plen, k->tos, k->metric);
	struct rattr *have;

	if (!r) {
		k->attrs = rattr_unref(k->attrs);
		return false;
	}
	if (t->diffing) {
		if (!r->want)
			diff_one(t, DIFF_EXTRA, r, k->attrs);
		else if (k->attrs && !rattr_fulfils(k->attrs, route_want(r)))
			diff_one(t, DIFF_DIFFERS, r, k->attrs);
	}
	if (r->have) {
		/*
		 * Someone changed a route of fibd's behind its back (it kept fibd's
		 * protocol, so no notification told): write it again. What the
		 * kernel filled in (the device of a gateway given alone) is no change. Not when the
		 * kernel acknowledged a write of it since the dump began (seen is then
		 * already this epoch): the dump may predate that write.
		 */
		if (sy.apply_rescan && k->attrs && !rattr_fulfils(k->attrs, route_have(r)) && r->want &&
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
	have = k->attrs ? k->attrs : rattr_unknown();
	if (!have) {
		table_release(r);
		return false;
	}
	have->nh_dump_only = 0; /* a route holds it: its object goes when no route uses it */
	route_set_have(r, have);
	k->attrs = NULL;
	r->flags &= (uint8_t)~R_EXCL;
	t->n_installed++;
	sy.apply_adopted++;
	return true;
}

/* ---- replaying kept notifications (sync_notify.c keeps them) ---- */

/*
 * One kept notification, on top of the applied snapshot: a route of fibd's
 * protocol that someone added or replaced is applied as a dump would show it
 * (adopted if unknown; kept in the prune list); fibd's own delete
 * (sync_route_deleted) forgets what the dump, taken before it, made fibd adopt;
 * anything else is what a notification means at any time
 * (sync_route_notified).
 */
static void
replay_one(struct rtable *t, const struct nlmsghdr *nlh)
{
	struct kmsg_rt kr;
	struct scan_key k;
	struct route *r;

	sy.st.notifications_replayed++;
	if (kmsg_rt_parse(nlh, &kr) < 0)
		return; /* kept only after it parsed: cannot happen */
	if (nlh->nlmsg_pid == nl_portid() && nlh->nlmsg_type == RTM_DELROUTE) {
		r = table_lookup(t, &kr.prefix, kr.plen, kr.tos, kr.metric);
		if (r && !r->want && r->have && !(r->flags & (R_QUEUED | R_INFLIGHT))) {
			nl_route_forget(r);
			table_release(r);
			if (sy.apply_adopted)
				sy.apply_adopted--; /* no adoption: the route is gone */
		}
		return;
	}
	if (nlh->nlmsg_type != RTM_NEWROUTE || kr.rtm->rtm_protocol != sy.protocol) {
		sync_route_notified(t, nlh, &kr);
		return;
	}
	key_from_msg(&kr, &k);
	if (!apply_key(t, &k))
		return;
	collect(&k); /* for the prune check, if adopted; already applied */
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
				sync_queue_learn(t);
			else if (!sy.learn_whole)
				learn_again(t);
			else
				t->learn_tries = 0;
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
		sy.events++; /* what they told is gone: no union spans them */
		sync_mark_queued(t);
	} else if (sy.apply_lost && !sy.apply_rescan) {
		/*
		 * A first scan used although the monitor lost notifications while
		 * it ran: what it showed may be stale too. The rescan the loss asked
		 * for may have come while it ran, and a first scan takes none: ask
		 * again (once the writer is quiet). A rescan's table is rescanned by
		 * the one the loss's end asks for.
		 */
		sync_rescan_soon();
	}
	sync_keep_stop();
	sy.st.routes_adopted += sy.apply_adopted;
	log_info("sync: table %u %s: %s done, %llu routes of fibd's adopted", t->id,
	    family_name(t->family), sy.apply_rescan ? "rescan" : "first scan",
	    (unsigned long long)sy.apply_adopted);
	t->scanned_at = (int64_t)time(NULL);
	t->scan_routes = sy.n_keys;
	if (sy.apply_adopted) {
		/* The prune job takes the key vector; collecting starts a new one. */
		prune_schedule(t, sy.keys, sy.n_keys, !sy.apply_rescan);
		sy.keys = NULL;
		sy.cap_keys = 0;
	}
	sy.n_keys = 0;
	if (!sy.apply_rescan) {
		t->scan = SCAN_DONE;
		nl_release_held(t);
		job_done();
	} else if (t->dump_unsure) {
		/* What an unsure dump lacks may be there: no route is taken for lost from it. */
		rescan_done();
	} else if (sy.apply_own && t->repair_waits < SYNC_CHURN_TRIES) {
		/*
		 * fibd wrote the table during the dump: a route it lacks may have
		 * been skipped. Another dump follows after a pause (doubling), and
		 * adds to this one, so that the repair takes for lost only what none
		 * of them showed. After SYNC_CHURN_TRIES since the last repair walk
		 * it goes ahead (a route then taken wrongly meets EEXIST, and a
		 * rescan: sync_route_exists).
		 */
		t->repair_waits++;
		t->union_open = true;
		sy.st.repairs_deferred++;
		log_info("sync: table %u inet6: fibd wrote it during the rescan; its repair waits "
			 "for another dump", t->id);
		t->scan_not_before = uv_now(sy.loop) +
		    ((uint64_t)SYNC_RETRY_MIN_MS << (t->repair_waits - 1));
		sync_mark_queued(t);
		rescan_done();
	} else {
		if (sy.apply_own) {
			sy.st.repairs_forced++;
			log_info("sync: table %u inet6: fibd wrote it during %u rescans in a row; "
				 "repairing from what they showed", t->id, t->repair_waits + 1);
		}
		t->repair_waits = 0;
		prune_repair(t, rescan_done);
	}
	health_cb_end(t0, "sync apply");
}

/*
 * A learn dump that may lack routes (sync_dump_end) is taken again after
 * SYNC_LEARN_RETRY_MS, doubling, SYNC_CHURN_TRIES times in a row; then the
 * refresh stays open (what the learners hold stays) until the next loss or
 * learner asks for one. The count goes on across those (a loss under
 * sustained churn does not start it over): a whole dump or giving up resets it.
 */
static void
learn_again(struct rtable *t)
{
	uint64_t delay;

	if (++t->learn_tries > SYNC_CHURN_TRIES) {
		log_warn("sync: table %u %s: changed, or notifications lost, during %u learn "
			 "dumps in a row; its learners may hold routes that are gone until the "
			 "next one", t->id, family_name(t->family), t->learn_tries);
		t->learn_tries = 0;
		return;
	}
	delay = (uint64_t)SYNC_LEARN_RETRY_MS << (t->learn_tries - 1);
	if (delay > SYNC_RETRY_MAX_MS)
		delay = SYNC_RETRY_MAX_MS;
	t->learn_not_before = uv_now(sy.loop) + delay;
	learn_begin(t);
	sync_queue_learn(t);
}

/*
 * A rescan's repair walk is over (or will not run): a diff waiting for it has
 * all it needs. One whose repair waits for another dump did not look for
 * missing routes: unsure.
 */
static void
rescan_done(void)
{
	struct rtable *t = sy.cur;

	if (t->diffing)
		event_emit(&(struct event){ .kind = EV_RESCAN_END, .t = t, .routes = t->scan_routes,
		    .unsure = t->dump_unsure || t->union_open });
	job_done();
}


static void
job_done(void)
{
	sy.cur = NULL;
	sy.busy = false;
	sync_start_next();
}

void
sync_job_end(bool ok, const char *why)
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
		log_info("sync: table %u %s: learn dump done%s", t->id, family_name(t->family),
		    sy.learn_whole ? "" : "; the table moved under it: no refresh end");
		if (learn_end(t, true, sy.learn_whole)) {
			sync_queue_learn(t); /* notifications were lost during it: again */
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
		t->dump_unsure = sy.use_unsure;
		if (t->dump_unsure) {
			sy.st.dumps_unsure++;
			log_info("sync: table %u inet6: changed by others, or notifications "
				 "lost, during %u dumps; using this one for what it shows, not "
				 "for what it lacks", t->id, t->churn_discards + 1);
		} else if (sy.use_lost) {
			log_info("sync: table %u inet: notifications lost during %u dumps; "
				 "using this one, and scanning again soon", t->id,
			    t->churn_discards + 1);
		}
		t->churn_discards = 0;
		sy.apply_lost = sy.use_lost;
		sy.apply_own = sy.use_own;
		sy.use_unsure = sy.use_lost = sy.use_own = false;
		sy.apply_rescan = t->scan == SCAN_DONE;
		if (sy.apply_rescan && t->diff_waiting)
			event_emit(&(struct event){ .kind = EV_RESCAN_BEGIN, .t = t });
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
		learn_end(t, false, false);
		sync_queue_learn(t);
	} else {
		if (t->scan != SCAN_DONE)
			t->scan = SCAN_QUEUED;
		sync_mark_queued(t);
	}
	drop_attrs(0);
	sy.n_keys = 0;
	sy.keys_failed = false;
	sync_keep_stop();
	sy.cur = NULL;
	sy.busy = false;
	sync_start_next();
}

/* A route of the dump being taken: a learn dump's go to learn, a scan's are collected. */
void
sync_dump_route(const struct nlmsghdr *nlh, const struct kmsg_rt *kr, void *ctx)
{
	struct scan_key k;
	(void)ctx;

	if (sy.learning) {
		learn_dump_msg(sy.cur, nlh);
		return;
	}
	if (kr->rtm->rtm_protocol != sy.protocol) {
		sy.st.foreign_seen++; /* a kernel that does not filter by protocol */
		return;
	}
	key_from_msg(kr, &k);
	collect(&k);
}

/* The dump ended (dump.h): is it one to use? */
void
sync_dump_end(int result, void *ctx)
{
	struct rtable *t = sy.cur;
	bool lost, changed;
	int reads = 0;
	(void)ctx;

	if (result == -EINTR) {
		sy.st.dumps_interrupted++;
		sync_job_end(false, "interrupted by a change (NLM_F_DUMP_INTR)");
		return;
	}
	if (result < 0) {
		sy.st.dumps_failed++;
		sync_job_end(false, result == -EFBIG ? "over the size cap" : strerror(-result));
		return;
	}
	if (sy.keys_failed) {
		sync_job_end(false, "out of memory");
		return;
	}
	/*
	 * Lost: the monitor lost notifications while the dump ran, so those kept
	 * may not make it whole (invariant 5). Changed: an IPv6 dump during which
	 * others changed the table, or may have (the monitor lost notifications,
	 * or has not read them all yet). An IPv4 dump is the table as of each
	 * prefix's turn, and the kept notifications, replayed in order, bring
	 * every prefix up to date. An IPv6 dump under churn is worse: the
	 * kernel's walker, restarted on a tree change, skips by count, so routes
	 * nobody touched can be missing or doubled, and no NLM_F_DUMP_INTR says
	 * so (50-churn measures it; docs/design.md). No notification covers
	 * those. Either dump is taken again, SYNC_CHURN_TRIES times in a row;
	 * then one is used: an IPv6 one as unsure (what it shows is true, what it
	 * lacks is not trusted: sync_job_end), an IPv4 one as it is (what it
	 * lacks was gone at its turn), the rescan the loss asked for to follow.
	 * So a first scan does not wait for the churn to end.
	 */
	do
		lost = mon_catch_up() != sy.overruns_at_start;
	while (++reads < SYNC_CATCH_UP_READS && mon_behind());
	changed = t->family == PS_FAM_V6 &&
	    (lost || mon_behind() || t->changes != sy.changes_at_start);
	if (sy.learning) {
		/*
		 * What changed meanwhile is replayed (learn.c), and what the dump
		 * shows is true; but its end makes learners drop what it lacks, so
		 * it ends a refresh only if nothing moved under it, in either
		 * family: no notification lost or left unread, no change by others,
		 * none by fibd in the table (they move the IPv6 walker as others'
		 * do; one in flight may have been applied; and an IPv4 dump resumes
		 * within a prefix's routes by count, so a change to one of its
		 * metrics can hide another). Otherwise another follows.
		 */
		sy.learn_whole = !lost && !mon_behind() && t->changes == sy.changes_at_start &&
		    t->writes == sy.writes_at_start && !t->n_inflight;
		sync_job_end(true, NULL);
		return;
	}
	if ((lost || changed) && t->churn_discards < SYNC_CHURN_TRIES) {
		t->churn_discards++;
		if (lost) {
			sy.st.dumps_failed++;
			sync_job_end(false,
			    "the monitor overran during the dump: notifications were lost");
		} else {
			sy.st.dumps_interrupted++;
			sync_job_end(false, "IPv6 table changed during the dump");
		}
		return;
	}
	if (sy.kept_overflow) {
		sy.st.dumps_failed++;
		sync_job_end(false, "too many notifications during the dump to keep");
		return;
	}
	sy.use_unsure = changed;
	sy.use_lost = lost;
	/*
	 * fibd's own adds and deletes move the IPv6 walker as others' do, and no
	 * notification tells of them: such a dump is used (what it shows is
	 * true), but its absences only with those of the next (sync_on_apply).
	 */
	sy.use_own = t->family == PS_FAM_V6 && (t->writes != sy.writes_at_start || t->n_inflight);
	sync_job_end(true, NULL);
}

int
sync_init(uv_loop_t *loop, uint8_t protocol, uint32_t grace_s, uint32_t interval_s)
{
	int r;

	memset(&sy, 0, sizeof(sy)); /* nothing of an earlier run (tests init again) */
	sy.loop = loop;
	sy.protocol = protocol;
	prune_init(loop, grace_s);
	sy.interval_ms = interval_s * 1000;
	sy.read_attrs = true;
	if ((r = dump_init(loop)) < 0)
		return r;
	uv_timer_init(loop, &sy.retry);
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
	prune_set_grace(grace_s);
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
	dump_close();
	uv_close((uv_handle_t *)&sy.retry, NULL);
	prune_close();
	uv_close((uv_handle_t *)&sy.applier, NULL);
	uv_close((uv_handle_t *)&sy.soon, NULL);
	uv_close((uv_handle_t *)&sy.periodic, NULL);
	drop_attrs(0);
	free(sy.keys);
	sy.keys = NULL;
	sy.n_keys = sy.cap_keys = 0;
	sync_keep_stop();
	free(sy.kept);
	sy.kept = NULL;
	sy.kept_cap = 0;
}

void
sync_get_stats(struct sync_stats *ret)
{
	*ret = sy.st;
	ret->routes_pruned = prune_count();
}
