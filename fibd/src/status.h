/*
 * status: fibd's counters for fibctl (front layer): `status` (text, -j JSON),
 * `metrics` (Prometheus text), `clients` and `tables`.
 */
#ifndef FIBD_STATUS_H
#define FIBD_STATUS_H

#include <stdbool.h>
#include <stdint.h>

#include "format.h"

/* status_set_info - what status reports about the daemon: its start (monotonic ns), protocol. */
void status_set_info(uint64_t start_ns, uint8_t protocol);

/* What status reports of the sessions on the socket; feed.c keeps it. */
struct session_stats {
	unsigned open;
	uint64_t accepted;
	uint64_t failed;   /* closed after a protocol error */
	uint64_t refused;  /* closed at once: no memory for them */
	uint64_t stalled;  /* control sessions closed: their reader stalled */
	uint64_t msgs_in;
	uint64_t status_sent;
};

/* status_set_sessions - where status reads them (main.c wires feed_get_stats: status does not call feed). */
void status_set_sessions(void (*get)(struct session_stats *ret));

/* status_set_bgp - where status reads the BGP peers (main.c wires bgp_peer_info_at). */
struct bgp_peer_info;
void status_set_bgp(int (*info_at)(unsigned i, struct bgp_peer_info *ret));

/* Each appends its answer to t (t->failed on no memory). */
void status_report(struct text *t, bool json);
void status_metrics(struct text *t);
void status_clients(struct text *t, bool json);
void status_tables(struct text *t, bool json);

#endif
