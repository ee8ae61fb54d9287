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
#include "state.h"
#include "sync.h"
#include "table.h"
#include "watch.h"

static uint64_t started_ns;
static uint8_t protocol;

static void (*get_sessions)(struct session_stats *ret);

void
ctl_set_sessions(void (*get)(struct session_stats *ret))
{
	get_sessions = get;
}

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
	struct mon_stats ms;
	struct health_stats hs;
	struct session_stats fs;
	struct owner_stats os;
	struct slab_stats sl[3];
	unsigned long long uptime_s;
};

static void
snap_take(struct snap *s)
{
	nl_get_stats(&s->ns);
	mon_get_stats(&s->ms);
	sync_get_stats(&s->ss);
	health_get(&s->hs);
	memset(&s->fs, 0, sizeof(s->fs));
	if (get_sessions)
		get_sessions(&s->fs);
	owner_get_stats(&s->os);
	table_slab_stats(&s->sl[0], &s->sl[1], &s->sl[2]);
	s->uptime_s = (uv_hrtime() - started_ns) / 1000000000u;
}

/* A client's state in words: feeding, connected, stale (seconds left), persisting, disconnected. */
static const char *
client_state(const struct owner_info *oi, char *buf, size_t len)
{
	if (oi->connected)
		snprintf(buf, len, "%s", oi->in_feed ? "feeding" : "connected");
	else if (oi->stale_left_s)
		snprintf(buf, len, "stale, %llu s left", (unsigned long long)oi->stale_left_s);
	else
		snprintf(buf, len, "%s", oi->persist ? "persisting" : "disconnected");
	return buf;
}

