/*
 * owner: the owners of desired routes (owner.h). Owners live in a fixed array
 * of slots (route.owner is the slot); sweeps run from an idle handle, a budget
 * at a time; stale owners are looked at once a second while there are any.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "health.h"
#include "log.h"
#include "nl.h"
#include "owner.h"
#include "prune.h"
#include "sync.h"

/*
 * A client that fed tables before fibd started (the state file says which) and
 * has not ended a feed since. A table none of them still owes a feed has every
 * route it will claim: sync prunes the rest at once, not after the grace time.
 */
struct awaited {
	char name[PS_NAME_MAX + 1];
	uint8_t fed[TABLE_MAX / 8];
	struct awaited *next;
};

static struct {
	uv_loop_t *loop;
	struct owner_hooks hooks;
	struct owner *owners[OWNERS_MAX];
	unsigned n_owners;
	struct owner *sweeps;
	uv_idle_t sweeper;
	uv_timer_t stale_tick; /* runs while some owner is stale */
	unsigned n_stale;
	bool open;
	bool closing; /* fibd stops: every route stays */
	struct awaited *awaited;
	struct owner_stats st;
} ow;

static void owner_maybe_forget(struct owner *o);

struct owner *
owner_find(const char *name)
{
	for (unsigned i = 0; i < OWNERS_MAX; i++)
		if (ow.owners[i] && !strcmp(ow.owners[i]->name, name))
			return ow.owners[i];
	return NULL;
}

struct owner *
owner_get(const char *name)
{
	struct owner *o = owner_find(name);

	if (o)
		return o;
	for (unsigned i = 0; i < OWNERS_MAX; i++) {
		if (ow.owners[i])
			continue;
		o = calloc(1, sizeof(*o));
		if (!o)
			return NULL;
		o->slot = (uint16_t)i;
		o->uid = o->pid = -1;
		snprintf(o->name, sizeof(o->name), "%s", name);
		ow.owners[i] = o;
		ow.n_owners++;
		return o;
	}
	return NULL;
}

static bool
bit_get(const uint8_t *set, unsigned i)
{
	return set[i / 8] & (1u << (i % 8));
}

static void
bit_set(uint8_t *set, unsigned i)
{
	set[i / 8] |= (uint8_t)(1u << (i % 8));
}

/* Returns true when it is the owner's first route in its table (the state file must say so). */
static bool
attach(struct owner *o, struct route *r)
{
	bool first = !bit_get(o->fed, r->rt);

	bit_set(o->fed, r->rt);
	r->owner = o->slot;
	r->oprev = 0;
	r->onext = route_ref(o->routes);
	if (o->routes)
		o->routes->oprev = route_ref(r);
	o->routes = r;
	o->n_routes++;
	return first;
}

static void
detach(struct owner *o, struct route *r)
{
	struct route *prev = route_at(r->oprev), *next = route_at(r->onext);

	if (o->sweep == r)
		o->sweep = next;
	if (prev)
		prev->onext = r->onext;
	else
		o->routes = next;
	if (next)
		next->oprev = r->oprev;
	r->onext = r->oprev = 0;
	r->owner = OWNER_NONE;
	o->n_routes--;
	if (r->flags & R_PENDING) {
		r->flags &= (uint8_t)~R_PENDING;
		o->pending--;
	}
}

/* A route the owner no longer wants and the kernel no longer has: forget it. */
static void
settle(struct route *r)
{
	struct owner *o = r->owner != OWNER_NONE ? ow.owners[r->owner] : NULL;

	if (r->want || r->have || (r->flags & (R_QUEUED | R_INFLIGHT | R_STATUSQ | R_PARKED)))
		return;
	if (o)
		detach(o, r);
	table_release(r);
	if (o)
		owner_maybe_forget(o);
}

void
owner_status_sent(struct route *r)
{
	r->flags &= (uint8_t)~R_STATUSQ;
	settle(r);
}

static void
ready(struct owner *o)
{
	if (o->session && !o->quiet && ow.hooks.ready)
		ow.hooks.ready(o->session);
}

/* The route awaits the kernel on behalf of its owner (the PING barrier counts it). */
static void
route_write(struct owner *o, struct route *r)
{
	if (event_wanted())
		event_emit(&(struct event){ .kind = r->want ? EV_DESIRED : EV_WITHDRAWN, .t = table_at(r->rt),
		    .r = r, .client = o->name });
	nl_enqueue(r);
	if (!(r->flags & R_PENDING) && (r->flags & (R_QUEUED | R_INFLIGHT))) {
		r->flags |= R_PENDING;
		o->pending++;
	}
}

