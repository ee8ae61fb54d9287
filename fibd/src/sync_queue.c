/*
 * sync_queue: which table the sync engine dumps next, and who asks (sync.c runs
 * the job). Tables wait in a queue of their own kind: first scans before learn
 * dumps before rescans (writes wait for first scans), then in the order asked
 * for; a table whose dump was discarded waits out its own backoff while others
 * go ahead. Rescans come from fibctl resync, a periodic timer, link and address
 * changes and monitor overruns (debounced until the writer is quiet), and an
 * EXCL add that met a route a dump may have missed.
 */
#include <errno.h>
#include <string.h>

#include "dump.h"
#include "learn.h"
#include "log.h"
#include "monitor.h"
#include "nl.h"
#include "sync-internal.h"

void
sync_on_retry(uv_timer_t *h)
{
	(void)h;
	sync_start_next();
}

static void
sync_enqueue(struct rtable *t)
{
	sync_mark_queued(t);
	sync_start_next();
}

void
sync_queue_learn(struct rtable *t)
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
		uint64_t order, not_before;
		enum job rank = job_of(t, &order);
		if (rank == JOB_NONE)
			continue;
		not_before = rank == JOB_LEARN && t->learn_not_before > t->scan_not_before
		    ? t->learn_not_before : t->scan_not_before;
		if (not_before > now) {
			if (not_before - now < wait)
				wait = not_before - now;
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

/*
 * The monitor filters off route notifications of tables fibd has nothing in;
 * a new table is named to it when made (a feed, decouple), and at the latest
 * before its first dump, whose validity rests on them. Tables are never unmade.
 */
void
sync_tables_changed(void)
{
	uint32_t ids[TABLE_MAX];
	unsigned n = table_count();

	if (n == sy.tables_named)
		return;
	for (unsigned i = 0; i < n; i++)
		ids[i] = table_at((uint16_t)i)->id;
	mon_set_tables(ids, n);
	sy.tables_named = n;
}

void
sync_start_next(void)
{
	struct rtable *t;
	enum job job;
	int r;

	if (!sy.open || sy.busy || !(t = pick_next(&job)))
		return;
	sync_tables_changed();
	sy.cur = t;
	sy.busy = true;
	sy.dumping = true;
	sy.overruns_at_start = mon_catch_up();
	sy.changes_at_start = t->changes;
	sy.writes_at_start = t->writes;
	sy.learning = job == JOB_LEARN;
	if (sy.learning) {
		t->learn_queued = false;
		learn_begin(t); /* keep what changes from here on, to replay after the dump */
		learn_dump_start(t);
	} else {
		t->scan_queued = false;
		sync_keep_start(); /* a scan's notifications: replayed once its snapshot is applied */
		if (t->scan == SCAN_DONE) {
			/*
			 * A new epoch from the moment the dump is asked for: routes the
			 * kernel acknowledges from now on carry it too (nl.c), so the repair
			 * walk does not take a route installed after the dump's snapshot
			 * for a lost one. A rescan whose repair waits for this dump
			 * (sync_on_apply) adds to the union of the last ones, unless
			 * routes may have gone without a word since (sync_rescan_soon).
			 */
			t->epoch++;
			if (!t->union_open || t->union_events != sy.events) {
				t->union_first = t->epoch;
				t->union_events = sy.events;
			}
			t->union_open = false;
		} else {
			t->scan = SCAN_RUNNING;
		}
	}
	r = dump_start(t->id, t->family, sy.learning ? 0 : sy.protocol, /* a learn dump takes every protocol */
	    &(const struct dump_hooks){ .route = sync_dump_route, .end = sync_dump_end }, NULL);
	if (r < 0) {
		sy.st.dumps_failed++;
		sync_job_end(false, strerror(-r));
		return;
	}
	sy.st.dumps_started++;
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
		sync_enqueue(t);
	}
	return false;
}

bool
sync_table_ready_now(const struct rtable *t)
{
	return !sy.open || t->scan == SCAN_DONE || t->scan == SCAN_NONE;
}

/*
 * An add with NLM_F_EXCL met a route at its key: one of fibd's that a dump
 * skipped, if the table's last dump was unsure or its repair took routes for
 * lost (once per repair): a rescan adopts it.
 */
void
sync_route_exists(struct rtable *t)
{
	if ((t->dump_unsure || t->repaired) && t->scan == SCAN_DONE && !t->scan_queued) {
		log_info("sync: table %u %s: a route of fibd's may be there unseen; rescanning",
		    t->id, family_name(t->family));
		t->repaired = false;
		sync_enqueue(t);
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
	sync_enqueue(t);
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
	sync_queue_learn(t);
	sync_start_next();
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
void
sync_on_soon(uv_timer_t *h)
{
	if (nl_pending()) {
		uv_timer_start(h, sync_on_soon, SYNC_RESCAN_DELAY_MS, 0);
		return;
	}
	sy.st.rescans_triggered++;
	sync_rescan_all();
	if (sy.relearn) {
		/* Learners missed what was lost too: a refresh of every learned table. */
		sy.relearn = false;
		for (unsigned i = 0; i < table_count(); i++) {
			struct rtable *t = table_at((uint16_t)i);
			if (t->learners)
				sync_learn_table(t);
		}
	}
}

/*
 * A link or address change, or lost notifications: routes may have gone with
 * no notification (IPv4 ones through a link that went down, IPv6 ones on a
 * device that went away), so no dump from before counts with a later one's.
 */
void
sync_rescan_soon(void)
{
	if (!sy.open)
		return;
	sy.events++;
	uv_timer_start(&sy.soon, sync_on_soon, SYNC_RESCAN_DELAY_MS, 0);
}

void
sync_notifications_lost(void)
{
	sy.relearn = true;
	sync_rescan_soon();
}

void
sync_on_periodic(uv_timer_t *h)
{
	(void)h;
	sync_rescan_all();
}