static void
status_text(struct text *t, const struct snap *sn)
{
	const struct nl_stats ns = sn->ns;
	const struct health_stats hs = sn->hs;
	const struct session_stats fs = sn->fs;
	const struct owner_stats os = sn->os;
	struct learn_stats ls;
	const struct slab_stats *sl = sn->sl;
	struct owner_info oi;

	tprintf(t, "fibd %s, up %llu s, protocol %u\n", FIBD_VERSION, sn->uptime_s, protocol);
	tprintf(t, "sessions %u, clients %u\n", sn->fs.open, owner_count());
	for (unsigned i = 0; owner_info_at(i, &oi) == 0; i++) {
		char state[48];
		tprintf(t, "  client %-20s %-20s routes %llu pending %llu generation %llu\n", oi.name,
		    client_state(&oi, state, sizeof(state)), (unsigned long long)oi.routes, (unsigned long long)oi.pending,
		    (unsigned long long)oi.generation);
	}
	tprintf(t, "tables\n");
	tprintf(t, "  %-10s %-6s %10s %10s %10s %8s %8s\n", "table", "family", "desired",
	    "installed", "pending", "failed", "waiting");
	for (unsigned i = 0; i < table_count(); i++) {
		struct rtable *rt = table_at((uint16_t)i);
		tprintf(t, "  %-10u %-6s %10llu %10llu %10llu %8llu %8llu\n", rt->id,
		    family_name(rt->family), (unsigned long long)rt->n_desired,
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
	    (unsigned long long)sn->ms.events, (unsigned long long)sn->ms.overruns,
	    (unsigned long long)ns.routes_lost);
	tprintf(t, "sync: dumps %llu started, %llu completed, %llu interrupted, %llu failed; "
		   "%llu rescans asked for by events; %llu routes adopted, %llu unclaimed ones pruned, "
		   "%llu found changed and rewritten; %llu notifications replayed after scans, "
		   "%llu overflows; %llu IPv6 dumps used unsure\n",
	    (unsigned long long)sn->ss.dumps_started, (unsigned long long)sn->ss.dumps_completed,
	    (unsigned long long)sn->ss.dumps_interrupted, (unsigned long long)sn->ss.dumps_failed,
	    (unsigned long long)sn->ss.rescans_triggered, (unsigned long long)sn->ss.routes_adopted,
	    (unsigned long long)sn->ss.routes_pruned, (unsigned long long)sn->ss.routes_changed,
	    (unsigned long long)sn->ss.notifications_replayed, (unsigned long long)sn->ss.keep_overflows,
	    (unsigned long long)sn->ss.dumps_unsure);
	learn_get_stats(&ls);
	tprintf(t, "learn: %llu LEARN messages sent, %llu foreign routes not expressible, "
		   "%llu notifications replayed after learn dumps, %llu overflows\n",
	    (unsigned long long)ls.sent, (unsigned long long)ls.skipped,
	    (unsigned long long)ls.replayed, (unsigned long long)ls.overflows);
	tprintf(t, "feed: messages %llu, routes %llu, withdraws %llu, conflicts %llu, "
		   "results sent %llu, sessions failed %llu, refused %llu\n",
	    (unsigned long long)fs.msgs_in, (unsigned long long)os.routes_in,
	    (unsigned long long)os.withdraws_in, (unsigned long long)os.conflicts,
	    (unsigned long long)fs.status_sent, (unsigned long long)fs.failed,
	    (unsigned long long)fs.refused);
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
	const struct session_stats *fs = &sn->fs;
	const struct owner_stats *os = &sn->os;
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
			    family_name(rt->family),
			    (unsigned long long)*(const uint64_t *)((const char *)rt + tcols[c].off));
		}
	}
	metric_head(t, "fibd_client_routes", "gauge", "Routes a client name holds");
	for (unsigned i = 0; owner_info_at(i, &oi) == 0; i++) {
		tprintf(t, "fibd_client_routes{client=");
		json_str(t, oi.name);
		tprintf(t, "} %llu\n", (unsigned long long)oi.routes);
	}
	metric_head(t, "fibd_client_connected", "gauge", "1 if the client is connected");
	for (unsigned i = 0; owner_info_at(i, &oi) == 0; i++) {
		tprintf(t, "fibd_client_connected{client=");
		json_str(t, oi.name);
		tprintf(t, "} %d\n", oi.connected ? 1 : 0);
	}
	metric1(t, "fibd_sessions", "gauge", "Open sessions on the socket", sn->fs.open);

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
	metric1(t, "fibd_monitor_events_total", "counter", "Kernel notifications read", (double)sn->ms.events);
	metric1(t, "fibd_monitor_overruns_total", "counter", "Times the monitor socket overran",
	    (double)sn->ms.overruns);
	metric1(t, "fibd_routes_lost_total", "counter",
	    "Routes of fibd's found deleted or replaced by others, and written again", (double)ns->routes_lost);
	metric1(t, "fibd_dumps_started_total", "counter", "Table dumps started", (double)ss->dumps_started);
	metric1(t, "fibd_dumps_completed_total", "counter", "Table dumps complete and used",
	    (double)ss->dumps_completed);
	metric1(t, "fibd_dumps_interrupted_total", "counter",
	    "Dumps discarded: interrupted, or an IPv6 table changed during them", (double)ss->dumps_interrupted);
	metric1(t, "fibd_dumps_failed_total", "counter",
	    "Dumps discarded: errors, ENOBUFS, over the cap, monitor overruns, too many notifications",
	    (double)ss->dumps_failed);
	metric1(t, "fibd_rescans_triggered_total", "counter", "Rescans asked for by link, address or overrun events",
	    (double)ss->rescans_triggered);
	metric1(t, "fibd_routes_adopted_total", "counter", "Routes of fibd's found in the kernel and adopted",
	    (double)ss->routes_adopted);
	metric1(t, "fibd_routes_pruned_total", "counter", "Adopted routes nobody claimed, withdrawn",
	    (double)ss->routes_pruned);
	metric1(t, "fibd_routes_changed_total", "counter", "Routes found changed by others and rewritten",
	    (double)ss->routes_changed);
	metric1(t, "fibd_scan_notifications_replayed_total", "counter",
	    "Notifications kept during a scan and replayed on its snapshot", (double)ss->notifications_replayed);
	metric1(t, "fibd_scan_keep_overflows_total", "counter",
	    "Scans taken again: too many notifications came during them", (double)ss->keep_overflows);
	metric1(t, "fibd_dumps_unsure_total", "counter",
	    "IPv6 dumps used although others changed the table during them (absences not trusted)",
	    (double)ss->dumps_unsure);
	learn_get_stats(&ls);
	metric1(t, "fibd_learn_messages_total", "counter", "LEARN messages sent", (double)ls.sent);
	metric1(t, "fibd_feed_messages_total", "counter", "Messages read from clients", (double)fs->msgs_in);
	metric1(t, "fibd_feed_routes_total", "counter", "ROUTE messages read", (double)os->routes_in);
	metric1(t, "fibd_feed_withdraws_total", "counter", "WITHDRAW messages read", (double)os->withdraws_in);
	metric1(t, "fibd_feed_conflicts_total", "counter", "Routes refused: key owned by another client",
	    (double)os->conflicts);
	metric1(t, "fibd_sessions_failed_total", "counter", "Sessions closed after a protocol error",
	    (double)fs->failed);
	metric1(t, "fibd_sessions_refused_total", "counter", "Connections closed at once: no memory for them",
	    (double)fs->refused);
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
	const struct session_stats fs = sn->fs;
	const struct owner_stats os = sn->os;
	struct learn_stats ls;
	const struct slab_stats *sl = sn->sl;
	struct owner_info oi;

	tprintf(t, "{\"version\":\"%s\",\"uptime_s\":%llu,\"protocol\":%u,\"sessions\":%u,",
	    FIBD_VERSION, sn->uptime_s, protocol, sn->fs.open);
	tprintf(t, "\"clients\":[");
	for (unsigned i = 0; owner_info_at(i, &oi) == 0; i++) {
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
		    i ? "," : "", rt->id, family_name(rt->family),
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
	    (unsigned long long)sn->ms.events, (unsigned long long)sn->ms.overruns,
	    (unsigned long long)ns.routes_lost, ns.batch_limit, (unsigned long long)ns.send_max_us,
	    ns.nh_objects ? "true" : "false");
	tprintf(t,
	    "\"sync\":{\"dumps_started\":%llu,\"dumps_completed\":%llu,\"dumps_interrupted\":%llu,"
	    "\"dumps_failed\":%llu,\"rescans_triggered\":%llu,\"routes_adopted\":%llu,"
	    "\"routes_pruned\":%llu,\"routes_changed\":%llu,\"notifications_replayed\":%llu,"
	    "\"keep_overflows\":%llu,\"dumps_unsure\":%llu},",
	    (unsigned long long)sn->ss.dumps_started, (unsigned long long)sn->ss.dumps_completed,
	    (unsigned long long)sn->ss.dumps_interrupted, (unsigned long long)sn->ss.dumps_failed,
	    (unsigned long long)sn->ss.rescans_triggered, (unsigned long long)sn->ss.routes_adopted,
	    (unsigned long long)sn->ss.routes_pruned, (unsigned long long)sn->ss.routes_changed,
	    (unsigned long long)sn->ss.notifications_replayed, (unsigned long long)sn->ss.keep_overflows,
	    (unsigned long long)sn->ss.dumps_unsure);
	learn_get_stats(&ls);
	tprintf(t, "\"learn\":{\"sent\":%llu,\"skipped\":%llu,\"replayed\":%llu,\"overflows\":%llu},",
	    (unsigned long long)ls.sent, (unsigned long long)ls.skipped,
	    (unsigned long long)ls.replayed, (unsigned long long)ls.overflows);
	tprintf(t,
	    "\"feed\":{\"messages\":%llu,\"routes\":%llu,\"withdraws\":%llu,\"conflicts\":%llu,"
	    "\"results_sent\":%llu,\"sessions_failed\":%llu,\"sessions_refused\":%llu},",
	    (unsigned long long)fs.msgs_in, (unsigned long long)os.routes_in,
	    (unsigned long long)os.withdraws_in, (unsigned long long)os.conflicts,
	    (unsigned long long)fs.status_sent, (unsigned long long)fs.failed,
	    (unsigned long long)fs.refused);
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
	if (r->want && rattr_fulfils(r->have, r->want))
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
		put_attrs_json(t, r->want);
		tprintf(t, ",\"kernel\":");
		if (attrs_known(r->have))
			put_attrs_json(t, r->have);
		else
			tprintf(t, r->have ? "\"(adopted, not read)\"" : "null");
		tprintf(t, ",\"state\":\"%s\",\"errno\":%u,\"error\":", state, r->err);
		put_error_json(t, r->err, ktext);
		tprintf(t, sh->plain ? "}\n" : "}");
	} else {
		put_route(t, rt->family, &p, route_plen(r), r->want, rt->id, r->metric, r->tos);
		if (sh->plain) {
			tprintf(t, "\n");
			sh->n++;
			return 0;
		}
		tprintf(t, "  # %s, client %s", state, owner ? owner : "(none)");
		if (!rattr_fulfils(r->have, r->want) && attrs_known(r->have)) {
			tprintf(t, "; the kernel has:");
			put_attrs(t, r->have);
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
	const struct tnode *last;
};

/* Binary records (docs/PROTOCOL.md, "Binary dump"): little-endian, fixed layout. */
#define BIN_MAGIC "FIBDBIN1"
#define BIN_HEADER_LEN 16
#define BIN_RECORD_LEN 64
#define BIN_NEXTHOP_LEN 40

enum bin_state { BS_INSTALLED, BS_PENDING, BS_FAILED, BS_WAITING, BS_NOT_INSTALLED };

static uint8_t *
bin_room(struct text *t, size_t n)
{
	uint8_t *p;

	if (t->failed)
		return NULL;
	if (t->cap - t->len < n) {
		size_t cap = t->cap ? t->cap * 2 : 65536;
		char *np;
		while (cap - t->len < n)
			cap *= 2;
		if (!(np = realloc(t->p, cap))) {
			t->failed = 1;
			return NULL;
		}
		t->p = np;
		t->cap = cap;
	}
	p = (uint8_t *)t->p + t->len;
	memset(p, 0, n);
	t->len += n;
	return p;
}

static void
le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void
le32(uint8_t *p, uint32_t v)
{
	le16(p, (uint16_t)v);
	le16(p + 2, (uint16_t)(v >> 16));
}

static void
bin_header(struct text *t)
{
	uint8_t *p = bin_room(t, BIN_HEADER_LEN);

	if (!p)
		return;
	memcpy(p, BIN_MAGIC, 8);
	le16(p + 8, 1);
	le16(p + 10, BIN_HEADER_LEN);
	le16(p + 12, BIN_RECORD_LEN);
	le16(p + 14, BIN_NEXTHOP_LEN);
}

static void
bin_route(struct text *t, const struct rtable *rt, const struct route *r)
{
	const struct rattr *a = r->want;
	unsigned n_nh = a->type == PS_RT_UNICAST ? a->n_nh : 0;
	size_t len = BIN_RECORD_LEN + (size_t)n_nh * BIN_NEXTHOP_LEN;
	uint8_t *p = bin_room(t, len), state;
	union ps_addr prefix;

	if (!p)
		return;
	if (r->flags & R_FAILED)
		state = BS_FAILED;
	else if (r->flags & R_WAITING)
		state = BS_WAITING;
	else if (r->flags & (R_QUEUED | R_INFLIGHT))
		state = BS_PENDING;
	else
		state = rattr_fulfils(r->have, r->want) ? BS_INSTALLED : BS_NOT_INSTALLED;
	route_prefix(r, &prefix);
	le16(p, (uint16_t)len);
	p[2] = rt->family;
	p[3] = route_plen(r);
	le32(p + 4, rt->id);
	le32(p + 8, r->metric);
	p[12] = r->tos;
	p[13] = a->type;
	p[14] = state;
	p[15] = a->has & (PS_RA_PREFSRC | PS_RA_REALM | PS_RA_SCOPE | PS_RA_MTU);
	memcpy(p + 16, prefix.b, 16);
	if (a->has & PS_RA_PREFSRC)
		memcpy(p + 32, a->prefsrc.b, 16);
	le32(p + 48, a->realm);
	le32(p + 52, a->mtu);
	p[56] = a->scope;
	p[57] = r->err;
	le16(p + 58, (uint16_t)n_nh);
	for (unsigned i = 0; i < n_nh; i++) {
		const struct rnh *h = &a->nh[i];
		uint8_t *q = p + BIN_RECORD_LEN + i * BIN_NEXTHOP_LEN;
		if (h->gw_family)
			memcpy(q, h->gw.b, 16);
		q[16] = h->gw_family;
		q[17] = h->flags;
		le16(q + 18, h->weight);
		le32(q + 20, (uint32_t)(h->ifindex > 0 ? h->ifindex : 0));
		memcpy(q + 24, h->ifname, PS_IFNAMSIZ);
	}
}

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
		bin_route(d->sh.t, table_at(r->rt), r);
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
			bin_header(&t);
		st->opened = true;
	}
	while (st->tidx < table_count() && t.len < d.part && !t.failed) {
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
		reply_end(out, st->req, PS_E_INTERNAL, "out of memory");
		return true;
	}
	if (st->tidx == table_count() && st->fmt == FMT_JSON)
		tprintf(&t, "]\n");
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