static void
status_push(struct owner *o, struct route *r)
{
	if (!o->session || o->quiet || (r->flags & R_STATUSQ))
		return;
	r->flags |= R_STATUSQ;
	r->snext = 0;
	if (o->sq_tail)
		o->sq_tail->snext = route_ref(r);
	else
		o->sq_head = r;
	o->sq_tail = r;
}

void
owner_route_done(struct route *r, int err, const char *text)
{
	struct owner *o = r->owner != OWNER_NONE ? ow.owners[r->owner] : NULL;
	void *session = o && !o->quiet ? o->session : NULL;

	if (event_wanted() && err >= 0)
		event_emit(&(struct event){ .kind = err ? EV_FAILED : r->want ? EV_INSTALLED : EV_REMOVED,
		    .t = table_at(r->rt), .r = r, .client = o ? o->name : NULL, .err = err, .text = text });
	if (o && (r->flags & R_PENDING) && !(r->flags & (R_QUEUED | R_INFLIGHT))) {
		r->flags &= (uint8_t)~R_PENDING;
		o->pending--;
	}
	if (o && err >= 0)
		status_push(o, r);
	/*
	 * Settle first: it may free the route (when nobody is told about it) and an
	 * owner without a session; sending the status queue may free it too.
	 */
	settle(r);
	if (session && ow.hooks.ready)
		ow.hooks.ready(session);
}

int
owner_route(struct owner *o, uint32_t table, uint32_t metric, const struct ps_route *pr, char *why,
    size_t why_len)
{
	unsigned before = table_count();
	struct rtable *t = table_get(table, pr->key.family, true);
	bool new_table = table_count() != before;
	struct route *r;
	struct rattr *a;

	if (new_table)
		sync_tables_changed();
	ow.st.routes_in++;
	if (!t || !(r = table_insert(t, &pr->key.prefix, pr->key.plen, pr->key.tos, metric))) {
		if (new_table)
			state_save(); /* a new table: the next fibd scans it at start */
		snprintf(why, why_len, "fibd is out of memory or tables");
		return ENOMEM;
	}
	if (r->owner != OWNER_NONE && r->owner != o->slot) {
		struct owner *other = ow.owners[r->owner];
		if (r->want) {
			ow.st.conflicts++;
			snprintf(why, why_len, "route key is owned by client %s", other->name);
			return EEXIST;
		}
		detach(other, r); /* withdrawn by its owner: free to take */
		owner_maybe_forget(other);
	}
	if (r->owner == OWNER_NONE) {
		/*
		 * A new table, or the client's first route in one: one save covers
		 * both (the next fibd scans the table, and waits for the client).
		 */
		if (attach(o, r) || new_table)
			state_save();
		if (!r->have)
			r->flags |= R_EXCL;
	} else if (new_table) {
		state_save();
	}
	r->gen = o->mark;
	if (!(a = rattr_intern(pr))) {
		snprintf(why, why_len, "fibd is out of memory");
		settle(r);
		return ENOMEM;
	}
	if (a == route_want(r)) {
		rattr_unref(a);
		return 0;
	}
	route_set_want(r, a);
	route_write(o, r);
	return 0;
}

void
owner_withdraw(struct owner *o, uint32_t table, uint32_t metric, const struct ps_key *k)
{
	struct rtable *t = table_get(table, k->family, false);
	struct route *r = t ? table_lookup(t, &k->prefix, k->plen, k->tos, metric) : NULL;

	ow.st.withdraws_in++;
	if (!r || r->owner != o->slot || !r->want)
		return; /* not its own, or already withdrawn: nothing to do */
	route_set_want(r, NULL);
	route_write(o, r);
}

/* ---- sweeping after a feed ---- */

static void
owner_on_sweep(uv_idle_t *h)
{
	unsigned budget = OWNER_SWEEP_BUDGET;
	uint64_t t0 = health_cb_begin();
	(void)h;

	while (ow.sweeps && budget) {
		struct owner *o = ow.sweeps;
		/* (budget-- in the condition would wrap to UINT_MAX when it runs out) */
		for (; o->sweep && budget; budget--) {
			struct route *r = o->sweep;
			o->sweep = route_at(r->onext);
			if (r->want && r->gen != o->mark) {
				route_set_want(r, NULL);
				route_write(o, r);
			}
		}
		if (!o->sweep) {
			o->sweeping = false;
			ow.sweeps = o->sweep_next;
			log_info("feed %s: generation %llu complete, %llu routes", o->name,
			    (unsigned long long)o->generation, (unsigned long long)o->n_routes);
			ready(o);
			owner_maybe_forget(o);
		}
	}
	if (!ow.sweeps)
		uv_idle_stop(&ow.sweeper);
	health_cb_end(t0, "feed sweep");
}

