/*
 * status: fibd's counters for fibctl (front layer): status as text and JSON,
 * metrics in Prometheus' text format, the clients and the tables. Every
 * counter of one answer is taken at one moment (struct snap).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uv.h>

#include "bgp.h"
#include "config.h"
#include "format.h"
#include "health.h"
#include "learn.h"
#include "log.h"
#include "monitor.h"
#include "nl.h"
#include "owner.h"
#include "slab.h"
#include "status.h"
#include "sync.h"
#include "table.h"

static uint64_t started_ns;
static uint8_t protocol;

static void (*get_sessions)(struct session_stats *ret);
static int (*bgp_info_at)(unsigned i, struct bgp_peer_info *ret);

void
status_set_bgp(int (*info_at)(unsigned i, struct bgp_peer_info *ret))
{
	bgp_info_at = info_at;
}

/* BGP peer i, or -ENOENT past the last (or without BGP). */
static int
bgp_peer(unsigned i, struct bgp_peer_info *ret)
{
	return bgp_info_at ? bgp_info_at(i, ret) : -ENOENT;
}

void
status_set_sessions(void (*get)(struct session_stats *ret))
{
	get_sessions = get;
}

void
status_set_info(uint64_t start_ns, uint8_t proto)
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
	struct bgp_peer_info bi;
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
	for (unsigned i = 0; bgp_peer(i, &bi) == 0; i++) {
		tprintf(t, "  bgp peer %s %s AS %u table %u: %s", bi.name, bi.address, bi.as, bi.table, bi.state);
		if (bi.up_s)
			tprintf(t, " %llu s%s%s", (unsigned long long)bi.up_s, bi.gr ? ", graceful restart" : "",
			    bi.addpath ? ", ADD-PATH" : "");
		tprintf(t, "; sessions %llu, updates %llu, prefixes %llu, taken as withdrawn %llu\n",
		    (unsigned long long)bi.sessions, (unsigned long long)bi.updates,
		    (unsigned long long)bi.prefixes, (unsigned long long)bi.withdrawn);
		if (bi.last_error[0])
			tprintf(t, "    last session ended: %s\n", bi.last_error);
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
		   "bytes, %u batches at the writer thread, longest send %llu us\n",
	    ns.nh_objects ? "object" : "inline", (unsigned long long)ns.queued, ns.inflight,
	    ns.window, (unsigned long long)ns.parked, ns.batch_limit, ns.batches_queued,
	    (unsigned long long)ns.send_max_us);
	tprintf(t, "  messages %llu in %llu batches (adds %llu, replaces %llu, deletes %llu), "
		   "errors %llu, retries %llu, send waits %llu\n",
	    (unsigned long long)ns.msgs_sent, (unsigned long long)ns.batches_sent,
	    (unsigned long long)ns.adds, (unsigned long long)ns.replaces,
	    (unsigned long long)ns.deletes, (unsigned long long)ns.errors,
	    (unsigned long long)ns.retries, (unsigned long long)ns.eagain);
	tprintf(t, "  monitor events %llu, overruns %llu (%llu notifications dropped); "
		   "writer overruns %llu, late answers %llu; routes lost and written again %llu; "
		   "batches refused %llu; gateway-only nexthop sets resolved %llu\n",
	    (unsigned long long)sn->ms.events, (unsigned long long)sn->ms.overruns,
	    (unsigned long long)sn->ms.drops,
	    (unsigned long long)ns.overruns, (unsigned long long)ns.answers_late,
	    (unsigned long long)ns.routes_lost, (unsigned long long)ns.batches_refused,
	    (unsigned long long)ns.gateways_resolved);
	tprintf(t, "sync: dumps %llu started, %llu completed, %llu interrupted, %llu failed; "
		   "%llu rescans asked for by events; %llu routes adopted, %llu unclaimed ones pruned, "
		   "%llu found changed and rewritten; %llu notifications replayed after scans, "
		   "%llu overflows; %llu IPv6 dumps used unsure; repairs under fibd's own writes "
		   "%llu deferred, %llu forced\n",
	    (unsigned long long)sn->ss.dumps_started, (unsigned long long)sn->ss.dumps_completed,
	    (unsigned long long)sn->ss.dumps_interrupted, (unsigned long long)sn->ss.dumps_failed,
	    (unsigned long long)sn->ss.rescans_triggered, (unsigned long long)sn->ss.routes_adopted,
	    (unsigned long long)sn->ss.routes_pruned, (unsigned long long)sn->ss.routes_changed,
	    (unsigned long long)sn->ss.notifications_replayed, (unsigned long long)sn->ss.keep_overflows,
	    (unsigned long long)sn->ss.dumps_unsure, (unsigned long long)sn->ss.repairs_deferred,
	    (unsigned long long)sn->ss.repairs_forced);
	learn_get_stats(&ls);
	tprintf(t, "learn: %llu LEARN messages sent, %llu foreign routes not expressible, "
		   "%llu notifications replayed after learn dumps, %llu overflows, "
		   "%llu refreshes\n",
	    (unsigned long long)ls.sent, (unsigned long long)ls.skipped,
	    (unsigned long long)ls.replayed, (unsigned long long)ls.overflows,
	    (unsigned long long)ls.refreshes);
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
	{
		static const struct {
			const char *name, *type, *help;
		} bcols[] = {
			{ "fibd_bgp_peer_up", "gauge", "1 if the BGP session with the peer is established" },
			{ "fibd_bgp_sessions_total", "counter", "BGP sessions with the peer established" },
			{ "fibd_bgp_updates_total", "counter", "UPDATE messages from the peer" },
			{ "fibd_bgp_prefixes_total", "counter", "Prefixes announced or withdrawn in them" },
			{ "fibd_bgp_treat_as_withdraw_total", "counter",
			    "UPDATEs whose routes were taken as withdrawn (RFC 7606)" },
		};
		struct bgp_peer_info bi;
		if (bgp_peer(0, &bi) == 0)
			for (unsigned c = 0; c < sizeof(bcols) / sizeof(bcols[0]); c++) {
				metric_head(t, bcols[c].name, bcols[c].type, bcols[c].help);
				for (unsigned i = 0; bgp_peer(i, &bi) == 0; i++) {
					const uint64_t v[] = { !strcmp(bi.state, "established"), bi.sessions,
						bi.updates, bi.prefixes, bi.withdrawn };
					tprintf(t, "%s{peer=", bcols[c].name);
					json_str(t, bi.name);
					tprintf(t, "} %llu\n", (unsigned long long)v[c]);
				}
			}
	}

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
	metric1(t, "fibd_netlink_batches_refused_total", "counter",
	    "Batches the kernel refused as a whole (each message failed with the error)",
	    (double)ns->batches_refused);
	metric1(t, "fibd_netlink_overruns_total", "counter",
	    "Times the writer socket's answers were lost (every message in flight written again)",
	    (double)ns->overruns);
	metric1(t, "fibd_netlink_answers_late_total", "counter",
	    "Answers for messages written again after an overrun, ignored", (double)ns->answers_late);
	metric1(t, "fibd_netlink_gateways_resolved_total", "counter",
	    "Gateway-only nexthop sets whose devices the kernel named (for their nexthop objects)",
	    (double)ns->gateways_resolved);
	metric1(t, "fibd_netlink_queued", "gauge", "Routes queued for the kernel", (double)ns->queued);
	metric1(t, "fibd_netlink_inflight", "gauge", "Messages sent and not yet answered", ns->inflight);
	metric1(t, "fibd_monitor_events_total", "counter", "Kernel notifications read", (double)sn->ms.events);
	metric1(t, "fibd_monitor_overruns_total", "counter",
	    "Reads of the monitor socket that found notifications lost (ENOBUFS, drop counter)",
	    (double)sn->ms.overruns);
	metric1(t, "fibd_monitor_drops_total", "counter",
	    "Notifications the kernel dropped for the monitor socket", (double)sn->ms.drops);
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
	metric1(t, "fibd_repairs_deferred_total", "counter",
	    "IPv6 rescans fibd wrote the table during: their repair waited for another dump",
	    (double)ss->repairs_deferred);
	metric1(t, "fibd_repairs_forced_total", "counter",
	    "IPv6 repairs made although fibd wrote the table during every dump they waited for",
	    (double)ss->repairs_forced);
	learn_get_stats(&ls);
	metric1(t, "fibd_learn_messages_total", "counter", "LEARN messages sent", (double)ls.sent);
	metric1(t, "fibd_learn_refreshes_total", "counter",
	    "Learn dumps whole: learners told to drop what was not sent again", (double)ls.refreshes);
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
	struct bgp_peer_info bi;
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
	    "\"monitor_overruns\":%llu,\"monitor_drops\":%llu,\"routes_lost\":%llu,"
	    "\"batch_limit\":%u,\"send_max_us\":%llu,"
	    "\"writer_batches\":%u,\"batches_refused\":%llu,\"gateways_resolved\":%llu,"
	    "\"writer_overruns\":%llu,\"answers_late\":%llu,\"nexthop_objects\":%s},",
	    (unsigned long long)ns.queued, ns.inflight, ns.window, (unsigned long long)ns.parked,
	    (unsigned long long)ns.msgs_sent, (unsigned long long)ns.batches_sent,
	    (unsigned long long)ns.adds, (unsigned long long)ns.replaces,
	    (unsigned long long)ns.deletes, (unsigned long long)ns.errors,
	    (unsigned long long)ns.retries, (unsigned long long)ns.eagain,
	    (unsigned long long)sn->ms.events, (unsigned long long)sn->ms.overruns,
	    (unsigned long long)sn->ms.drops, (unsigned long long)ns.routes_lost, ns.batch_limit,
	    (unsigned long long)ns.send_max_us,
	    ns.batches_queued, (unsigned long long)ns.batches_refused,
	    (unsigned long long)ns.gateways_resolved, (unsigned long long)ns.overruns,
	    (unsigned long long)ns.answers_late, ns.nh_objects ? "true" : "false");
	tprintf(t,
	    "\"sync\":{\"dumps_started\":%llu,\"dumps_completed\":%llu,\"dumps_interrupted\":%llu,"
	    "\"dumps_failed\":%llu,\"rescans_triggered\":%llu,\"routes_adopted\":%llu,"
	    "\"routes_pruned\":%llu,\"routes_changed\":%llu,\"notifications_replayed\":%llu,"
	    "\"keep_overflows\":%llu,\"dumps_unsure\":%llu,\"repairs_deferred\":%llu,"
	    "\"repairs_forced\":%llu},",
	    (unsigned long long)sn->ss.dumps_started, (unsigned long long)sn->ss.dumps_completed,
	    (unsigned long long)sn->ss.dumps_interrupted, (unsigned long long)sn->ss.dumps_failed,
	    (unsigned long long)sn->ss.rescans_triggered, (unsigned long long)sn->ss.routes_adopted,
	    (unsigned long long)sn->ss.routes_pruned, (unsigned long long)sn->ss.routes_changed,
	    (unsigned long long)sn->ss.notifications_replayed, (unsigned long long)sn->ss.keep_overflows,
	    (unsigned long long)sn->ss.dumps_unsure, (unsigned long long)sn->ss.repairs_deferred,
	    (unsigned long long)sn->ss.repairs_forced);
	tprintf(t, "\"bgp\":[");
	for (unsigned i = 0; bgp_peer(i, &bi) == 0; i++) {
		tprintf(t, "%s{\"name\":", i ? "," : "");
		json_str(t, bi.name);
		tprintf(t, ",\"address\":\"%s\",\"as\":%u,\"table\":%u,\"state\":\"%s\",\"up_s\":%llu,"
			   "\"graceful_restart\":%s,\"addpath\":%s,\"sessions\":%llu,\"updates\":%llu,"
			   "\"prefixes\":%llu,\"treat_as_withdraw\":%llu,\"last_error\":",
		    bi.address, bi.as, bi.table, bi.state, (unsigned long long)bi.up_s, bi.gr ? "true" : "false",
		    bi.addpath ? "true" : "false", (unsigned long long)bi.sessions, (unsigned long long)bi.updates,
		    (unsigned long long)bi.prefixes, (unsigned long long)bi.withdrawn);
		json_str(t, bi.last_error);
		tprintf(t, "}");
	}
	tprintf(t, "],");
	learn_get_stats(&ls);
	tprintf(t, "\"learn\":{\"sent\":%llu,\"skipped\":%llu,\"replayed\":%llu,\"overflows\":%llu,"
		   "\"refreshes\":%llu},",
	    (unsigned long long)ls.sent, (unsigned long long)ls.skipped,
	    (unsigned long long)ls.replayed, (unsigned long long)ls.overflows,
	    (unsigned long long)ls.refreshes);
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



/* ---- clients, tables ---- */

void
status_clients(struct text *t, bool json)
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
		if (oi.connected && oi.pid >= 0)
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

void
status_tables(struct text *t, bool json)
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


void
status_report(struct text *t, bool json)
{
	struct snap sn;

	snap_take(&sn);
	if (json)
		status_json(t, &sn);
	else
		status_text(t, &sn);
}

void
status_metrics(struct text *t)
{
	struct snap sn;

	snap_take(&sn);
	metrics_text(t, &sn);
}