/* ---- clients, tables ---- */

static void
clients_text(struct text *t, bool json)
{
	struct owner_info oi;

	if (json)
		tprintf(t, "[");
	else
		tprintf(t, "%-24s %-22s %10s %10s %20s %s\n", "client", "state", "routes", "pending",
		    "generation", "peer");
	for (unsigned i = 0; owner_info_at(i, &oi) == 0; i++) {
		char state[48], peer[48] = "-";
		client_state(&oi, state, sizeof(state));
		if (oi.connected)
			snprintf(peer, sizeof(peer), "uid %d pid %d", oi.uid, oi.pid);
		if (!json) {
			tprintf(t, "%-24s %-22s %10llu %10llu %20llu %s\n", oi.name, state,
			    (unsigned long long)oi.routes, (unsigned long long)oi.pending,
			    (unsigned long long)oi.generation, peer);
			continue;
		}
		tprintf(t, "%s{\"name\":", i ? "," : "");
		json_str(t, oi.name);
		tprintf(t, ",\"state\":\"%s\",\"connected\":%s,\"routes\":%llu,\"pending\":%llu,"
			   "\"generation\":%llu,\"feeding\":%s,\"persist\":%s,"
			   "\"stale_left_s\":%llu,\"uid\":%d,\"pid\":%d}",
		    state, oi.connected ? "true" : "false", (unsigned long long)oi.routes,
		    (unsigned long long)oi.pending, (unsigned long long)oi.generation, oi.in_feed ? "true" : "false",
		    oi.persist ? "true" : "false", (unsigned long long)oi.stale_left_s,
		    oi.connected ? oi.uid : -1, oi.connected ? oi.pid : -1);
	}
	if (json)
		tprintf(t, "]\n");
}

