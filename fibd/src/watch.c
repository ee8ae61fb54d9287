/*
 * watch: event-fed answers (see watch.h). Each stream keeps its text in a
 * buffer that watch_more hands to the session as CTL_CHUNKs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "event.h"
#include "format.h"
#include "nl.h"
#include "owner.h"
#include "reply.h"
#include "sync.h"
#include "watch.h"

struct watch {
	struct watch *next;
	void *session;
	uint32_t req;
	bool json;
	bool diff;
	uint32_t table;   /* watch: 0 for every table */
	struct text buf;
	uint64_t dropped; /* watch: events lost since the reader last kept up */
	/* diff: per table index, waiting for its rescan, collecting it, or done */
	uint8_t state[TABLE_MAX];
	unsigned pending; /* tables not done yet */
	uint64_t counts[DIFF_KINDS], listed, routes;
	bool unsure;      /* an IPv6 table's dump was unsure: missing and failed not looked for */
};

enum { D_NONE, D_WAITING, D_COLLECTING, D_DONE };

static struct watch *streams;

static const char *const ev_names[] = {
	[EV_DESIRED] = "desired", [EV_WITHDRAWN] = "withdrawn", [EV_INSTALLED] = "installed",
	[EV_REMOVED] = "removed", [EV_FAILED] = "failed", [EV_KERNEL_ADD] = "kernel-add",
	[EV_KERNEL_DEL] = "kernel-del",
};

static const char *const diff_names[] = {
	[DIFF_MISSING] = "missing", [DIFF_DIFFERS] = "differs", [DIFF_EXTRA] = "extra",
	[DIFF_FAILED] = "failed",
};

/* Wall-clock time of day with milliseconds, for the event lines. */
static void
put_time(struct text *t)
{
	struct timeval tv;
	struct tm tm;

	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	tprintf(t, "%02d:%02d:%02d.%03ld", tm.tm_hour, tm.tm_min, tm.tm_sec, (long)tv.tv_usec / 1000);
}

/* The watches an event of table t goes to: room in their buffer, or counted as lost. */
static bool
wants(struct watch *w, const struct rtable *t)
{
	if (w->diff || (w->table && w->table != t->id))
		return false;
	if (w->buf.len >= WATCH_BUF_MAX) {
		w->dropped++;
		return false;
	}
	if (w->dropped) {
		if (w->json)
			tprintf(&w->buf, "{\"event\":\"lost\",\"count\":%llu}\n",
			    (unsigned long long)w->dropped);
		else
			tprintf(&w->buf, "# %llu events lost: the reader fell behind\n",
			    (unsigned long long)w->dropped);
		w->dropped = 0;
	}
	return true;
}

/* An event's start: its time and name, and for JSON the route's key. */
static void
event_head(struct text *t, bool json, enum event_kind ev, const struct rtable *rt,
    const union ps_addr *p, uint8_t plen, uint8_t tos, uint32_t metric)
{
	if (json) {
		tprintf(t, "{\"time\":\"");
		put_time(t);
		tprintf(t, "\",\"event\":\"%s\",", ev_names[ev]);
		put_key_json(t, rt->family, rt->id, p, plen, tos, metric);
		return;
	}
	put_time(t);
	tprintf(t, " %-10s ", ev_names[ev]);
}

static void
watch_route(enum event_kind ev, const struct route *r, const char *client, int err, const char *text)
{
	const struct rtable *rt = table_at(r->rt);
	const struct rattr *a = ev == EV_DESIRED || ev == EV_INSTALLED || ev == EV_FAILED ? route_want(r) : NULL;
	union ps_addr p;

	route_prefix(r, &p);
	for (struct watch *w = streams; w; w = w->next) {
		struct text *t = &w->buf;
		if (!wants(w, rt))
			continue;
		event_head(t, w->json, ev, rt, &p, route_plen(r), r->tos, r->metric);
		if (w->json) {
			tprintf(t, ",\"route\":");
			put_attrs_json(t, a);
			tprintf(t, ",\"client\":");
			json_str_or_null(t, client);
			tprintf(t, ",\"errno\":%d,\"error\":", err > 0 ? err : 0);
			put_error_json(t, err, text);
			tprintf(t, "}\n");
			reply_wake(w->session);
			continue;
		}
		put_route(t, rt->family, &p, route_plen(r), a, rt->id, r->metric, r->tos);
		if (client)
			tprintf(t, "  # client %s", client);
		if (err > 0 || text) {
			tprintf(t, client ? "; " : "  # ");
			put_error(t, err, text);
		}
		tprintf(t, "\n");
		reply_wake(w->session);
	}
}

