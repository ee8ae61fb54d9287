/*
 * ctl: control requests. Today: "status". The answer is built as text (or JSON
 * with the request's JSON flag) in a buffer, then sent as CTL_CHUNKs of at most
 * PS_CHUNK_MAX bytes and a CTL_END. Unknown commands end with UNKNOWN_CMD.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uv.h>

#include "config.h"
#include "ctl.h"
#include "format.h"
#include "health.h"
#include "learn.h"
#include "log.h"
#include "monitor.h"
#include "nl.h"
#include "owner.h"
#include "reply.h"
#include "slab.h"
#include "status.h"
#include "state.h"
#include "sync.h"
#include "table.h"
#include "watch.h"

/* ---- arguments ---- */

/* The i-th key and value of a request's argument pairs, NUL-terminated (cut to fit). */
static void
arg_pair(const struct ps_ctl_request *req, unsigned i, char *key, size_t klen, char *val, size_t vlen)
{
	snprintf(key, klen, "%.*s", (int)req->args[i].len, req->args[i].ptr);
	snprintf(val, vlen, "%.*s", (int)req->args[i + 1].len, req->args[i + 1].ptr);
}

/* A kernel table number, 1..4294967295; false with err saying why. */
static bool
parse_table(const char *s, uint32_t *ret, char *err, size_t errlen)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || !v || v > UINT32_MAX) {
		snprintf(err, errlen, "table '%.32s' is not a number from 1 to 4294967295", s);
		return false;
	}
	*ret = (uint32_t)v;
	return true;
}

/* ---- show-route ---- */

#define SHOW_ROUTES_MAX 10000 /* a longer answer is cut: fibctl dump is for whole tables */

/*
 * Attributes fibd can show: not the marker of a route adopted from the kernel
 * whose attributes it could not read (rattr_unknown), which has no type.
 */
static bool
attrs_known(const struct rattr *a)
{
	return a && a->type;
}

struct show {
	struct text *t;
	bool json;
	bool plain;   /* text: ip route syntax only, no comment (dump) */
	unsigned n;
	bool cut;
	uint8_t only_plen; /* exact: the prefix length to show, else 0xff */
};

static const char *
route_state(const struct route *r)
{
	if (r->flags & R_FAILED)
		return "failed";
	if (r->flags & R_WAITING)
		return "waiting";
	if (r->flags & (R_QUEUED | R_INFLIGHT))
		return r->want ? "pending" : "withdrawing";
	if (r->want && rattr_fulfils(route_have(r), route_want(r)))
		return "installed";
	if (!r->want && r->have)
		return r->owner == OWNER_NONE ? "adopted" : "installed";
	return r->want ? "not installed" : "gone";
}

/* One route: what its client wants, what the kernel has, and why not, if it failed. */
static int
show_one(struct route *r, void *ctx)
{
	struct show *sh = ctx;
	struct text *t = sh->t;
	const struct rtable *rt = table_at(r->rt);
	const char *owner = r->owner == OWNER_NONE ? NULL : owner_name(r->owner);
	const char *state = route_state(r), *ktext = r->errtext ? nl_text(r->errtext) : NULL;
	union ps_addr p;

	if (sh->only_plen != 0xff && route_plen(r) != sh->only_plen)
		return 0;
	if (!sh->plain && sh->n == SHOW_ROUTES_MAX) {
		sh->cut = true;
		return 1;
	}
	route_prefix(r, &p);
	if (sh->json) {
		tprintf(t, "%s{", sh->n ? "," : "");
		put_key_json(t, rt->family, rt->id, &p, route_plen(r), r->tos, r->metric);
		tprintf(t, ",\"client\":");
		json_str_or_null(t, owner);
		tprintf(t, ",\"desired\":");
		put_attrs_json(t, route_want(r));
		tprintf(t, ",\"kernel\":");
		if (attrs_known(route_have(r)))
			put_attrs_json(t, route_have(r));
		else
			tprintf(t, r->have ? "\"(adopted, not read)\"" : "null");
		tprintf(t, ",\"state\":\"%s\",\"errno\":%u,\"error\":", state, r->err);
		put_error_json(t, r->err, ktext);
		tprintf(t, sh->plain ? "}\n" : "}");
	} else {
		put_route(t, rt->family, &p, route_plen(r), route_want(r), rt->id, r->metric, r->tos);
		if (sh->plain) {
			tprintf(t, "\n");
			sh->n++;
			return 0;
		}
		tprintf(t, "  # %s, client %s", state, owner ? owner : "(none)");
		if (!rattr_fulfils(route_have(r), route_want(r)) && attrs_known(route_have(r))) {
			tprintf(t, "; the kernel has:");
			put_attrs(t, route_have(r));
		}
		if (r->err || ktext) {
			tprintf(t, "; ");
			put_error(t, r->err, ktext);
		}
		tprintf(t, "\n");
	}
	sh->n++;
	return 0;
}