static const char *
scan_state(const struct rtable *rt)
{
	if (rt->decoupled)
		return "decoupled";
	if (!sync_table_ready_now(rt) || !rt->scanned_at)
		return "first scan";
	return rt->scan_queued ? "rescan queued" : "in sync";
}

static void
tables_text(struct text *t, bool json)
{
	int64_t now = (int64_t)time(NULL);

	if (!json)
		tprintf(t, "%-10s %-6s %-14s %10s %10s %10s %8s %8s %10s %10s %8s\n", "table", "family",
		    "state", "desired", "installed", "pending", "failed", "waiting", "last dump",
		    "in it", "discards");
	else
		tprintf(t, "[");
	for (unsigned i = 0; i < table_count(); i++) {
		const struct rtable *rt = table_at((uint16_t)i);
		char ago[32] = "never";
		if (rt->scanned_at)
			snprintf(ago, sizeof(ago), "%llds ago", (long long)(now - rt->scanned_at));
		if (!json) {
			tprintf(t, "%-10u %-6s %-14s %10llu %10llu %10llu %8llu %8llu %10s %10llu %8llu\n",
			    rt->id, family_name(rt->family), scan_state(rt),
			    (unsigned long long)rt->n_desired, (unsigned long long)rt->n_installed,
			    (unsigned long long)rt->n_pending, (unsigned long long)rt->n_failed,
			    (unsigned long long)rt->n_waiting, ago, (unsigned long long)rt->scan_routes,
			    (unsigned long long)rt->scan_discards);
			continue;
		}
		tprintf(t,
		    "%s{\"table\":%u,\"family\":\"%s\",\"state\":\"%s\",\"decoupled\":%s,\"entries\":%llu,"
		    "\"desired\":%llu,\"installed\":%llu,\"pending\":%llu,\"failed\":%llu,"
		    "\"waiting\":%llu,\"last_dump\":%lld,\"last_dump_routes\":%llu,\"dumps_discarded\":%llu,"
		    "\"last_dump_unsure\":%s,\"changes_by_others\":%llu}",
		    i ? "," : "", rt->id, family_name(rt->family), scan_state(rt),
		    rt->decoupled ? "true" : "false", (unsigned long long)rt->n_routes,
		    (unsigned long long)rt->n_desired, (unsigned long long)rt->n_installed,
		    (unsigned long long)rt->n_pending, (unsigned long long)rt->n_failed,
		    (unsigned long long)rt->n_waiting, (long long)rt->scanned_at,
		    (unsigned long long)rt->scan_routes, (unsigned long long)rt->scan_discards,
		    rt->dump_unsure ? "true" : "false", (unsigned long long)rt->changes);
	}
	if (json)
		tprintf(t, "]\n");
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
	struct snap sn;
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
		if (commands[i].cmd == C_CLIENTS) {
			clients_text(&t, json);
		} else if (commands[i].cmd == C_TABLES) {
			tables_text(&t, json);
		} else {
			snap_take(&sn); /* status and metrics: every counter at one moment */
			if (commands[i].cmd == C_METRICS)
				metrics_text(&t, &sn);
			else if (json)
				status_json(&t, &sn);
			else
				status_text(&t, &sn);
		}
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
