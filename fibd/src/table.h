/*
 * table: fibd's desired state. One table per (kernel table, family), each a
 * path-compressed binary trie of prefixes; a prefix holds the routes that differ
 * in (tos, metric), as the kernel keys them. Entries come from the slab allocator.
 *
 * A route records what its owner wants (want), what the kernel has acknowledged
 * (have), and where it is in the write pipeline (flags). "Desired state is the
 * queue": a change only updates want and puts the route on the write queue once.
 */
#ifndef FIBD_TABLE_H
#define FIBD_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include <proto-shim/msg.h>

#include "rattr.h"
#include "slab.h"

#define TABLE_MAX 256       /* (kernel table, family) pairs fibd manages; route.rt is 8 bits */
#define OWNER_NONE 0xffffu

/* route flags */
#define R_QUEUED 0x01   /* on the write queue */
#define R_INFLIGHT 0x02 /* a netlink message for it awaits its answer */
#define R_STATUSQ 0x04  /* on its owner's status queue */
#define R_WAITING 0x08  /* nexthop unreachable now: retried on a link or address change */
#define R_FAILED 0x10   /* the last write failed; retried with backoff */
#define R_EXCL 0x20     /* the next add must not replace: the key may be foreign */
#define R_PARKED 0x40   /* in nl's vector of failed and waiting routes */
#define R_PENDING 0x80  /* counted in its owner's routes awaiting the kernel */

/*
 * A route's links are 32-bit references, not pointers: a full table holds a
 * million routes, and eight pointers were most of a route's 80 bytes. Links to
 * routes are route slab references (route_at, route_ref); the prefix is a
 * reference into its family's node slab; want and have are rattr ids (rattr_at).
 * 0 stands for NULL in each.
 */
struct route {
	uint32_t node;  /* its prefix (table.c) */
	uint32_t next;  /* same prefix, other (tos, metric) */
	uint32_t qnext; /* write queue */
	uint32_t onext; /* owner's routes */
	uint32_t oprev;
	uint32_t snext; /* owner's status queue */
	/* Ids of interned attribute sets, 0 for none: a truth test reads the id
	 * (r->want), route_want()/route_have() give the attributes. */
	uint32_t want;  /* desired attributes; 0: remove from the kernel */
	uint32_t have;  /* acknowledged by the kernel; 0: not installed */
	uint32_t metric;
	uint16_t gen;     /* owner's feed mark when it last sent it (compared for equality) */
	uint16_t owner;   /* client slot, OWNER_NONE */
	/*
	 * uv_now() ms, modulo 65536, when a change to it was first queued: the
	 * latency metric (a change older than 65 s is misread; that is all).
	 */
	uint16_t since;
	uint8_t rt;       /* index of its table (TABLE_MAX is 256) */
	uint8_t err;      /* errno of the last failure (Linux errnos are under 256) */
	uint8_t errtext;  /* nl_text() index of the kernel's text for it, 0 if none */
	uint8_t seen;     /* its table's scan epoch when a dump last showed it */
	uint8_t tos;
	uint8_t flags;
};

_Static_assert(sizeof(struct route) == 48, "a route's size is most of fibd's memory per route");

/* The slab of every route (table.c). */
extern struct slab *table_route_slab;

/* route_at - the route a link names (0: NULL). route_ref - the link naming r (NULL: 0). */
static inline struct route *
route_at(uint32_t ref)
{
	return slab_deref(table_route_slab, ref);
}

uint32_t route_ref(const struct route *r);

static inline struct rattr *
route_want(const struct route *r)
{
	return rattr_at(r->want);
}

static inline struct rattr *
route_have(const struct route *r)
{
	return rattr_at(r->have);
}

