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
struct fibd_chunk;

/* The pending set's entries live in chunks of this size (pending.c). */
#define FIBD_CHUNK	(256 * 1024)

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
 * new route of a load) reads only the first array (of each hash while it
 * grows) and no entry.
 *
 * It grows a step at a time, so that no change waits for all of it (pending.c,
 * "Growing"): first the next, twice as large, hash is cleared, a part with
 * each operation, while cur takes the keys; then the next is cur, and each
 * operation moves a few slots of the old one into it until none is left.
 */
struct fibd_hash {
  u32 *hash;				/* a key's hash in each slot; 0: a free slot */
  struct fibd_entry **entry;		/* its entry; read only where hash is not 0 */
  uint order;				/* 1 << order slots; 0: no hash */
};

struct fibd_pending {
  pool *pool;				/* the hash's and long messages' blocks */
  struct fibd_chunk *fill;		/* the chunk new entries go to (pending.c) */
  struct fibd_chunk *kept;		/* empty chunks, still mapped */
  uint n_kept;
  uint chunks, peak_chunks;		/* mapped now, and at most */
  struct fibd_entry *head, *tail;	/* the queue: taken at the head */
  struct fibd_hash cur;			/* where new keys go */
  struct fibd_hash next;		/* growing: being cleared, to be cur */
  struct fibd_hash old;			/* grown: what cur was, being emptied into it */
  uint grow_pos;			/* slots of next cleared, or of old moved */
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
void fibd_pending_prefetch(const struct fibd_pending *q, u8 fam, u8 plen, const byte *prefix,
			   u32 metric);
int fibd_pending_route(struct fibd_pending *q, uint limit, u8 fam, u8 plen, const byte *prefix,
		       u32 metric, const byte *msg, uint len);
uint fibd_pending_take(struct fibd_pending *q, byte *buf, uint room);
uint fibd_pending_trim(struct fibd_pending *q, uint max);
uint fibd_pending_excess(const struct fibd_pending *q);
void fibd_pending_free(struct fibd_pending *q);

static inline int fibd_pending_empty(const struct fibd_pending *q)
{ return !q->head; }

#endif