/*
 * show-route [table N] [prefix P] [match exact|longest|longer]: the routes of
 * fibd's tables (of table N only) for P: exact (the default), the longest
 * covering prefix holding routes, or P and everything more specific; without
 * P, every route. At most SHOW_ROUTES_MAX routes.
 */
static int
show_route(struct text *t, const struct ps_ctl_request *req, bool json, char *err, size_t errlen)
{
	char key[16], val[64], *slash, *end;
	bool have_table = false, have_prefix = false;
	unsigned long plen = 0;
	uint32_t table = 0;
	union ps_addr addr = { 0 };
	uint8_t fam = 0;
	const char *match = "exact";
	struct show sh = { .t = t, .json = json, .only_plen = 0xff };

	if (req->n_args % 2) {
		snprintf(err, errlen, "show-route takes pairs: table N, prefix P, match exact|longest|longer");
		return -1;
	}
	for (unsigned i = 0; i < req->n_args; i += 2) {
		arg_pair(req, i, key, sizeof(key), val, sizeof(val));
		if (!strcmp(key, "table")) {
			if (!parse_table(val, &table, err, errlen))
				return -1;
			have_table = true;
		} else if (!strcmp(key, "prefix")) {
			if ((slash = strchr(val, '/')))
				*slash = '\0';
			fam = strchr(val, ':') ? PS_FAM_V6 : PS_FAM_V4;
			if (inet_pton(fam == PS_FAM_V4 ? AF_INET : AF_INET6, val, addr.b) != 1) {
				snprintf(err, errlen, "'%s' is not an address", val);
				return -1;
			}
			plen = fam == PS_FAM_V4 ? 32 : 128;
			if (slash) {
				errno = 0;
				plen = strtoul(slash + 1, &end, 10);
				if (errno || end == slash + 1 || *end || plen > (fam == PS_FAM_V4 ? 32u : 128u)) {
					snprintf(err, errlen, "'%s' is not a prefix length", slash + 1);
					return -1;
				}
			}
			/* Host bits off, as keys are stored. */
			for (unsigned b = (unsigned)plen; b < 128; b++)
				addr.b[b / 8] &= (uint8_t) ~(0x80u >> (b % 8));
			have_prefix = true;
		} else if (!strcmp(key, "match")) {
			if (strcmp(val, "exact") && strcmp(val, "longest") && strcmp(val, "longer")) {
				snprintf(err, errlen, "match '%s' is not exact, longest or longer", val);
				return -1;
			}
			match = !strcmp(val, "exact") ? "exact" : !strcmp(val, "longest") ? "longest" : "longer";
		} else {
			snprintf(err, errlen, "unknown argument '%s' (table, prefix, match)", key);
			return -1;
		}
	}
	if (json)
		tprintf(t, "[");
	for (unsigned i = 0; i < table_count() && !sh.cut; i++) {
		struct rtable *rt = table_at((uint16_t)i);
		if ((have_table && rt->id != table) || (have_prefix && rt->family != fam))
			continue;
		if (!have_prefix) {
			table_walk(rt, NULL, 0, show_one, &sh);
		} else if (!strcmp(match, "longest")) {
			struct route *r = table_longest(rt, &addr, (uint8_t)plen);
			for (; r && !sh.cut; r = route_at(r->next))
				show_one(r, &sh);
		} else {
			sh.only_plen = !strcmp(match, "exact") ? (uint8_t)plen : 0xff;
			table_walk(rt, &addr, (uint8_t)plen, show_one, &sh);
		}
	}
	if (json)
		tprintf(t, "]\n");
	else if (sh.cut)
		tprintf(t, "# cut after %u routes\n", SHOW_ROUTES_MAX);
	return 0;
}

