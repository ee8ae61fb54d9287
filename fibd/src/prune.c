/*
 * prune: after a scan, what the kernel has of fibd's that nobody wants goes,
 * and what someone wants that the kernel lost comes back (engine layer).
 *
 * Pruning. A scan adopts the
 * routes of fibd's protocol it finds and hands their keys here; `grace` seconds
 * later (startup_grace), those still claimed by no client are withdrawn, at
 * most PRUNE_BUDGET per callback. A client that comes back in time claims
 * its routes by feeding them again. After a restart, a table whose clients
 * have all fed it again is pruned at once (prune_table_claimed; docs/design.md,
 * invariant 8).
 *
 * Repairing. A rescan marks every route its dump showed with the table's
 * epoch; the repair walk then writes again the routes a client wants, that
 * fibd had installed, and that the dump did not show, nor the ones before it
 * that the repair waited for (route_seen; prune_repair).
 */
#include <stdlib.h>

#include "event.h"
#include "health.h"
#include "log.h"
#include "nl.h"
#include "prune.h"

/* Keys adopted by one scan, to be checked for claims when the grace time is over. */
struct prune {
	struct prune *next;
	uint16_t table;
	uint64_t due; /* uv_now() ms */
	struct scan_key *keys;
	size_t n, at;
};

static struct {
	uv_loop_t *loop;
	bool open;
	uint32_t grace_ms;
	struct prune *prunes; /* in order of due time */
	uv_timer_t prune_timer;
	uv_idle_t pruner;
	uint64_t pruned;
	/* the repair walk after a rescan: every route of the table, a budget at a time */
	uv_idle_t repairer;
	struct rtable *repair_table;
	void (*repair_done)(void);
	bool repair_started;
	union ps_addr repair_after; /* the walk resumes after this prefix */
	uint8_t repair_after_len;
} pr;

static void prune_on_timer(uv_timer_t *h);

static void
prune_arm(void)
{
	uint64_t now = uv_now(pr.loop);

	if (!pr.prunes || uv_is_active((uv_handle_t *)&pr.pruner))
		return;
	uv_timer_start(&pr.prune_timer, prune_on_timer,
	    pr.prunes->due > now ? pr.prunes->due - now : 0, 0);
}

/* Put a prune job in the list, in order of due time. */
static void
prune_insert(struct prune *p)
{
	struct prune **link;

	for (link = &pr.prunes; *link && (*link)->due <= p->due; link = &(*link)->next)
		;
	p->next = *link;
	*link = p;
}

/*
 * Hand the adopted keys of t's scan to a prune job due after the grace time,
 * or at once for a first scan when every client that fed t before the restart
 * has fed it again (prune_table_claimed).
 */
void
prune_schedule(struct rtable *t, struct scan_key *keys, size_t n, bool first_scan)
{
	struct prune *p = calloc(1, sizeof(*p));

	if (!p) {
		log_warn("sync: table %u: out of memory; its unclaimed routes will stay", t->id);
		free(keys);
		return;
	}
	p->table = t->idx;
	p->due = uv_now(pr.loop) + (t->claims_in && first_scan ? 0 : pr.grace_ms);
	p->keys = keys;
	p->n = n;
	prune_insert(p);
	prune_arm();
}

void
prune_table_claimed(struct rtable *t)
{
	bool running = pr.open && uv_is_active((uv_handle_t *)&pr.pruner);
	struct prune **link = &pr.prunes, *now = NULL, *head = NULL;

	t->claims_in = true;
	if (running && pr.prunes) {
		/* The job under way stays first. */
		head = pr.prunes;
		pr.prunes = head->next;
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
		head->next = pr.prunes;
		pr.prunes = head;
	}
	if (pr.open && !running) {
		uv_timer_stop(&pr.prune_timer);
		prune_arm();
	}
}