static void
watch_kernel(enum event_kind ev, const struct rtable *rt, const union ps_addr *prefix, uint8_t plen,
    uint8_t tos, uint32_t metric, uint8_t protocol)
{
	for (struct watch *w = streams; w; w = w->next) {
		struct text *t = &w->buf;
		if (!wants(w, rt))
			continue;
		event_head(t, w->json, ev, rt, prefix, plen, tos, metric);
		if (w->json) {
			tprintf(t, ",\"protocol\":%u}\n", protocol);
		} else {
			put_route(t, rt->family, prefix, plen, NULL, rt->id, metric, tos);
			tprintf(t, " proto %u  # by someone else\n", protocol);
		}
		reply_wake(w->session);
	}
}

/* ---- diff ---- */

static void
watch_diff_begin(struct rtable *t)
{
	t->diffing = false;
	for (struct watch *w = streams; w; w = w->next)
		if (w->diff && w->state[t->idx] == D_WAITING) {
			w->state[t->idx] = D_COLLECTING;
			t->diff_waiting--;
			t->diffing = true;
		}
}

static void
watch_diff(struct rtable *rt, enum diff_kind kind, const struct route *r, const struct rattr *kernel)
{
	const char *owner = r->owner == OWNER_NONE ? NULL : owner_name(r->owner);
	const char *ktext = r->errtext ? nl_text(r->errtext) : NULL;
	union ps_addr p;

	route_prefix(r, &p);
	for (struct watch *w = streams; w; w = w->next) {
		struct text *t = &w->buf;
		if (!w->diff || w->state[rt->idx] != D_COLLECTING)
			continue;
		w->counts[kind]++;
		if (w->listed++ >= DIFF_SHOW_MAX)
			continue;
		if (w->json) {
			tprintf(t, "{\"diff\":\"%s\",", diff_names[kind]);
			put_key_json(t, rt->family, rt->id, &p, route_plen(r), r->tos, r->metric);
			tprintf(t, ",\"client\":");
			json_str_or_null(t, owner);
			tprintf(t, ",\"desired\":");
			put_attrs_json(t, route_want(r));
			tprintf(t, ",\"kernel\":");
			put_attrs_json(t, kernel && kernel->type ? kernel : NULL);
			tprintf(t, ",\"errno\":%u,\"error\":", kind == DIFF_FAILED ? r->err : 0);
			if (kind == DIFF_FAILED)
				put_error_json(t, r->err, ktext);
			else
				tprintf(t, "null");
			tprintf(t, "}\n");
			continue;
		}
		tprintf(t, "%-8s ", diff_names[kind]);
		put_route(t, rt->family, &p, route_plen(r), kind == DIFF_EXTRA ? kernel : route_want(r), rt->id,
		    r->metric, r->tos);
		if (owner)
			tprintf(t, "  # client %s", owner);
		else
			tprintf(t, "  # fibd's protocol, wanted by no client");
		if (kind == DIFF_DIFFERS && kernel && kernel->type) {
			tprintf(t, "; the kernel has:");
			put_attrs(t, kernel);
		}
		if (kind == DIFF_FAILED && (r->err || ktext)) {
			tprintf(t, "; ");
			put_error(t, r->err, ktext);
		}
		tprintf(t, "\n");
	}
}

static void
watch_diff_end(struct rtable *t, uint64_t routes, bool unsure)
{
	t->diffing = false;
	for (struct watch *w = streams; w; w = w->next)
		if (w->diff && w->state[t->idx] == D_COLLECTING) {
			w->state[t->idx] = D_DONE;
			w->routes += routes;
			w->unsure |= unsure;
			w->pending--;
			reply_wake(w->session);
		}
}