/* ---- dump: a whole table, streamed ---- */

/*
 * Bytes per part: one CTL_CHUNK, then wait for room. Larger text parts slowed
 * other clients (status p99 67 ms at 128 KiB with four dumps, 5 ms at 8 KiB);
 * binary records cost far less to make per byte, so their parts are larger:
 * 500k routes took 0.28 s in 32 KiB parts, 0.24 s in 64 KiB ones (a part
 * costs about 0.3 ms to make).
 */
#define DUMP_PART_BYTES (8 * 1024)
#define DUMP_PART_BINARY (64 * 1024)

enum dump_format { FMT_TEXT, FMT_JSON, FMT_BINARY };

struct ctl_stream {
	uint32_t req;
	struct watch *w;    /* diff or watch: fed by events (watch.c) */
	enum dump_format fmt;
	bool have_table;
	uint32_t table;
	uint8_t family;     /* 0: both */
	unsigned tidx;      /* the table being dumped, index */
	bool resume;        /* a cursor in it: after/after_len */
	union ps_addr after;
	uint8_t after_len;
	uint64_t n;
	bool opened;        /* JSON: the array's '[' is out; binary: the header */
};

struct dump_ctx {
	struct ctl_stream *st;
	struct show sh;
	size_t part;
	uint32_t last; /* the prefix (its node) of the last route written */
};

/*
 * Whole prefixes at a time: once the part is full, stop at the first route of
 * another prefix, and remember the last prefix written.
 */
static int
dump_one(struct route *r, void *vctx)
{
	struct dump_ctx *d = vctx;

	if (!r->want)
		return 0; /* only what clients want: fed back, it is the same table */
	if (d->sh.t->len >= d->part && r->node != d->last)
		return 1;
	d->last = r->node;
	route_prefix(r, &d->st->after);
	d->st->after_len = route_plen(r);
	d->st->resume = true;
	if (d->st->fmt == FMT_BINARY)
		put_bin_route(d->sh.t, table_at(r->rt), r);
	else
		show_one(r, &d->sh);
	d->st->n++;
	return 0;
}

static bool
dump_more(struct ctl_stream *st, struct ps_buf *out)
{
	struct text t = { 0 };
	struct dump_ctx d = { .st = st, .sh = { .t = &t, .json = st->fmt == FMT_JSON, .plain = true,
					     .only_plen = 0xff, .n = st->n },
		.part = st->fmt == FMT_BINARY ? DUMP_PART_BINARY : DUMP_PART_BYTES };

	if (!st->opened) {
		if (st->fmt == FMT_JSON)
			tprintf(&t, "[\n");
		else if (st->fmt == FMT_BINARY)
			put_bin_header(&t);
		st->opened = true;
	}
	while (st->tidx < table_count() && t.len < d.part && !t.failed) {
		struct rtable *rt = table_at((uint16_t)st->tidx);
		if ((st->have_table && rt->id != st->table) || (st->family && rt->family != st->family) ||
		    table_walk_after(rt, st->resume ? &st->after : NULL, st->after_len, dump_one, &d) == 0) {
			st->tidx++;
			st->resume = false;
			d.last = 0;
		}
		d.sh.n = st->n;
	}
	if (t.failed) {
		free(t.p);
		reply_end(out, st->req, PS_E_INTERNAL, "out of memory");
		return true;
	}
	if (st->tidx == table_count() && st->fmt == FMT_JSON)
		tprintf(&t, "]\n");
	else if (st->tidx == table_count() && st->fmt == FMT_BINARY)
		put_bin_trailer(&t, st->n);
	if (t.len)
		reply_chunk(out, st->req, t.p, t.len);
	free(t.p);
	if (st->tidx < table_count())
		return false;
	/* No closing text: the output is data (feed takes it back), nothing else. */
	reply_end(out, st->req, PS_E_OK, NULL);
	return true;
}

