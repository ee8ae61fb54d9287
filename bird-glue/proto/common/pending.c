/*
 *	BIRD -- fibd protocol: the pending set (the same code for BIRD 2 and 3)
 *
 *	Can be freely distributed and used under the terms of the GNU GPL.
 */

#include <string.h>

#include "nest/bird.h"
#include "lib/string.h"

#include "proto/fibd/pending.h"

#define FIBD_INLINE	56		/* message bytes kept in the entry itself */
#define FIBD_HASH_MIN	10

enum { FIBD_E_ROUTE, FIBD_E_MARK };

struct fibd_entry {
  node n;				/* on q->queue */
  struct fibd_entry *hnext;		/* hash chain; routes only */
  u32 hash;
  u32 metric;
  u16 len;				/* bytes of the encoded message */
  u16 ext_cap;
  u8 kind;				/* FIBD_E_* */
  u8 fam, plen;
  byte prefix[16];
  byte *ext;				/* the message when longer than FIBD_INLINE */
  byte msg[FIBD_INLINE];
};

static inline const byte *
entry_msg(const struct fibd_entry *e)
{
  return e->ext ? e->ext : e->msg;
}

/* A 64-bit finalizer (MurmurHash3's fmix64): every input bit reaches the top bits. */
static inline u64
mix64(u64 x)
{
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

/*
 * The bucket is the hash's top bits. BIRD's mem_hash() does not fit: over an
 * IPv4 prefix its top bits come almost only from the last octet, 0 for every
 * /24 and shorter, so a full table fell into a few dozen long chains.
 */
static inline u32
key_hash(u8 fam, u8 plen, const byte *prefix, u32 metric)
{
  u64 a, b;

  memcpy(&a, prefix, 8);
  memcpy(&b, prefix + 8, 8);
  return mix64(a ^ mix64(b ^ ((u64) metric << 16 | (u64) plen << 8 | fam))) >> 32;
}

static struct fibd_entry *
find(struct fibd_pending *q, u32 h, u8 fam, u8 plen, const byte *prefix, u32 metric)
{
  struct fibd_entry *e = q->hash[h >> (32 - q->hash_order)];

  for (; e; e = e->hnext)
    if (e->hash == h && e->fam == fam && e->plen == plen && e->metric == metric &&
	!memcmp(e->prefix, prefix, 16))
      return e;
  return NULL;
}

static void
hash_resize(struct fibd_pending *q, uint order)
{
  struct fibd_entry **old = q->hash;
  uint old_size = old ? 1U << q->hash_order : 0;

  q->hash = mb_allocz(q->pool, sizeof(struct fibd_entry *) << order);
  q->hash_order = order;
  for (uint i = 0; i < old_size; i++)
    for (struct fibd_entry *e = old[i], *next; e; e = next)
    {
      next = e->hnext;
      uint b = e->hash >> (32 - order);
      e->hnext = q->hash[b];
      q->hash[b] = e;
    }
  if (old)
    mb_free(old);
}

static void
hash_remove(struct fibd_pending *q, struct fibd_entry *e)
{
  struct fibd_entry **pp = &q->hash[e->hash >> (32 - q->hash_order)];

  while (*pp != e)
    pp = &(*pp)->hnext;
  *pp = e->hnext;
  q->hash_count--;
}

static void
set_msg(struct fibd_pending *q, struct fibd_entry *e, const byte *msg, uint len)
{
  q->bytes -= e->len;
  if (len <= FIBD_INLINE)
  {
    if (e->ext)
      mb_free(e->ext);
    e->ext = NULL;
    e->ext_cap = 0;
    memcpy(e->msg, msg, len);
  }
  else
  {
    if (e->ext_cap < len)
    {
      if (e->ext)
	mb_free(e->ext);
      e->ext = mb_alloc(q->pool, len);
      e->ext_cap = len;
    }
    memcpy(e->ext, msg, len);
  }
  e->len = len;
  q->bytes += len;
}

static void
free_entry(struct fibd_pending *q, struct fibd_entry *e)
{
  rem_node(&e->n);
  if (e->kind == FIBD_E_ROUTE)
  {
    hash_remove(q, e);
    q->routes--;
  }
  q->bytes -= e->len;
  if (e->ext)
    mb_free(e->ext);
  sl_free(e);
}

void
fibd_pending_init(struct fibd_pending *q, pool *pool)
{
  memset(q, 0, sizeof(*q));
  q->pool = pool;
  q->entry_slab = sl_new(pool, sizeof(struct fibd_entry));
  init_list(&q->queue);
  hash_resize(q, FIBD_HASH_MIN);
}

/* Forget everything pending (the session is over); the peaks stay. */
void
fibd_pending_flush(struct fibd_pending *q)
{
  while (!EMPTY_LIST(q->queue))
    free_entry(q, HEAD(q->queue));
  if (q->hash_order != FIBD_HASH_MIN)
  {
    mb_free(q->hash);
    q->hash = NULL;
    hash_resize(q, FIBD_HASH_MIN);
  }
}

/* A marker: queued in order, never coalesced. */
void
fibd_pending_mark(struct fibd_pending *q, const byte *msg, uint len)
{
  struct fibd_entry *e = sl_allocz(q->entry_slab);

  e->kind = FIBD_E_MARK;
  set_msg(q, e, msg, len);
  add_tail(&q->queue, &e->n);
}

/*
 * The encoded change msg for its key (fam is 4 or 6; prefix is 16 bytes): a
 * new entry at the tail, or the pending entry of the same key updated in
 * place. Returns 0, or -1 if a new entry would pass limit (nothing changed).
 */
int
fibd_pending_route(struct fibd_pending *q, uint limit, u8 fam, u8 plen, const byte *prefix,
		   u32 metric, const byte *msg, uint len)
{
  u32 h = key_hash(fam, plen, prefix, metric);
  struct fibd_entry *e = find(q, h, fam, plen, prefix, metric);

  if (e)
  {
    q->coalesced++;
    set_msg(q, e, msg, len);
    return 0;
  }
  if (q->routes >= limit)
    return -1;
  e = sl_allocz(q->entry_slab);
  e->kind = FIBD_E_ROUTE;
  e->hash = h;
  e->fam = fam;
  e->plen = plen;
  e->metric = metric;
  memcpy(e->prefix, prefix, 16);
  set_msg(q, e, msg, len);
  add_tail(&q->queue, &e->n);
  e->hnext = q->hash[h >> (32 - q->hash_order)];
  q->hash[h >> (32 - q->hash_order)] = e;
  q->hash_count++;
  q->routes++;
  if (q->routes > q->peak)
  {
    q->peak = q->routes;
    q->peak_mem = MAX(q->peak_mem, (u64) q->routes * sizeof(struct fibd_entry) +
		      (sizeof(struct fibd_entry *) << q->hash_order) + q->bytes);
  }
  if (q->hash_count > (2U << q->hash_order) && q->hash_order < 28)
    hash_resize(q, q->hash_order + 2);
  return 0;
}

/* Move whole messages from the head of the queue into buf; returns the bytes moved. */
uint
fibd_pending_take(struct fibd_pending *q, byte *buf, uint room)
{
  uint len = 0;

  while (!EMPTY_LIST(q->queue))
  {
    struct fibd_entry *e = HEAD(q->queue);
    if (len + e->len > room)
      break;
    memcpy(buf + len, entry_msg(e), e->len);
    len += e->len;
    free_entry(q, e);
  }
  return len;
}