/* Withdraw adopted routes that no client claimed, a budget at a time. */
static void
prune_on_idle(uv_idle_t *h)
{
	uint64_t t0 = health_cb_begin();
	struct prune *p = pr.prunes;
	struct rtable *t;
	unsigned budget = PRUNE_BUDGET;
	(void)h;

	if (!p) {
		uv_idle_stop(&pr.pruner);
		return;
	}
	t = table_at(p->table);
	for (; p->at < p->n && budget; p->at++, budget--) {
		const struct scan_key *k = &p->keys[p->at];
		struct route *r = table_lookup(t, &k->prefix, k->plen, k->tos, k->metric);
		/* Unclaimed: no owner wants it, yet the kernel has it (fibd adopted it). */
		if (!r || r->owner != OWNER_NONE || r->want || !r->have)
			continue;
		pr.pruned++;
		nl_enqueue(r);
	}
	if (p->at == p->n) {
		log_info("sync: table %u: grace time over, %llu unclaimed routes withdrawn so far",
		    t->id, (unsigned long long)pr.pruned);
		pr.prunes = p->next;
		free(p->keys);
		free(p);
		uv_idle_stop(&pr.pruner);
		prune_arm();
	}
	health_cb_end(t0, "sync prune");
}

static void
prune_on_timer(uv_timer_t *h)
{
	(void)h;
	uv_idle_start(&pr.pruner, prune_on_idle);
}


/* ---- the repair walk after a rescan ---- */

struct repair_walk {
	struct rtable *t;
	unsigned budget;
	uint32_t last;             /* the prefix of the last route looked at */
	bool stopped;
};

/*
 * One route of the table. A rescan marked every route its dump showed with
 * the table's epoch: a route a client wants, that fibd had installed, and
 * that the dump did not show, was lost (a link went down, someone deleted it):
 * write it again. Routes with a write queued or in flight are left to it. The
 * walk stops only between prefixes, where table_walk_after resumes.
 */
static int
repair_one(struct route *r, void *ctx)
{
	struct repair_walk *w = ctx;
	struct rtable *t = w->t;

	if (!w->budget && r->node != w->last) {
		w->stopped = true;
		return 1;
	}
	if (w->budget)
		w->budget--;
	w->last = r->node;
	route_prefix(r, &pr.repair_after);
	pr.repair_after_len = route_plen(r);
	if (t->diffing && r->want) {
		if (r->flags & (R_FAILED | R_WAITING))
			event_emit(&(struct event){ .kind = EV_DIFF, .t = t, .r = r, .diff = DIFF_FAILED });
		else if (!route_seen(t, r))
			event_emit(&(struct event){ .kind = EV_DIFF, .t = t, .r = r, .diff = DIFF_MISSING });
	}
	if (!r->want || !r->have || route_seen(t, r) || (r->flags & (R_QUEUED | R_INFLIGHT)))
		return 0;
	t->repaired = true;
	nl_route_lost(r);
	return 0;
}

static void
prune_on_repair(uv_idle_t *h)
{
	uint64_t t0 = health_cb_begin();
	struct repair_walk w = { .t = pr.repair_table, .budget = PRUNE_REPAIR_BUDGET };
	(void)h;

	table_walk_after(pr.repair_table, pr.repair_started ? &pr.repair_after : NULL,
	    pr.repair_after_len, repair_one, &w);
	pr.repair_started = true;
	if (!w.stopped) {
		void (*done)(void) = pr.repair_done;
		uv_idle_stop(&pr.repairer);
		pr.repair_table = NULL;
		done();
	}
	health_cb_end(t0, "sync repair");
}

void
prune_repair(struct rtable *t, void (*done)(void))
{
	pr.repair_table = t;
	pr.repair_done = done;
	pr.repair_started = false;
	uv_idle_start(&pr.repairer, prune_on_repair);
}

void
prune_init(uv_loop_t *loop, uint32_t grace_s)
{
	pr.loop = loop;
	pr.grace_ms = grace_s * 1000;
	pr.pruned = 0;
	uv_timer_init(loop, &pr.prune_timer);
	uv_idle_init(loop, &pr.pruner);
	uv_idle_init(loop, &pr.repairer);
	pr.open = true;
}

void
prune_set_grace(uint32_t grace_s)
{
	pr.grace_ms = grace_s * 1000;
}

uint64_t
prune_count(void)
{
	return pr.pruned;
}

void
prune_close(void)
{
	if (!pr.open)
		return;
	pr.open = false;
	uv_close((uv_handle_t *)&pr.prune_timer, NULL);
	uv_close((uv_handle_t *)&pr.pruner, NULL);
	uv_close((uv_handle_t *)&pr.repairer, NULL);
	while (pr.prunes) {
		struct prune *p = pr.prunes;
		pr.prunes = p->next;
		free(p->keys);
		free(p);
	}
}