struct rtable {
	uint32_t id;
	uint8_t family; /* PS_FAM_V4 or PS_FAM_V6 */
	uint16_t idx;
	uint8_t scan;          /* its first scan (sync.c) */
	uint8_t epoch;         /* counts its scans; routes a scan saw carry it in `seen` */
	bool scan_queued;      /* a dump of it (first scan or rescan) waits in sync's queue */
	bool learn_queued;     /* a learn dump of it waits in sync's queue */
	uint16_t learners;     /* feed sessions that learn its foreign routes */
	uint64_t learn_order;
	uint8_t learn_tries;   /* learn dumps in a row that may lack routes, or changes */
	uint32_t scan_retry_ms;   /* the pause after its next discarded dump */
	uint64_t scan_order;      /* when it was queued: the queue is FIFO within a kind */
	uint64_t scan_not_before; /* uv_now() ms: its next dump waits out a backoff */
	uint64_t changes;      /* route notifications by others seen for it (nl.c) */
	uint64_t writes;       /* fibd's own writes acknowledged in it (or may have been applied) */
	uint64_t learn_not_before; /* uv_now() ms: its next learn dump waits out a backoff */
	bool decoupled;        /* fibd writes nothing to it: changes wait (held by nl) until couple */
	bool diffing;          /* the rescan being applied reports its differences (watch.c) */
	uint16_t diff_waiting; /* diffs waiting for its next rescan */
	int64_t scanned_at;    /* wall-clock seconds of its last validated dump applied, 0: none */
	uint64_t scan_routes;  /* routes of fibd's protocol that dump showed */
	uint64_t scan_discards; /* its dumps thrown away (interrupted, failed) */
	uint8_t churn_discards; /* dumps discarded in a row: notifications lost, (IPv6) changed */
	bool dump_unsure;       /* IPv6: its last dump used was taken while others changed it */
	/*
	 * IPv6 rescans during which fibd wrote it: their repair waits for the
	 * next (sync.c), which adds to them. The repair takes for lost only what
	 * no dump since union_first showed (route_seen).
	 */
	uint8_t union_first;    /* the epoch of the first rescan in the union */
	bool union_open;        /* the next rescan adds to the last */
	uint32_t union_events;  /* sync's count of silent-loss events when the union began */
	uint8_t repair_waits;   /* rescans whose repair waited since its last repair walk */
	bool repaired;          /* its last repair walk took routes for lost (sync_route_exists) */
	bool claims_in;         /* every client that fed it before fibd started has fed it again */
	/* Tries, as references into the family's node slab (table.c): */
	uint32_t root;         /* IPv6: every prefix; IPv4: prefixes shorter than /16 */
	uint32_t *stride;      /* IPv4: one subtrie per /16, for prefixes of /16 and longer */
	uint64_t n_routes;    /* route entries */
	uint64_t n_desired;   /* want != 0 */
	uint64_t n_pending;   /* queued or in flight to the kernel */
	uint64_t n_inflight;  /* in flight: sent, the kernel's answer not read yet */
	uint64_t n_installed; /* have != 0 */
	uint64_t n_failed;
	uint64_t n_waiting;
	uint64_t n_nodes;
};

/*
 * Whether a dump of the rescan union (union_first .. epoch) showed r, or the
 * kernel acknowledged a write of it since the union began (epochs wrap).
 */
static inline bool
route_seen(const struct rtable *t, const struct route *r)
{
	return (uint8_t)(t->epoch - r->seen) <= (uint8_t)(t->epoch - t->union_first);
}

/* "inet" or "inet6", as iproute2 names a family (PS_FAM_V4, PS_FAM_V6). */
static inline const char *
family_name(uint8_t fam)
{
	return fam == PS_FAM_V4 ? "inet" : "inet6";
}

/* Tables made from now on start decoupled (fibctl decouple without a table). */
extern bool table_decouple_new;

int table_init(void);
void table_shutdown(void);

/* table_get - the table for (id, family), made if `create`; NULL if absent or full. */
struct rtable *table_get(uint32_t id, uint8_t family, bool create);
struct rtable *table_at(uint16_t idx);
unsigned table_count(void);

/* table_lookup - the route with exactly this key, or NULL. */
struct route *table_lookup(struct rtable *t, const union ps_addr *prefix, uint8_t plen, uint8_t tos,
    uint32_t metric);

/*
 * table_insert - the route with this key, made empty (want = have = 0, owner
 * OWNER_NONE) if it did not exist. NULL on allocation failure.
 */
struct route *table_insert(struct rtable *t, const union ps_addr *prefix, uint8_t plen, uint8_t tos,
    uint32_t metric);

/*
 * table_release - forget a route if nothing refers to it any more: no owner, not
 * wanted, not installed, not queued, not in flight, not on a status queue. Returns
 * true if it was freed.
 */
bool table_release(struct route *r);

/* route_set_want - replace what the owner wants (takes the reference a; NULL: remove). */
void route_set_want(struct route *r, struct rattr *a);

/*
 * route_set_have - replace what the kernel is known to hold (takes the reference
 * a, drops the old one; NULL: not installed). The caller keeps the counts.
 */
void route_set_have(struct route *r, struct rattr *a);

/* The route's prefix (copied into *ret) and length. */
void route_prefix(const struct route *r, union ps_addr *ret);
uint8_t route_plen(const struct route *r);

typedef int (*table_walk_cb)(struct route *r, void *ctx);

/*
 * table_walk - every route in prefix order (address, then length; tos and metric
 * in insertion order within a prefix), or only those within `within` (plen
 * within_len) when within is not NULL. Stops when cb returns non-zero, and returns
 * that value. The callback must not add or remove routes.
 */
int table_walk(struct rtable *t, const union ps_addr *within, uint8_t within_len, table_walk_cb cb,
    void *ctx);

/*
 * table_walk_after - the rest of a walk: every route whose prefix comes after
 * after/after_len in walk order (after == NULL: all), so a walk stopped at a
 * prefix resumes there. Work is the prefix's depth plus what is walked.
 */
int table_walk_after(struct rtable *t, const union ps_addr *after, uint8_t after_len,
    table_walk_cb cb, void *ctx);

/* table_longest - the longest prefix holding routes that covers addr/len, or NULL. */
struct route *table_longest(struct rtable *t, const union ps_addr *addr, uint8_t len);

/* Slab statistics of the route and node slabs. */
struct slab_stats;
void table_slab_stats(struct slab_stats *ret_routes, struct slab_stats *ret_nodes4,
    struct slab_stats *ret_nodes6);

/* One bounded cleanup step of the table slabs; true if more is pending. */
bool table_slab_cleanup(void);

/* Whether the table slabs have cleanup work (freed objects, pages to return). */
bool table_slab_cleanup_pending(void);

#endif