void
watch_on_event(const struct event *ev)
{
	switch (ev->kind) {
	case EV_DESIRED:
	case EV_WITHDRAWN:
	case EV_INSTALLED:
	case EV_REMOVED:
	case EV_FAILED:
		watch_route(ev->kind, ev->r, ev->client, ev->err, ev->text);
		break;
	case EV_KERNEL_ADD:
	case EV_KERNEL_DEL:
		watch_kernel(ev->kind, ev->t, &ev->kr->prefix, ev->kr->plen, ev->kr->tos, ev->kr->metric,
		    ev->kr->rtm->rtm_protocol);
		break;
	case EV_RESCAN_BEGIN:
		watch_diff_begin(ev->t);
		break;
	case EV_DIFF:
		watch_diff(ev->t, ev->diff, ev->r, ev->kernel);
		break;
	case EV_RESCAN_END:
		watch_diff_end(ev->t, ev->routes, ev->unsure);
		break;
	}
}

/* ---- streams ---- */

static struct watch *
stream_new(void *session, uint32_t req, bool json)
{
	struct watch *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->session = session;
	w->req = req;
	w->json = json;
	w->next = streams;
	streams = w;
	return w;
}

struct watch *
watch_open(void *session, uint32_t req, bool json, uint32_t table)
{
	struct watch *w = stream_new(session, req, json);

	if (!w)
		return NULL;
	w->table = table;
	event_demand++;
	return w;
}

struct watch *
diff_open(void *session, uint32_t req, bool json, uint32_t table, char *err, size_t errlen)
{
	struct watch *w = stream_new(session, req, json);
	unsigned n = 0;

	if (!w) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->diff = true;
	for (unsigned i = 0; i < table_count(); i++) {
		struct rtable *t = table_at((uint16_t)i);
		if ((table && t->id != table) || !sync_rescan_table(t))
			continue;
		w->state[i] = D_WAITING;
		t->diff_waiting++;
		w->pending++;
		n++;
	}
	if (!n) {
		watch_close(w);
		if (table)
			snprintf(err, errlen, "fibd has not scanned table %u: nothing to compare", table);
		else
			snprintf(err, errlen, "fibd has scanned no table yet: nothing to compare");
		return NULL;
	}
	return w;
}

bool
watch_more(struct watch *w, struct ps_buf *out)
{
	char summary[512];
	uint64_t total = 0;

	if (w->buf.failed) {
		reply_end(out, w->req, PS_E_INTERNAL, "out of memory");
		watch_close(w);
		return true;
	}
	reply_chunk(out, w->req, w->buf.p, w->buf.len);
	w->buf.len = 0;
	if (!w->diff || w->pending)
		return false;
	for (int k = 0; k < DIFF_KINDS; k++)
		total += w->counts[k];
	/* fibctl reads the first number for its exit status: keep "diff: N differences" first. */
	snprintf(summary, sizeof(summary),
	    "diff: %llu differences (%llu missing, %llu differing, %llu extra, %llu failed) against "
	    "fresh dumps of %llu routes%s%s",
	    (unsigned long long)total, (unsigned long long)w->counts[DIFF_MISSING],
	    (unsigned long long)w->counts[DIFF_DIFFERS], (unsigned long long)w->counts[DIFF_EXTRA],
	    (unsigned long long)w->counts[DIFF_FAILED], (unsigned long long)w->routes,
	    w->listed > DIFF_SHOW_MAX ? "; only the first 10000 are listed" : "",
	    w->unsure ? "; an IPv6 table kept changing during its dumps (by others, or by fibd's "
			"own writes), so missing and failed routes were not looked for there" : "");
	reply_end(out, w->req, PS_E_OK, summary);
	watch_close(w);
	return true;
}

void
watch_close(struct watch *w)
{
	struct watch **link;

	if (!w)
		return;
	for (link = &streams; *link && *link != w; link = &(*link)->next)
		;
	if (*link)
		*link = w->next;
	if (w->diff) {
		for (unsigned i = 0; i < table_count(); i++)
			if (w->state[i] == D_WAITING)
				table_at((uint16_t)i)->diff_waiting--;
	} else {
		event_demand--;
	}
	free(w->buf.p);
	free(w);
}
