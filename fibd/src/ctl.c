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
#include "feed.h"
#include "health.h"
#include "learn.h"
#include "nl.h"
#include "slab.h"
#include "sync.h"
#include "table.h"

struct text {
	char *p;
	size_t len, cap;
	int failed;
};

__attribute__((format(printf, 2, 3))) static void
tprintf(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		size_t room = t->cap - t->len;
		va_start(ap, fmt);
		n = vsnprintf(t->p ? t->p + t->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->failed = 1;
			return;
		}
		if ((size_t)n < room) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = t->cap ? t->cap * 2 : 4096;
		while (cap - t->len <= (size_t)n)
			cap *= 2;
		char *np = realloc(t->p, cap);
		if (!np) {
			t->failed = 1;
			return;
		}
		t->p = np;
		t->cap = cap;
	}
}

static uint64_t started_ns;
static uint8_t protocol;

void
ctl_set_info(uint64_t start_ns, uint8_t proto)
{
	started_ns = start_ns;
	protocol = proto;
}

/* Every counter status reports, taken at one moment for both output forms. */
struct snap {
	struct sync_stats ss;
	struct nl_stats ns;
	struct health_stats hs;
	struct feed_stats fs;
	struct slab_stats sl[3];
	unsigned long long uptime_s;
};

static void
snap_take(struct snap *s)
{
	nl_get_stats(&s->ns);
	sync_get_stats(&s->ss);
	health_get(&s->hs);
	feed_get_stats(&s->fs);
	table_slab_stats(&s->sl[0], &s->sl[1], &s->sl[2]);
	s->uptime_s = (uv_hrtime() - started_ns) / 1000000000u;
}