static void
sweep_start(struct owner *o)
{
	o->sweep = o->routes;
	if (o->sweeping || ow.closing)
		return;
	o->sweeping = true;
	o->sweep_next = ow.sweeps;
	ow.sweeps = o;
	uv_idle_start(&ow.sweeper, owner_on_sweep);
}

void
owner_withdraw_all(struct owner *o)
{
	o->in_feed = false;
	o->mark++; /* one none of its routes has */
	sweep_start(o);
}

void
owner_feed_begin(struct owner *o, uint64_t generation)
{
	o->in_feed = true;
	o->generation = generation;
	o->mark++;
}

static void owner_fed_again(struct owner *o);

void
owner_feed_end(struct owner *o)
{
	o->in_feed = false;
	sweep_start(o);
	owner_fed_again(o);
}

/* ---- sessions come and go ---- */

static void
owner_unstale(struct owner *o)
{
	if (!o->stale_until)
		return;
	o->stale_until = 0;
	if (--ow.n_stale == 0)
		uv_timer_stop(&ow.stale_tick);
}

static void
owner_on_stale_tick(uv_timer_t *t)
{
	uint64_t now = uv_now(ow.loop);
	(void)t;

	for (unsigned i = 0; i < OWNERS_MAX; i++) {
		struct owner *o = ow.owners[i];
		if (!o || !o->stale_until || o->stale_until > now)
			continue;
		owner_unstale(o);
		log_info("feed %s: stale time of %u s over: withdrawing its %llu routes", o->name,
		    o->stale_time, (unsigned long long)o->n_routes);
		owner_withdraw_all(o);
	}
}

void
owner_session_back(struct owner *o, void *session, int uid, int pid, uint32_t stale_time,
    bool persist)
{
	o->session = session;
	o->uid = uid;
	o->pid = pid;
	if (o->stale_until)
		log_info("feed %s: back within its stale time; its %llu routes are its own again",
		    o->name, (unsigned long long)o->n_routes);
	owner_unstale(o);
	o->stale_time = stale_time;
	o->persist = persist;
}

void
owner_set_quiet(struct owner *o, bool quiet)
{
	o->quiet = quiet;
}

void
owner_session_gone(struct owner *o)
{
	/* Nobody to tell: drop the pending results. */
	while (o->sq_head) {
		struct route *r = o->sq_head;
		o->sq_head = route_at(r->snext);
		owner_status_sent(r);
	}
	o->sq_tail = NULL;
	o->in_feed = false; /* an unfinished feed is abandoned, not swept */
	o->session = NULL;
	o->quiet = false;
	o->uid = o->pid = -1;
	if (ow.closing) {
		owner_maybe_forget(o);
		return;
	}
	if (o->persist) {
		log_info("feed %s: disconnected; its %llu routes persist", o->name,
		    (unsigned long long)o->n_routes);
	} else if (!o->stale_time || !o->n_routes) {
		if (o->n_routes)
			log_info("feed %s: disconnected; withdrawing its %llu routes", o->name,
			    (unsigned long long)o->n_routes);
		owner_withdraw_all(o);
	} else {
		log_info("feed %s: disconnected; its %llu routes stay for %u s", o->name,
		    (unsigned long long)o->n_routes, o->stale_time);
		o->stale_until = uv_now(ow.loop) + (uint64_t)o->stale_time * 1000;
		if (ow.n_stale++ == 0)
			uv_timer_start(&ow.stale_tick, owner_on_stale_tick, 1000, 1000);
	}
	owner_maybe_forget(o);
}

static void
owner_maybe_forget(struct owner *o)
{
	bool fed = false;

	if (o->session || o->routes || o->sweeping)
		return;
	owner_unstale(o);
	ow.owners[o->slot] = NULL;
	ow.n_owners--;
	for (unsigned i = 0; i < sizeof(o->fed); i++)
		fed |= o->fed[i] != 0;
	free(o);
	if (fed && !ow.closing)
		state_save(); /* a restarted fibd need not wait for it */
}

/* ---- clients fibd waits for after a restart ---- */

static struct awaited *
awaited_find(const char *name)
{
	for (struct awaited *w = ow.awaited; w; w = w->next)
		if (!strcmp(w->name, name))
			return w;
	return NULL;
}