bool
ctl_stream_more(struct ctl_stream *st, struct ps_buf *out)
{
	bool ended;

	if (st->w) {
		ended = watch_more(st->w, out);
		if (ended)
			st->w = NULL; /* freed by watch_more */
	} else {
		ended = dump_more(st, out);
	}
	if (ended)
		free(st);
	return ended;
}

struct ctl_stream *
ctl_stream_free(struct ctl_stream *st)
{
	if (st) {
		watch_close(st->w);
		free(st);
	}
	return NULL;
}

/*
 * dump [table N] [family 4|6] [format text|json|binary]: every route clients
 * want, table by table in prefix order, a part at a time, the next part only
 * once the session has sent the last. A prefix is written whole, and at most
 * once: the cursor is the last prefix written, so a route added behind it
 * during the dump is not in it, one removed ahead of it is not either, and one
 * changed ahead of it shows as it is when its part is made.
 */
static struct ctl_stream *
dump_start(struct ps_buf *out, const struct ps_ctl_request *req)
{
	struct ctl_stream *st = calloc(1, sizeof(*st));
	char key[16], val[32], err[96];

	if (!st) {
		reply_end(out, req->req, PS_E_INTERNAL, "out of memory");
		return NULL;
	}
	st->req = req->req;
	st->fmt = (req->flags & PS_CTL_JSON) ? FMT_JSON : FMT_TEXT;
	if (req->n_args % 2) {
		reply_end(out, req->req, PS_E_ARGS,
		    "dump takes pairs: table N, family 4|6, format text|json|binary");
		return ctl_stream_free(st);
	}
	for (unsigned i = 0; i < req->n_args; i += 2) {
		arg_pair(req, i, key, sizeof(key), val, sizeof(val));
		if (!strcmp(key, "table")) {
			if (!parse_table(val, &st->table, err, sizeof(err))) {
				reply_end(out, req->req, PS_E_ARGS, err);
				return ctl_stream_free(st);
			}
			st->have_table = true;
		} else if (!strcmp(key, "family") && (!strcmp(val, "4") || !strcmp(val, "6"))) {
			st->family = val[0] == '4' ? PS_FAM_V4 : PS_FAM_V6;
		} else if (!strcmp(key, "format") &&
		    (!strcmp(val, "text") || !strcmp(val, "json") || !strcmp(val, "binary"))) {
			st->fmt = val[0] == 't' ? FMT_TEXT : val[0] == 'j' ? FMT_JSON : FMT_BINARY;
		} else {
			reply_end(out, req->req, PS_E_ARGS,
			    "dump takes table N, family 4|6, format text|json|binary");
			return ctl_stream_free(st);
		}
	}
	if (ctl_stream_more(st, out))
		return NULL;
	return st;
}

/* The table N of a request's only pair "table N" (optional): 0 when absent, -1 on error (answered). */
static int64_t
table_arg(struct ps_buf *out, const struct ps_ctl_request *req, const char *cmd)
{
	char key[16], val[48], text[160];
	uint32_t id;

	if (!req->n_args)
		return 0;
	if (req->n_args != 2 || req->args[0].len != 5 || memcmp(req->args[0].ptr, "table", 5)) {
		snprintf(text, sizeof(text), "usage: %s [table N]", cmd);
		reply_end(out, req->req, PS_E_ARGS, text);
		return -1;
	}
	arg_pair(req, 0, key, sizeof(key), val, sizeof(val));
	if (!parse_table(val, &id, text, sizeof(text))) {
		reply_end(out, req->req, PS_E_ARGS, text);
		return -1;
	}
	return id;
}