static void
status_text(struct text *t, const struct snap *sn)
{
	const struct nl_stats ns = sn->ns;
	const struct health_stats hs = sn->hs;
	const struct feed_stats fs = sn->fs;
	struct learn_stats ls;
	const struct slab_stats *sl = sn->sl;
	struct owner_info oi;

	tprintf(t, "fibd %s, up %llu s, protocol %u\n", FIBD_VERSION, sn->uptime_s, protocol);
	tprintf(t, "sessions %u, clients %u\n", feed_session_count(), feed_owner_count());
	for (unsigned i = 0; feed_owner_at(i, &oi) == 0; i++) {
		char state[48];
		if (oi.connected)
			snprintf(state, sizeof(state), "%s", oi.in_feed ? "feeding" : "connected");
		else if (oi.stale_left_s)
			snprintf(state, sizeof(state), "stale, %llu s left",
			    (unsigned long long)oi.stale_left_s);
		else
			snprintf(state, sizeof(state), "%s", oi.persist ? "persisting" : "disconnected");
		tprintf(t, "  client %-20s %-20s routes %llu pending %llu generation %llu\n", oi.name,
		    state, (unsigned long long)oi.routes, (unsigned long long)oi.pending,
		    (unsigned long long)oi.generation);
	}
	tprintf(t, "tables\n");
	tprintf(t, "  %-10s %-6s %10s %10s %10s %8s %8s\n", "table", "family", "desired",
	    "installed", "pending", "failed", "waiting");
	for (unsigned i = 0; i < table_count(); i++) {
		struct rtable *rt = table_at((uint16_t)i);
		tprintf(t, "  %-10u %-6s %10llu %10llu %10llu %8llu %8llu\n", rt->id,
		    rt->family == PS_FAM_V4 ? "inet" : "inet6", (unsigned long long)rt->n_desired,
		    (unsigned long long)rt->n_installed, (unsigned long long)rt->n_pending,
		    (unsigned long long)rt->n_failed, (unsigned long long)rt->n_waiting);
	}
	tprintf(t, "netlink: %s nexthops; queued %llu, in flight %u/%u, parked %llu, batch %u "
		   "bytes, longest send %llu us\n",
	    ns.nh_objects ? "object" : "inline", (unsigned long long)ns.queued, ns.inflight,
	    ns.window, (unsigned long long)ns.parked, ns.batch_limit,
	    (unsigned long long)ns.send_max_us);
	tprintf(t, "  messages %llu in %llu batches (adds %llu, replaces %llu, deletes %llu), "
		   "errors %llu, retries %llu, send waits %llu\n",
	    (unsigned long long)ns.msgs_sent, (unsigned long long)ns.batches_sent,
	    (unsigned long long)ns.adds, (unsigned long long)ns.replaces,
	    (unsigned long long)ns.deletes, (unsigned long long)ns.errors,
	    (unsigned long long)ns.retries, (unsigned long long)ns.eagain);
	tprintf(t, "  monitor events %llu, overruns %llu; routes lost and written again %llu\n",
	    (unsigned long long)ns.monitor_events, (unsigned long long)ns.monitor_overruns,
	    (unsigned long long)ns.routes_lost);
	tprintf(t, "sync: dumps %llu started, %llu completed, %llu interrupted, %llu failed; "
		   "%llu rescans asked for by events; %llu routes adopted, %llu unclaimed ones pruned, "
		   "%llu found changed and rewritten\n",
	    (unsigned long long)sn->ss.dumps_started, (unsigned long long)sn->ss.dumps_completed,
	    (unsigned long long)sn->ss.dumps_interrupted, (unsigned long long)sn->ss.dumps_failed,
	    (unsigned long long)sn->ss.rescans_triggered, (unsigned long long)sn->ss.routes_adopted,
	    (unsigned long long)sn->ss.routes_pruned, (unsigned long long)sn->ss.routes_changed);
	learn_get_stats(&ls);
	tprintf(t, "learn: %llu LEARN messages sent, %llu foreign routes not expressible, "
		   "%llu notifications replayed after learn dumps, %llu overflows\n",
	    (unsigned long long)ls.sent, (unsigned long long)ls.skipped,
	    (unsigned long long)ls.replayed, (unsigned long long)ls.overflows);
	tprintf(t, "feed: messages %llu, routes %llu, withdraws %llu, conflicts %llu, "
		   "results sent %llu, sessions failed %llu\n",
	    (unsigned long long)fs.msgs_in, (unsigned long long)fs.routes_in,
	    (unsigned long long)fs.withdraws_in, (unsigned long long)fs.conflicts,
	    (unsigned long long)fs.status_sent, (unsigned long long)fs.sessions_failed);
	tprintf(t, "loop: lag p99 %.2f ms, max %.2f ms, longest iteration %.2f ms, longest callback "
		   "%.2f ms (%s) in the last minute;\n      all time: lag max %.2f ms, iteration %.2f ms, "
		   "callback %.2f ms (%s)\n",
	    hs.lag_p99_ms, hs.lag_max_ms, hs.busy_max_ms, hs.cb_max_ms,
	    hs.cb_max_name ? hs.cb_max_name : "-", hs.lag_max_all_ms, hs.busy_max_all_ms,
	    hs.cb_max_all_ms, hs.cb_max_all_name ? hs.cb_max_all_name : "-");
	for (int i = 0; i < 3; i++) {
		const struct slab_stats *s = &sl[i];
		tprintf(t, "slab %s: %llu live of %zu bytes, pages full %llu partial %llu empty %llu "
			   "released %llu, %llu KiB mapped, %llu KiB resident, cleanup calls %llu "
			   "visits %llu (max %llu)\n",
		    s->name, (unsigned long long)s->live, s->obj_size,
		    (unsigned long long)s->pages_full, (unsigned long long)s->pages_partial,
		    (unsigned long long)s->pages_empty, (unsigned long long)s->pages_released,
		    (unsigned long long)(s->bytes_mapped / 1024),
		    (unsigned long long)(s->bytes_resident / 1024),
		    (unsigned long long)s->cleanup_calls, (unsigned long long)s->cleanup_visits,
		    (unsigned long long)s->cleanup_visits_max);
	}
	tprintf(t, "route attributes: %llu sets, %llu bytes\n", (unsigned long long)rattr_count(),
	    (unsigned long long)rattr_bytes());
}

static void
json_slab(struct text *t, const struct slab_stats *s)
{
	tprintf(t,
	    "{\"name\":\"%s\",\"obj_size\":%zu,\"live\":%llu,\"pages_full\":%llu,"
	    "\"pages_partial\":%llu,\"pages_empty\":%llu,\"pages_released\":%llu,"
	    "\"bytes_mapped\":%llu,\"bytes_resident\":%llu,\"cleanup_calls\":%llu,"
	    "\"cleanup_visits\":%llu,\"cleanup_visits_max\":%llu}",
	    s->name, s->obj_size, (unsigned long long)s->live, (unsigned long long)s->pages_full,
	    (unsigned long long)s->pages_partial, (unsigned long long)s->pages_empty,
	    (unsigned long long)s->pages_released, (unsigned long long)s->bytes_mapped,
	    (unsigned long long)s->bytes_resident, (unsigned long long)s->cleanup_calls,
	    (unsigned long long)s->cleanup_visits, (unsigned long long)s->cleanup_visits_max);
}

/* Client names are printable ASCII without '"' or '\\' problems: escape those two. */
static void
json_str(struct text *t, const char *s)
{
	tprintf(t, "\"");
	for (; *s; s++)
		tprintf(t, (*s == '"' || *s == '\\') ? "\\%c" : "%c", *s);
	tprintf(t, "\"");
}