void
owner_await(uint32_t table, uint8_t family, const char *name)
{
	struct rtable *t = table_get(table, family, false); /* its table line came first */
	struct awaited *w = awaited_find(name);

	if (!t)
		return;
	if (!w) {
		if (!(w = calloc(1, sizeof(*w)))) {
			log_warn("feed: out of memory; table %u waits the grace time for %s", table, name);
			return;
		}
		snprintf(w->name, sizeof(w->name), "%s", name);
		w->next = ow.awaited;
		ow.awaited = w;
	}
	bit_set(w->fed, t->idx);
}

/*
 * The owner ended a feed: it owes none of the tables it fed before the restart.
 * Each of them that no other client still owes has all its claims in.
 */
static void
owner_fed_again(struct owner *o)
{
	struct awaited *w = awaited_find(o->name), **link;

	if (!w)
		return;
	for (link = &ow.awaited; *link != w; link = &(*link)->next)
		;
	*link = w->next;
	for (unsigned i = 0; i < table_count(); i++) {
		bool owed = false;
		if (!bit_get(w->fed, i))
			continue;
		for (struct awaited *x = ow.awaited; x && !owed; x = x->next)
			owed = bit_get(x->fed, i);
		if (!owed) {
			struct rtable *t = table_at((uint16_t)i);
			log_info("feed: table %u %s: every client that fed it before fibd started has fed "
				 "it again (the last: %s); what none claimed goes now",
			    t->id, family_name(t->family), o->name);
			prune_table_claimed(t);
		}
	}
	free(w);
}

void
owner_each_fed(state_emit_fn emit, void *ctx)
{
	for (unsigned i = 0; i < OWNERS_MAX; i++) {
		struct owner *o = ow.owners[i];
		struct awaited *w = o ? awaited_find(o->name) : NULL;
		if (!o)
			continue;
		for (unsigned k = 0; k < table_count(); k++)
			if (bit_get(o->fed, k) || (w && bit_get(w->fed, k)))
				emit(table_at((uint16_t)k)->id, table_at((uint16_t)k)->family, o->name, ctx);
	}
	/* Those that have not come back since the restart: the next fibd waits for them too. */
	for (struct awaited *w = ow.awaited; w; w = w->next) {
		if (owner_find(w->name))
			continue;
		for (unsigned k = 0; k < table_count(); k++)
			if (bit_get(w->fed, k))
				emit(table_at((uint16_t)k)->id, table_at((uint16_t)k)->family, w->name, ctx);
	}
}

/* ---- status ---- */

unsigned
owner_count(void)
{
	return ow.n_owners;
}

const char *
owner_name(uint16_t slot)
{
	return slot < OWNERS_MAX && ow.owners[slot] ? ow.owners[slot]->name : NULL;
}

int
owner_info_at(unsigned i, struct owner_info *ret)
{
	for (unsigned slot = 0; slot < OWNERS_MAX; slot++) {
		struct owner *o = ow.owners[slot];
		if (!o || i--)
			continue;
		ret->name = o->name;
		ret->connected = o->session != NULL;
		ret->routes = o->n_routes;
		ret->pending = o->pending;
		ret->generation = o->generation;
		ret->in_feed = o->in_feed;
		ret->persist = o->persist;
		ret->uid = o->uid;
		ret->pid = o->pid;
		ret->stale_left_s = o->stale_until > uv_now(ow.loop)
		    ? (o->stale_until - uv_now(ow.loop) + 999) / 1000
		    : 0;
		return 0;
	}
	return -ENOENT;
}

void
owner_get_stats(struct owner_stats *ret)
{
	*ret = ow.st;
}

int
owner_init(uv_loop_t *loop, const struct owner_hooks *hooks)
{
	/* Nothing of an earlier run (tests init again; their routes are gone). */
	for (unsigned i = 0; i < OWNERS_MAX; i++)
		free(ow.owners[i]);
	while (ow.awaited) {
		struct awaited *w = ow.awaited;
		ow.awaited = w->next;
		free(w);
	}
	memset(&ow, 0, sizeof(ow));
	ow.loop = loop;
	ow.hooks = *hooks;
	uv_idle_init(loop, &ow.sweeper);
	uv_timer_init(loop, &ow.stale_tick);
	ow.open = true;
	return 0;
}

void
owner_close(void)
{
	if (!ow.open)
		return;
	ow.open = false;
	ow.closing = true;
	uv_close((uv_handle_t *)&ow.sweeper, NULL);
	uv_close((uv_handle_t *)&ow.stale_tick, NULL);
}
