/*
 * prune: adopted routes nobody claims are withdrawn after the grace time, or as
 * soon as every client that fed their table before a restart has fed it again
 * (docs/design.md, invariant 8); routes the kernel lost are written again after
 * a rescan (engine layer).
 */
#ifndef FIBD_PRUNE_H
#define FIBD_PRUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "table.h"

#define PRUNE_BUDGET 4096 /* adopted keys checked per callback */

/* A key of a dump: what the kernel says of one route of fibd's. */
struct scan_key {
	union ps_addr prefix;
	uint8_t plen;
	uint8_t tos;
	uint32_t metric;
	struct rattr *attrs; /* the route's attributes (a reference), or NULL if not read */
};

void prune_init(uv_loop_t *loop, uint32_t grace_s);
/* prune_set_grace - a reload: the grace time for scans from now on. */
void prune_set_grace(uint32_t grace_s);
void prune_close(void);

/*
 * prune_schedule - the keys a scan of t adopted (a vector of n, taken: freed
 * here; their attrs already consumed): due after the grace time, or at once for
 * a first scan of a table whose clients have all fed it again.
 */
void prune_schedule(struct rtable *t, struct scan_key *keys, size_t n, bool first_scan);

/*
 * prune_table_claimed - every client that fed t before fibd started has fed it
 * again: the adopted routes of t's first scan that none claimed are withdrawn
 * now (or as soon as that scan is applied), not after the grace time.
 */
void prune_table_claimed(struct rtable *t);

/*
 * prune_repair - after a sure rescan of t: write again, a budget at a time,
 * every route a client wants that fibd had installed and the dump did not show
 * (nor the dumps it waited for: route_seen); report missing and failed ones to a
 * diff waiting for the rescan (t->diffing). Then done().
 */
#define PRUNE_REPAIR_BUDGET 4096 /* routes looked at per callback */
void prune_repair(struct rtable *t, void (*done)(void));

/* prune_count - routes withdrawn so far, unclaimed. */
uint64_t prune_count(void);

#endif
