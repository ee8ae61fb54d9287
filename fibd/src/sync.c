/*
 * sync: first scans of the tables fibd writes to.
 *
 * Jobs run one at a time on a dedicated nonblocking netlink socket with
 * NETLINK_GET_STRICT_CHK, so that the kernel sends only the asked table and
 * protocol. A callback reads at most SYNC_DUMP_DATAGRAMS datagrams. The routes
 * of a dump are collected, and adopted only once the dump has ended with
 * NLMSG_DONE, no message carried NLM_F_DUMP_INTR, and the monitor saw no change
 * to the table (nor lost a notification) while it ran (docs/design.md, invariant 5):
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
 * to a table until it is DONE (docs/design.md, invariant 7).
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
#include "sync.h"

enum { SCAN_NONE, SCAN_QUEUED, SCAN_RUNNING, SCAN_DONE };

/* The attributes of an adopted route: in the kernel, not known to fibd. Never freed. */
static struct rattr adopted = { .refs = 1 };

static struct {
	uv_loop_t *loop;
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
	uv_timer_t retry;   /* the earliest backoff of a queued table ends */
	bool open;
	uint8_t protocol;
	uint64_t order;     /* stamps queued tables */
	struct rtable *cur;
	struct scan_key *keys;
	size_t n_keys, cap_keys;
	bool keys_failed;
	/* notifications of the table being scanned, kept until its snapshot is applied */
	bool keeping;
	char *kept;
	size_t kept_len, kept_cap, kept_at;
	bool kept_overflow;
	struct sync_stats st;
} sy;

static void queue_learn(struct rtable *t);

static void start_next(void);

static void
sync_on_retry(uv_timer_t *h)
{
	(void)h;
	start_next();
}

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
	if (a && nh_id && a->nh_state == RATTR_NH_NONE) {
		/* The object an earlier fibd made stands for these nexthops. */
		a->nh_id = nh_id;
		a->nh_state = RATTR_NH_CREATED;
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
static void dump_route(const struct nlmsghdr *nlh, const struct kmsg_rt *kr, void *ctx);
static void dump_end(int result, void *ctx);

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

	if (!r) {
		k->attrs = rattr_unref(k->attrs);
		return false;
	}
	if (t->diffing) {
		if (!r->want)
			diff_one(t, DIFF_EXTRA, r, k->attrs);
		else if (k->attrs && !rattr_fulfils(k->attrs, r->want))
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

/* ---- notifications kept during a scan (docs/design.md, invariant 6) ---- */

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
 * What a route notification by someone else (RTM_NEWROUTE, RTM_DELROUTE) of
 * table t means for fibd's route there: one of fibd's that is wanted and not
 * being written, deleted or replaced by another protocol, is written again; an
 * adopted one that was deleted is forgotten.
 */
static void
route_notified(struct rtable *t, const struct nlmsghdr *nlh, const struct kmsg_rt *kr)
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

/*
 * One kept notification, on top of the applied snapshot: a route of fibd's
 * protocol that someone added or replaced is applied as a dump would show it
 * (adopted if unknown; kept in the prune list); anything else is what a
 * notification means at any time (route_notified).
 */
static void
replay_one(struct rtable *t, const struct nlmsghdr *nlh)
{
	struct kmsg_rt kr;
	struct scan_key k;

	sy.st.notifications_replayed++;
	if (kmsg_rt_parse(nlh, &kr) < 0)
		return; /* kept only after it parsed: cannot happen */
	if (nlh->nlmsg_type != RTM_NEWROUTE || kr.rtm->rtm_protocol != sy.protocol) {
		route_notified(t, nlh, &kr);
		return;
	}
	key_from_msg(&kr, &k);
	if (!apply_key(t, &k))
		return;
	collect(&k); /* for the prune check, if adopted; already applied */
	sy.apply_at = sy.n_keys;
}

/*
 * A route notification from the monitor (someone else's change: fibd's own
 * writes are filtered off). It counts as a change of its table (can a dump of
 * it be trusted?), goes to the table's learners and to listeners; while the
 * table's scan runs it is kept to be replayed on the scan's snapshot (docs/design.md,
 * invariant 6), otherwise it means what route_notified says.
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
		route_notified(t, nlh, kr);
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
	} else {
		prune_repair(t, rescan_done);
	}
	health_cb_end(t0, "sync apply");
}

/* A rescan's repair walk is over: a diff waiting for it has all it needs. */
static void
rescan_done(void)
{
	if (sy.cur->diffing)
		event_emit(&(struct event){ .kind = EV_RESCAN_END, .t = sy.cur,
		    .routes = sy.cur->scan_routes, .unsure = sy.cur->dump_unsure });
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
	struct rtable *t;
	enum job job;
	int r;

	if (!sy.open || sy.busy || !(t = pick_next(&job)))
		return;
	sy.cur = t;
	sy.busy = true;
	sy.dumping = true;
	sy.overruns_at_start = mon_catch_up();
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
	r = dump_start(t->id, t->family, sy.learning ? 0 : sy.protocol, /* a learn dump takes every protocol */
	    &(const struct dump_hooks){ .route = dump_route, .end = dump_end }, NULL);
	if (r < 0) {
		sy.st.dumps_failed++;
		job_end(false, strerror(-r));
		return;
	}
	sy.st.dumps_started++;
}

/* A route of the dump being taken: a learn dump's go to learn, a scan's are collected. */
static void
dump_route(const struct nlmsghdr *nlh, const struct kmsg_rt *kr, void *ctx)
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
static void
dump_end(int result, void *ctx)
{
	(void)ctx;
	if (result == 0 && sy.learning) {
		job_end(true, NULL); /* what changed meanwhile is replayed (learn.c) */
	} else if (result == 0 && !sy.keys_failed && mon_catch_up() != sy.overruns_at_start) {
		sy.st.dumps_failed++;
		job_end(false, "the monitor overran during the dump: notifications were lost");
	} else if (result == 0 && sy.kept_overflow) {
		sy.st.dumps_failed++;
		job_end(false, "too many notifications during the dump to keep");
	} else if (result == 0 && !sy.keys_failed && sy.cur->family == PS_FAM_V6 &&
	    sy.cur->changes != sy.changes_at_start && sy.cur->churn_discards < SYNC_CHURN_TRIES) {
		/*
		 * An IPv4 dump is the table as of each prefix's turn, and the kept
		 * notifications, replayed in order, bring every prefix up to date.
		 * An IPv6 dump under churn is worse: the kernel's walker, restarted
		 * on a tree change, skips by count, so routes nobody touched can be
		 * missing or doubled, and no NLM_F_DUMP_INTR says so (50-churn
		 * measures it; docs/design.md). No notification covers those:
		 * such a dump is taken again. After SYNC_CHURN_TRIES in a row one is
		 * used, as unsure: what it shows is true, what it lacks is not
		 * trusted (job_end).
		 */
		sy.cur->churn_discards++;
		sy.st.dumps_interrupted++;
		job_end(false, "IPv6 table changed during the dump");
	} else if (result == 0) {
		job_end(!sy.keys_failed, "out of memory");
	} else if (result == -EINTR) {
		sy.st.dumps_interrupted++;
		job_end(false, "interrupted by a change (NLM_F_DUMP_INTR)");
	} else {
		sy.st.dumps_failed++;
		job_end(false, result == -EFBIG ? "over the size cap" : strerror(-result));
	}
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
	keep_stop();
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