/* diff [table N] and watch [table N]: streams fed by the engine's events. */
static struct ctl_stream *
watch_start(struct ps_buf *out, const struct ps_ctl_request *req, void *session, bool diff)
{
	int64_t table = table_arg(out, req, diff ? "diff" : "watch");
	struct ctl_stream *st;
	char err[160];
	bool json = req->flags & PS_CTL_JSON;

	if (table < 0)
		return NULL;
	if (!(st = calloc(1, sizeof(*st)))) {
		reply_end(out, req->req, PS_E_INTERNAL, "out of memory");
		return NULL;
	}
	st->req = req->req;
	st->w = diff ? diff_open(session, req->req, json, (uint32_t)table, err, sizeof(err))
		     : watch_open(session, req->req, json, (uint32_t)table);
	if (!st->w) {
		reply_end(out, req->req, diff ? PS_E_ARGS : PS_E_INTERNAL, diff ? err : "out of memory");
		return ctl_stream_free(st);
	}
	if (!diff) {
		char text[96];
		if (table)
			snprintf(text, sizeof(text), "# watching table %u; interrupt to stop\n", (unsigned)table);
		else
			snprintf(text, sizeof(text), "# watching every table of fibd's; interrupt to stop\n");
		if (!json)
			reply_chunk(out, req->req, text, strlen(text));
	}
	return st;
}

/*
 * resync [table N]: dump the tables again (both families of N) and repair what
 * differs. A table whose first scan is still to come is left to it.
 */
static void
resync(struct ps_buf *out, const struct ps_ctl_request *req)
{
	int64_t id = table_arg(out, req, "resync");
	char text[128];
	unsigned n = 0;

	if (id < 0)
		return;
	if (!id) {
		sync_rescan_all();
		reply_end(out, req->req, PS_E_OK, "a rescan of every table is under way");
		return;
	}
	for (int i = 0; i < 2; i++) {
		struct rtable *t = table_get((uint32_t)id, i ? PS_FAM_V6 : PS_FAM_V4, false);
		if (t && sync_rescan_table(t))
			n++;
	}
	if (n)
		snprintf(text, sizeof(text), "a rescan of table %u is under way", (unsigned)id);
	else
		snprintf(text, sizeof(text), "fibd has not scanned table %u yet: nothing to rescan",
		    (unsigned)id);
	reply_end(out, req->req, n ? PS_E_OK : PS_E_ARGS, text);
}

/* Couple or decouple one (table, family). */
static void
set_coupled(struct rtable *t, bool coupled)
{
	if (t->decoupled == !coupled)
		return;
	t->decoupled = !coupled;
	log_info("ctl: table %u %s %s", t->id, family_name(t->family),
	    coupled ? "coupled: reconciling it with what clients want"
		    : "decoupled: fibd leaves it alone until couple");
	if (!coupled)
		return;
	nl_release_held(t);
	sync_rescan_table(t); /* the kernel may have changed meanwhile: repair what differs */
}

/*
 * couple [table N], decouple [table N]: decouple stops every write to the
 * table (route changes are still taken and wait); couple writes what waited
 * and rescans the table to repair what differs. Without N: every table,
 * including those made later (decouple) or from now on (couple). Both are kept
 * in the state file, so a restarted fibd stays away from decoupled tables.
 */
static void
couple(struct ps_buf *out, const struct ps_ctl_request *req, bool coupled)
{
	int64_t id = table_arg(out, req, coupled ? "couple" : "decouple");
	char text[320];
	unsigned n = 0;
	int saved;

	if (id < 0)
		return;
	if (!id) {
		table_decouple_new = !coupled;
		for (n = 0; n < table_count(); n++)
			set_coupled(table_at((uint16_t)n), coupled);
	} else {
		/* Both families; decouple makes them, so that feeds into them wait. */
		for (int i = 0; i < 2; i++) {
			struct rtable *t = table_get((uint32_t)id, i ? PS_FAM_V6 : PS_FAM_V4, !coupled);
			if (t) {
				set_coupled(t, coupled);
				n++;
			}
		}
	}
	sync_tables_changed();
	saved = state_save();
	if (id && !n)
		snprintf(text, sizeof(text), "fibd does not manage table %u", (unsigned)id);
	else if (id)
		snprintf(text, sizeof(text), "table %u %s", (unsigned)id,
		    coupled ? "coupled: fibd reconciles it now" : "decoupled: fibd leaves it alone");
	else
		snprintf(text, sizeof(text), "%s", coupled ? "every table coupled" :
		    "every table decoupled, and tables fibd makes from now on");
	if (saved < 0 && !(id && !n)) {
		/* A restart before the retry succeeds would forget it: say so. */
		size_t len = strlen(text);
		snprintf(text + len, sizeof(text) - len, "; the state file could not be written (%s), "
		    "so a restart now would not keep this; fibd retries", strerror(-saved));
	}
	reply_end(out, req->req, id && !n ? PS_E_ARGS : PS_E_OK, text);
}

