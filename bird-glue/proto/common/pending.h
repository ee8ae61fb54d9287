/*
 *	BIRD -- fibd protocol: the pending set (the same code for BIRD 2 and 3)
 *
 *	Can be freely distributed and used under the terms of the GNU GPL.
 */

#ifndef _BIRD_FIBD_PENDING_H_
#define _BIRD_FIBD_PENDING_H_

#include "nest/bird.h"
#include "lib/resource.h"

struct fibd_entry;

/*
 * Encoded messages waiting for the socket: one entry per route key (family,
 * prefix, length, metric) in a FIFO queue, found through a hash, with markers
 * (FEED_BEGIN, FEED_END, BYE) between them. A later change of a key still
 * pending replaces its entry in place, so the set is bounded by the size of the
 * table, not by the update rate. Not thread-safe: one protocol instance, in its
 * own loop, owns it.
 *
 * The hash is open addressing with linear probing: a slot is a key's hash in
 * one array and its entry in another, so a lookup that finds nothing (every
 * new route of a load) reads only the first array and no entry.
 */
struct fibd_pending {
  pool *pool;
  slab *small_slab, *large_slab;	/* IPv4 routes; IPv6 routes and markers */
  struct fibd_entry *head, *tail;	/* the queue: taken at the head */
  u32 *slot_hash;			/* 0: a free slot */
  struct fibd_entry **slot;
  uint hash_order;
  uint routes;				/* route entries on the queue, each in the hash */
  u64 bytes;				/* of the messages, markers' too */
  u64 ext_bytes;			/* of those kept outside their entries */
  u64 entry_bytes;			/* of the route entries */
  uint peak;				/* the most route entries at once */
  u64 peak_mem;				/* and the memory they took (markers aside) */
  u64 coalesced;			/* changes that replaced one still pending */
};

void fibd_pending_init(struct fibd_pending *q, pool *p);
void fibd_pending_flush(struct fibd_pending *q);
void fibd_pending_mark(struct fibd_pending *q, const byte *msg, uint len);
int fibd_pending_route(struct fibd_pending *q, uint limit, u8 fam, u8 plen, const byte *prefix,
		       u32 metric, const byte *msg, uint len);
uint fibd_pending_take(struct fibd_pending *q, byte *buf, uint room);

static inline int fibd_pending_empty(const struct fibd_pending *q)
{ return !q->head; }

#endif