/* One metric's HELP and TYPE lines. */
static void
metric_head(struct text *t, const char *name, const char *type, const char *help)
{
	tprintf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
metric1(struct text *t, const char *name, const char *type, const char *help, double v)
{
	metric_head(t, name, type, help);
	tprintf(t, "%s %.17g\n", name, v);
}

/*
 * Prometheus text exposition (version 0.0.4): counters end in _total, times
 * are seconds, sizes bytes; labels table, family, client, slab. Also good as a
 * node_exporter textfile.
 */
static void
metrics_text(struct text *t, const struct snap *sn)
{
	const struct nl_stats *ns = &sn->ns;
	const struct sync_stats *ss = &sn->ss;
	const struct feed_stats *fs = &sn->fs;
	const struct health_stats *hs = &sn->hs;
	struct learn_stats ls;
	struct owner_info oi;
	uint64_t cum = 0;
	static const struct {
		const char *name, *help;
		size_t off;
	} tcols[] = {
		{ "fibd_routes_desired", "Routes clients want in the table", offsetof(struct rtable, n_desired) },
		{ "fibd_routes_installed", "Routes the kernel acknowledged", offsetof(struct rtable, n_installed) },
		{ "fibd_routes_pending", "Routes queued or in flight to the kernel", offsetof(struct rtable, n_pending) },
		{ "fibd_routes_failed", "Routes the kernel refused (retried)", offsetof(struct rtable, n_failed) },
		{ "fibd_routes_waiting", "Routes waiting for their next hop", offsetof(struct rtable, n_waiting) },
	};

	metric_head(t, "fibd_info", "gauge", "fibd's version and route protocol");
	tprintf(t, "fibd_info{version=\"%s\",protocol=\"%u\"} 1\n", FIBD_VERSION, protocol);
	metric1(t, "fibd_uptime_seconds", "gauge", "Seconds since fibd started", (double)sn->uptime_s);
	for (size_t c = 0; c < sizeof(tcols) / sizeof(tcols[0]); c++) {
		metric_head(t, tcols[c].name, "gauge", tcols[c].help);
		for (unsigned i = 0; i < table_count(); i++) {
			const struct rtable *rt = table_at((uint16_t)i);
			tprintf(t, "%s{table=\"%u\",family=\"%s\"} %llu\n", tcols[c].name, rt->id,
			    rt->family == PS_FAM_V4 ? "inet" : "inet6",
			    (unsigned long long)*(const uint64_t *)((const char *)rt + tcols[c].off));
		}
	}
	metric_head(t, "fibd_client_routes", "gauge", "Routes a client name holds");
	for (unsigned i = 0; feed_owner_at(i, &oi) == 0; i++) {
		tprintf(t, "fibd_client_routes{client=");
		json_str(t, oi.name);
		tprintf(t, "} %llu\n", (unsigned long long)oi.routes);
	}
	metric_head(t, "fibd_client_connected", "gauge", "1 if the client is connected");
	for (unsigned i = 0; feed_owner_at(i, &oi) == 0; i++) {
		tprintf(t, "fibd_client_connected{client=");
		json_str(t, oi.name);
		tprintf(t, "} %d\n", oi.connected ? 1 : 0);
	}
	metric1(t, "fibd_sessions", "gauge", "Open sessions on the socket", feed_session_count());

	metric_head(t, "fibd_route_programming_seconds", "histogram",
	    "From a route change's arrival to the kernel's acknowledgement");
	for (unsigned b = 0; b < NL_LAT_BUCKETS; b++) {
		cum += ns->lat_count[b];
		tprintf(t, "fibd_route_programming_seconds_bucket{le=\"%g\"} %llu\n", nl_lat_bounds[b],
		    (unsigned long long)cum);
	}
	tprintf(t, "fibd_route_programming_seconds_bucket{le=\"+Inf\"} %llu\n",
	    (unsigned long long)ns->lat_total);
	tprintf(t, "fibd_route_programming_seconds_sum %.6f\n", ns->lat_sum_s);
	tprintf(t, "fibd_route_programming_seconds_count %llu\n", (unsigned long long)ns->lat_total);

	metric1(t, "fibd_netlink_messages_total", "counter", "Netlink messages sent", (double)ns->msgs_sent);
	metric1(t, "fibd_netlink_batches_total", "counter", "Netlink sends (batches)", (double)ns->batches_sent);
	metric1(t, "fibd_netlink_adds_total", "counter", "Routes added", (double)ns->adds);
	metric1(t, "fibd_netlink_replaces_total", "counter", "Routes replaced", (double)ns->replaces);
	metric1(t, "fibd_netlink_deletes_total", "counter", "Routes deleted", (double)ns->deletes);
	metric1(t, "fibd_netlink_errors_total", "counter", "Writes the kernel refused", (double)ns->errors);
	metric1(t, "fibd_netlink_retries_total", "counter", "Writes retried", (double)ns->retries);
	metric1(t, "fibd_netlink_queued", "gauge", "Routes queued for the kernel", (double)ns->queued);
	metric1(t, "fibd_netlink_inflight", "gauge", "Messages awaiting their ACK", ns->inflight);
	metric1(t, "fibd_monitor_events_total", "counter", "Kernel notifications read", (double)ns->monitor_events);
	metric1(t, "fibd_monitor_overruns_total", "counter", "Times the monitor socket overran",
	    (double)ns->monitor_overruns);
	metric1(t, "fibd_routes_lost_total", "counter",
	    "Routes of fibd's found deleted or replaced by others, and written again", (double)ns->routes_lost);
	metric1(t, "fibd_dumps_started_total", "counter", "Table dumps started", (double)ss->dumps_started);
	metric1(t, "fibd_dumps_completed_total", "counter", "Table dumps complete and used",
	    (double)ss->dumps_completed);
	metric1(t, "fibd_dumps_interrupted_total", "counter",
	    "Dumps discarded: interrupted, or the table changed during them", (double)ss->dumps_interrupted);
	metric1(t, "fibd_dumps_failed_total", "counter", "Dumps discarded: errors, ENOBUFS, over the cap",
	    (double)ss->dumps_failed);
	metric1(t, "fibd_rescans_triggered_total", "counter", "Rescans asked for by link, address or overrun events",
	    (double)ss->rescans_triggered);
	metric1(t, "fibd_routes_adopted_total", "counter", "Routes of fibd's found in the kernel and adopted",
	    (double)ss->routes_adopted);
	metric1(t, "fibd_routes_pruned_total", "counter", "Adopted routes nobody claimed, withdrawn",
	    (double)ss->routes_pruned);
	metric1(t, "fibd_routes_changed_total", "counter", "Routes found changed by others and rewritten",
	    (double)ss->routes_changed);
	learn_get_stats(&ls);
	metric1(t, "fibd_learn_messages_total", "counter", "LEARN messages sent", (double)ls.sent);
	metric1(t, "fibd_feed_messages_total", "counter", "Messages read from clients", (double)fs->msgs_in);
	metric1(t, "fibd_feed_routes_total", "counter", "ROUTE messages read", (double)fs->routes_in);
	metric1(t, "fibd_feed_withdraws_total", "counter", "WITHDRAW messages read", (double)fs->withdraws_in);
	metric1(t, "fibd_feed_conflicts_total", "counter", "Routes refused: key owned by another client",
	    (double)fs->conflicts);
	metric1(t, "fibd_sessions_failed_total", "counter", "Sessions closed after a protocol error",
	    (double)fs->sessions_failed);
	metric1(t, "fibd_loop_lag_p99_seconds", "gauge", "Loop lag p99 over the last minute", hs->lag_p99_ms / 1000);
	metric1(t, "fibd_loop_lag_max_seconds", "gauge", "Loop lag max over the last minute", hs->lag_max_ms / 1000);
	metric1(t, "fibd_loop_callback_max_seconds", "gauge", "Longest callback over the last minute",
	    hs->cb_max_ms / 1000);
	metric_head(t, "fibd_slab_bytes_resident", "gauge", "Memory of fibd's slabs, resident (upper bound)");
	for (int i = 0; i < 3; i++)
		tprintf(t, "fibd_slab_bytes_resident{slab=\"%s\"} %llu\n", sn->sl[i].name,
		    (unsigned long long)sn->sl[i].bytes_resident);
	metric_head(t, "fibd_slab_objects", "gauge", "Live objects in fibd's slabs");
	for (int i = 0; i < 3; i++)
		tprintf(t, "fibd_slab_objects{slab=\"%s\"} %llu\n", sn->sl[i].name,
		    (unsigned long long)sn->sl[i].live);
}

static void
status_json(struct text *t, const struct snap *sn)
{
	const struct nl_stats ns = sn->ns;
	const struct health_stats hs = sn->hs;
	const struct feed_stats fs = sn->fs;
	struct learn_stats ls;
	const struct slab_stats *sl = sn->sl;
	struct owner_info oi;

	tprintf(t, "{\"version\":\"%s\",\"uptime_s\":%llu,\"protocol\":%u,\"sessions\":%u,",
	    FIBD_VERSION, sn->uptime_s, protocol, feed_session_count());
	tprintf(t, "\"clients\":[");
	for (unsigned i = 0; feed_owner_at(i, &oi) == 0; i++) {
		tprintf(t, "%s{\"name\":", i ? "," : "");
		json_str(t, oi.name);
		tprintf(t, ",\"connected\":%s,\"routes\":%llu,\"pending\":%llu,\"generation\":%llu,"
			   "\"feeding\":%s,\"persist\":%s,\"stale_left_s\":%llu,\"stale_routes\":%llu}",
		    oi.connected ? "true" : "false", (unsigned long long)oi.routes,
		    (unsigned long long)oi.pending, (unsigned long long)oi.generation,
		    oi.in_feed ? "true" : "false", oi.persist ? "true" : "false",
		    (unsigned long long)oi.stale_left_s,
		    (unsigned long long)(oi.stale_left_s ? oi.routes : 0));
	}
	tprintf(t, "],\"tables\":[");
	for (unsigned i = 0; i < table_count(); i++) {
		struct rtable *rt = table_at((uint16_t)i);
		tprintf(t,
		    "%s{\"table\":%u,\"family\":\"%s\",\"entries\":%llu,\"desired\":%llu,"
		    "\"installed\":%llu,\"pending\":%llu,\"failed\":%llu,\"waiting\":%llu}",
		    i ? "," : "", rt->id, rt->family == PS_FAM_V4 ? "inet" : "inet6",
		    (unsigned long long)rt->n_routes, (unsigned long long)rt->n_desired,
		    (unsigned long long)rt->n_installed, (unsigned long long)rt->n_pending,
		    (unsigned long long)rt->n_failed, (unsigned long long)rt->n_waiting);
	}
	tprintf(t,
	    "],\"netlink\":{\"queued\":%llu,\"inflight\":%u,\"window\":%u,\"parked\":%llu,"
	    "\"messages\":%llu,\"batches\":%llu,\"adds\":%llu,\"replaces\":%llu,\"deletes\":%llu,"
	    "\"errors\":%llu,\"retries\":%llu,\"send_waits\":%llu,\"monitor_events\":%llu,"
	    "\"monitor_overruns\":%llu,\"routes_lost\":%llu,\"batch_limit\":%u,\"send_max_us\":%llu,"
	    "\"nexthop_objects\":%s},",
	    (unsigned long long)ns.queued, ns.inflight, ns.window, (unsigned long long)ns.parked,
	    (unsigned long long)ns.msgs_sent, (unsigned long long)ns.batches_sent,
	    (unsigned long long)ns.adds, (unsigned long long)ns.replaces,
	    (unsigned long long)ns.deletes, (unsigned long long)ns.errors,
	    (unsigned long long)ns.retries, (unsigned long long)ns.eagain,
	    (unsigned long long)ns.monitor_events, (unsigned long long)ns.monitor_overruns,
	    (unsigned long long)ns.routes_lost, ns.batch_limit, (unsigned long long)ns.send_max_us,
	    ns.nh_objects ? "true" : "false");
	tprintf(t,
	    "\"sync\":{\"dumps_started\":%llu,\"dumps_completed\":%llu,\"dumps_interrupted\":%llu,"
	    "\"dumps_failed\":%llu,\"rescans_triggered\":%llu,\"routes_adopted\":%llu,"
	    "\"routes_pruned\":%llu,\"routes_changed\":%llu},",
	    (unsigned long long)sn->ss.dumps_started, (unsigned long long)sn->ss.dumps_completed,
	    (unsigned long long)sn->ss.dumps_interrupted, (unsigned long long)sn->ss.dumps_failed,
	    (unsigned long long)sn->ss.rescans_triggered, (unsigned long long)sn->ss.routes_adopted,
	    (unsigned long long)sn->ss.routes_pruned, (unsigned long long)sn->ss.routes_changed);
	learn_get_stats(&ls);
	tprintf(t, "\"learn\":{\"sent\":%llu,\"skipped\":%llu,\"replayed\":%llu,\"overflows\":%llu},",
	    (unsigned long long)ls.sent, (unsigned long long)ls.skipped,
	    (unsigned long long)ls.replayed, (unsigned long long)ls.overflows);
	tprintf(t,
	    "\"feed\":{\"messages\":%llu,\"routes\":%llu,\"withdraws\":%llu,\"conflicts\":%llu,"
	    "\"results_sent\":%llu,\"sessions_failed\":%llu},",
	    (unsigned long long)fs.msgs_in, (unsigned long long)fs.routes_in,
	    (unsigned long long)fs.withdraws_in, (unsigned long long)fs.conflicts,
	    (unsigned long long)fs.status_sent, (unsigned long long)fs.sessions_failed);
	tprintf(t,
	    "\"loop\":{\"lag_p99_ms\":%.3f,\"lag_max_ms\":%.3f,\"iteration_max_ms\":%.3f,"
	    "\"callback_max_ms\":%.3f,\"callback_max\":\"%s\",\"lag_max_all_ms\":%.3f,"
	    "\"iteration_max_all_ms\":%.3f,\"callback_max_all_ms\":%.3f,\"callback_max_all\":\"%s\"},",
	    hs.lag_p99_ms, hs.lag_max_ms, hs.busy_max_ms, hs.cb_max_ms,
	    hs.cb_max_name ? hs.cb_max_name : "", hs.lag_max_all_ms, hs.busy_max_all_ms,
	    hs.cb_max_all_ms, hs.cb_max_all_name ? hs.cb_max_all_name : "");
	tprintf(t, "\"slabs\":[");
	for (int i = 0; i < 3; i++) {
		tprintf(t, i ? "," : "");
		json_slab(t, &sl[i]);
	}
	tprintf(t, "],\"route_attributes\":{\"sets\":%llu,\"bytes\":%llu}}\n",
	    (unsigned long long)rattr_count(), (unsigned long long)rattr_bytes());
}

static void
send_end(struct ps_buf *out, uint32_t req, int code, const char *text)
{
	struct ps_msg m;

	memset(&m, 0, sizeof(m));
	m.type = PS_CTL_END;
	m.u.ctl_end.req = req;
	m.u.ctl_end.code = (uint16_t)code;
	m.u.ctl_end.text = ps_str_from(text);
	ps_enc_msg(out, &m, NULL);
}


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

static void
put_addr(struct text *t, uint8_t fam, const union ps_addr *a)
{
	char buf[INET6_ADDRSTRLEN];

	inet_ntop(fam == PS_FAM_V4 ? AF_INET : AF_INET6, a->b, buf, sizeof(buf));
	tprintf(t, "%s", buf);
}

static const char *
type_name(uint8_t type)
{
	switch (type) {
	case PS_RT_UNICAST: return "unicast";
	case PS_RT_BLACKHOLE: return "blackhole";
	case PS_RT_UNREACHABLE: return "unreachable";
	case PS_RT_PROHIBIT: return "prohibit";
	default: return "?";
	}
}

/*
 * A route's attributes in ip route syntax, as they follow the prefix (the
 * type goes before it there, so it is left out), each with a space before.
 */
static void
put_attrs(struct text *t, const struct rattr *a)
{
	if (a->type == PS_RT_UNICAST) {
		for (unsigned i = 0; i < a->n_nh; i++) {
			const struct rnh *h = &a->nh[i];
			if (a->n_nh > 1)
				tprintf(t, " nexthop");
			if (h->gw_family) {
				tprintf(t, " via ");
				put_addr(t, h->gw_family, &h->gw);
			}
			if (h->ifname[0])
				tprintf(t, " dev %s", h->ifname);
			if (h->flags & PS_NH_ONLINK)
				tprintf(t, " onlink");
			if (a->n_nh > 1)
				tprintf(t, " weight %u", h->weight);
		}
	}
	if (a->has & PS_RA_PREFSRC) {
		tprintf(t, " src ");
		put_addr(t, a->family, &a->prefsrc);
	}
	if (a->has & PS_RA_REALM)
		tprintf(t, " realm %u", a->realm);
	if (a->has & PS_RA_SCOPE)
		tprintf(t, " scope %u", a->scope);
	if (a->has & PS_RA_MTU)
		tprintf(t, " mtu %u", a->mtu);
}

/* {"type": ..., "route": "via ... dev ..."} as one JSON object, or null. */
static void
put_attrs_json(struct text *t, const struct rattr *a)
{
	size_t at;

	if (!a) {
		tprintf(t, "null");
		return;
	}
	tprintf(t, "{\"type\":\"%s\",\"route\":\"", type_name(a->type));
	at = t->len;
	put_attrs(t, a);
	if (!t->failed && t->len > at && t->p[at] == ' ') { /* no space before the first word */
		memmove(t->p + at, t->p + at + 1, t->len - at - 1);
		t->len--;
	}
	tprintf(t, "\"}");
}

/*
 * Attributes fibd can show: not the marker of a route adopted from the kernel
 * whose attributes it could not read (sync.c), which has no type.
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
	if (r->want && r->have == r->want)
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
	const char *owner = r->owner == OWNER_NONE ? NULL : feed_owner_name(r->owner);
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
		tprintf(t, "%s{\"prefix\":\"", sh->n ? "," : "");
		put_addr(t, rt->family, &p);
		tprintf(t, "/%u\",\"table\":%u,\"family\":\"%s\",\"metric\":%u,\"tos\":%u,\"client\":",
		    route_plen(r), rt->id, rt->family == PS_FAM_V4 ? "inet" : "inet6", r->metric, r->tos);
		if (owner)
			json_str(t, owner);
		else
			tprintf(t, "null");
		tprintf(t, ",\"desired\":");
		put_attrs_json(t, r->want);
		tprintf(t, ",\"kernel\":");
		if (attrs_known(r->have))
			put_attrs_json(t, r->have);
		else
			tprintf(t, r->have ? "\"(adopted, not read)\"" : "null");
		tprintf(t, ",\"state\":\"%s\",\"errno\":%u,\"error\":", state, r->err);
		if (r->err || ktext)
			json_str(t, ktext ? ktext : strerror(r->err));
		else
			tprintf(t, "null");
		tprintf(t, sh->plain ? "}\n" : "}");
	} else {
		if (r->want && r->want->type != PS_RT_UNICAST)
			tprintf(t, "%s ", type_name(r->want->type));
		put_addr(t, rt->family, &p);
		tprintf(t, "/%u", route_plen(r));
		if (r->want)
			put_attrs(t, r->want);
		tprintf(t, " table %u metric %u", rt->id, r->metric);
		if (r->tos)
			tprintf(t, " tos %u", r->tos);
		if (sh->plain) {
			tprintf(t, "\n");
			sh->n++;
			return 0;
		}
		tprintf(t, "  # %s, client %s", state, owner ? owner : "(none)");
		if (r->have != r->want && attrs_known(r->have)) {
			tprintf(t, "; the kernel has:");
			put_attrs(t, r->have);
		}
		if (r->err || ktext)
			tprintf(t, "; %s%s%s", strerror(r->err), ktext ? ": " : "", ktext ? ktext : "");
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
			for (; r && !sh.cut; r = r->next)
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

#define DUMP_PART_BYTES (8 * 1024) /* text per part: one CTL_CHUNK, then wait for room; larger parts slowed other clients (status p99 67 ms at 128 KiB with four dumps, 5 ms at 8 KiB) */

struct ctl_stream {
	uint32_t req;
	bool json;
	bool have_table;
	uint32_t table;
	uint8_t family;     /* 0: both */
	unsigned tidx;      /* the table being dumped, index */
	bool resume;        /* a cursor in it: after/after_len */
	union ps_addr after;
	uint8_t after_len;
	uint64_t n;
	bool opened;        /* JSON: the array's '[' is out */
};

struct dump_ctx {
	struct ctl_stream *st;
	struct show sh;
	const struct tnode *last;
	struct route *stop_at;
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
	if (d->sh.t->len >= DUMP_PART_BYTES && r->node != d->last) {
		d->stop_at = r;
		return 1;
	}
	d->last = r->node;
	route_prefix(r, &d->st->after);
	d->st->after_len = route_plen(r);
	d->st->resume = true;
	show_one(r, &d->sh);
	d->st->n++;
	return 0;
}

static void
send_chunk(struct ps_buf *out, uint32_t req, const struct text *t)
{
	struct ps_msg m;

	memset(&m, 0, sizeof(m));
	m.type = PS_CTL_CHUNK;
	m.u.ctl_chunk.req = req;
	m.u.ctl_chunk.data.ptr = t->p;
	m.u.ctl_chunk.data.len = (uint32_t)t->len;
	ps_enc_msg(out, &m, NULL);
}

bool
ctl_stream_more(struct ctl_stream *st, struct ps_buf *out)
{
	struct text t = { 0 };
	struct dump_ctx d = { .st = st, .sh = { .t = &t, .json = st->json, .plain = true,
					     .only_plen = 0xff, .n = st->n } };

	if (st->json && !st->opened) {
		tprintf(&t, "[\n");
		st->opened = true;
	}
	while (st->tidx < table_count() && t.len < DUMP_PART_BYTES && !t.failed) {
		struct rtable *rt = table_at((uint16_t)st->tidx);
		if ((st->have_table && rt->id != st->table) || (st->family && rt->family != st->family) ||
		    table_walk_after(rt, st->resume ? &st->after : NULL, st->after_len, dump_one, &d) == 0) {
			st->tidx++;
			st->resume = false;
			d.last = NULL;
		}
		d.sh.n = st->n;
	}
	if (t.failed) {
		free(t.p);
		send_end(out, st->req, PS_E_INTERNAL, "out of memory");
		free(st);
		return true;
	}
	if (st->tidx == table_count() && st->json)
		tprintf(&t, "]\n");
	if (t.len)
		send_chunk(out, st->req, &t);
	free(t.p);
	if (st->tidx < table_count())
		return false;
	/* No closing text: the output is data (feed takes it back), nothing else. */
	send_end(out, st->req, PS_E_OK, NULL);
	free(st);
	return true;
}

struct ctl_stream *
ctl_stream_free(struct ctl_stream *st)
{
	free(st);
	return NULL;
}

/*
 * dump [table N] [family 4|6] [format text|json]: every route clients want,
 * table by table in prefix order, a part of about DUMP_PART_BYTES at a time,
 * the next part only once the session has sent the last. A prefix is written
 * whole, and at most once: the cursor is the last prefix written, so a route
 * added behind it during the dump is not in it, one removed ahead of it is not
 * either, and one changed ahead of it shows as it is when its part is made.
 */
static struct ctl_stream *
dump_start(struct ps_buf *out, const struct ps_ctl_request *req)
{
	struct ctl_stream *st = calloc(1, sizeof(*st));
	char key[16], val[32], err[96];

	if (!st) {
		send_end(out, req->req, PS_E_INTERNAL, "out of memory");
		return NULL;
	}
	st->req = req->req;
	st->json = req->flags & PS_CTL_JSON;
	if (req->n_args % 2) {
		send_end(out, req->req, PS_E_ARGS, "dump takes pairs: table N, family 4|6, format text|json");
		return ctl_stream_free(st);
	}
	for (unsigned i = 0; i < req->n_args; i += 2) {
		arg_pair(req, i, key, sizeof(key), val, sizeof(val));
		if (!strcmp(key, "table")) {
			if (!parse_table(val, &st->table, err, sizeof(err))) {
				send_end(out, req->req, PS_E_ARGS, err);
				return ctl_stream_free(st);
			}
			st->have_table = true;
		} else if (!strcmp(key, "family") && (!strcmp(val, "4") || !strcmp(val, "6"))) {
			st->family = val[0] == '4' ? PS_FAM_V4 : PS_FAM_V6;
		} else if (!strcmp(key, "format") && (!strcmp(val, "text") || !strcmp(val, "json"))) {
			st->json = !strcmp(val, "json");
		} else {
			send_end(out, req->req, PS_E_ARGS, "dump takes table N, family 4|6, format text|json");
			return ctl_stream_free(st);
		}
	}
	if (ctl_stream_more(st, out))
		return NULL;
	return st;
}

/*
 * resync [table N]: dump the tables again (both families of N) and repair what
 * differs. A table whose first scan is still to come is left to it.
 */
static void
resync(struct ps_buf *out, const struct ps_ctl_request *req)
{
	char text[128], key[16], val[48];
	uint32_t id;
	unsigned n = 0;

	if (!req->n_args) {
		sync_rescan_all();
		send_end(out, req->req, PS_E_OK, "a rescan of every table is under way");
		return;
	}
	if (req->n_args != 2 || req->args[0].len != 5 || memcmp(req->args[0].ptr, "table", 5)) {
		send_end(out, req->req, PS_E_ARGS, "usage: resync [table N]");
		return;
	}
	arg_pair(req, 0, key, sizeof(key), val, sizeof(val));
	if (!parse_table(val, &id, text, sizeof(text))) {
		send_end(out, req->req, PS_E_ARGS, text);
		return;
	}
	for (int i = 0; i < 2; i++) {
		struct rtable *t = table_get(id, i ? PS_FAM_V6 : PS_FAM_V4, false);
		if (t && sync_rescan_table(t))
			n++;
	}
	if (n)
		snprintf(text, sizeof(text), "a rescan of table %u is under way", id);
	else
		snprintf(text, sizeof(text), "fibd has not scanned table %u yet: nothing to rescan", id);
	send_end(out, req->req, n ? PS_E_OK : PS_E_ARGS, text);
}

struct ctl_stream *
ctl_handle(struct ps_buf *out, const struct ps_ctl_request *req)
{
	struct text t = { 0 };
	struct snap sn;
	struct ps_msg m;

	if (!strcmp(req->cmd, "resync")) {
		resync(out, req);
		return NULL;
	}
	if (!strcmp(req->cmd, "dump"))
		return dump_start(out, req);
	if (strcmp(req->cmd, "status") && strcmp(req->cmd, "metrics") && strcmp(req->cmd, "show-route")) {
		char text[96];
		snprintf(text, sizeof(text), "no command '%s' (known: status, metrics, show-route, resync)",
		    req->cmd);
		send_end(out, req->req, PS_E_UNKNOWN_CMD, text);
		return NULL;
	}
	if (req->n_args && strcmp(req->cmd, "show-route")) {
		send_end(out, req->req, PS_E_ARGS, "status and metrics take no arguments");
		return NULL;
	}
	snap_take(&sn);
	if (!strcmp(req->cmd, "show-route")) {
		char err[160];
		if (show_route(&t, req, req->flags & PS_CTL_JSON, err, sizeof(err)) < 0) {
			free(t.p);
			send_end(out, req->req, PS_E_ARGS, err);
			return NULL;
		}
	} else if (!strcmp(req->cmd, "metrics"))
		metrics_text(&t, &sn);
	else if (req->flags & PS_CTL_JSON)
		status_json(&t, &sn);
	else
		status_text(&t, &sn);
	if (t.failed) {
		free(t.p);
		send_end(out, req->req, PS_E_INTERNAL, "out of memory");
		return NULL;
	}
	for (size_t off = 0; off < t.len; off += PS_CHUNK_MAX) {
		size_t n = t.len - off < PS_CHUNK_MAX ? t.len - off : PS_CHUNK_MAX;
		m.type = PS_CTL_CHUNK;
		m.u.ctl_chunk.req = req->req;
		m.u.ctl_chunk.data.ptr = t.p + off;
		m.u.ctl_chunk.data.len = (uint32_t)n;
		ps_enc_msg(out, &m, NULL);
	}
	free(t.p);
	send_end(out, req->req, PS_E_OK, NULL);
	return NULL;
}