/* ---- dispatch ---- */

enum cmd { C_STATUS, C_CLIENTS, C_TABLES, C_METRICS, C_SHOW_ROUTE, C_DUMP, C_DIFF, C_WATCH,
	C_RESYNC, C_COUPLE, C_DECOUPLE };

static const struct {
	const char *name;
	enum cmd cmd;
	bool changes_state; /* only for root, fibd's user and group, and the admin group */
} commands[] = {
	{ "status", C_STATUS, false }, { "clients", C_CLIENTS, false }, { "tables", C_TABLES, false },
	{ "metrics", C_METRICS, false }, { "show-route", C_SHOW_ROUTE, false }, { "dump", C_DUMP, false },
	{ "diff", C_DIFF, false }, { "watch", C_WATCH, false }, { "resync", C_RESYNC, true },
	{ "couple", C_COUPLE, true }, { "decouple", C_DECOUPLE, true },
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static int
command_index(const char *cmd)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (!strcmp(cmd, commands[i].name))
			return (int)i;
	return -1;
}

bool
ctl_changes_state(const char *cmd)
{
	int i = command_index(cmd);

	return i >= 0 && commands[i].changes_state;
}

struct ctl_stream *
ctl_handle(struct ps_buf *out, const struct ps_ctl_request *req, void *session)
{
	struct text t = { 0 };
	bool json = req->flags & PS_CTL_JSON;
	int i = command_index(req->cmd);
	char err[200];

	if (i < 0) {
		snprintf(err, sizeof(err), "no command '%s' (known:", req->cmd);
		for (size_t k = 0; k < N_COMMANDS; k++)
			snprintf(err + strlen(err), sizeof(err) - strlen(err), "%s %s", k ? "," : "",
			    commands[k].name);
		snprintf(err + strlen(err), sizeof(err) - strlen(err), ")");
		reply_end(out, req->req, PS_E_UNKNOWN_CMD, err);
		return NULL;
	}
	switch (commands[i].cmd) {
	case C_RESYNC:
		resync(out, req);
		return NULL;
	case C_COUPLE:
	case C_DECOUPLE:
		couple(out, req, commands[i].cmd == C_COUPLE);
		return NULL;
	case C_DUMP:
		return dump_start(out, req);
	case C_DIFF:
	case C_WATCH:
		return watch_start(out, req, session, commands[i].cmd == C_DIFF);
	case C_SHOW_ROUTE:
		if (show_route(&t, req, json, err, sizeof(err)) < 0) {
			free(t.p);
			reply_end(out, req->req, PS_E_ARGS, err);
			return NULL;
		}
		break;
	case C_STATUS:
	case C_CLIENTS:
	case C_TABLES:
	case C_METRICS:
		if (req->n_args) {
			snprintf(err, sizeof(err), "%s takes no arguments", req->cmd);
			reply_end(out, req->req, PS_E_ARGS, err);
			return NULL;
		}
		if (commands[i].cmd == C_CLIENTS)
			status_clients(&t, json);
		else if (commands[i].cmd == C_TABLES)
			status_tables(&t, json);
		else if (commands[i].cmd == C_METRICS)
			status_metrics(&t);
		else
			status_report(&t, json);
		break;
	}
	if (t.failed) {
		free(t.p);
		reply_end(out, req->req, PS_E_INTERNAL, "out of memory");
		return NULL;
	}
	reply_chunk(out, req->req, t.p, t.len);
	free(t.p);
	reply_end(out, req->req, PS_E_OK, NULL);
	return NULL;
}
