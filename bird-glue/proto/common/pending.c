/*
 *	BIRD -- fibd protocol: the pending set (the same code for BIRD 2 and 3)
 *
 *	Can be freely distributed and used under the terms of the GNU GPL.
 */

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "nest/bird.h"

#include "proto/fibd/pending.h"

#define FIBD_HASH_MIN	10
#define FIBD_HASH_MAX	28
#define FIBD_HASH_MAX_COUNT	(3U << (FIBD_HASH_MAX - 2))	/* 3/4 of the largest hash */
#define FIBD_CLEAR_STEP	4096	/* slots of a growing hash cleared per operation (16 KiB) */
#define FIBD_MOVE_STEP	16	/* slots of the old hash moved into the grown one per operation */

enum { FIBD_E_ROUTE, FIBD_E_MARK };

/*
 * An entry is FIBD_SMALL bytes for an IPv4 route, FIBD_LARGE for an IPv6 route
 * or a marker: the header, the prefix (4 or 16 bytes; none for a marker), then
 * the message if it fits in the rest, else a pointer to a block of its own.
 * Both are multiples of 16. On 64-bit that leaves 53 bytes for an IPv4 route's
 * message and 73 for an IPv6 one: a route with one next hop encodes to 26 or
 * 50 bytes plus its interface name (at most 15), and up to 8 (IPv4) or 9
 * (IPv6) more for a host route, an onlink next hop and a metric in the key, so
 * only an IPv6 one with all of that and a metric over 65535 takes a block; a
 * withdraw to 14 or 26.
 */
#define FIBD_SMALL	80
#define FIBD_LARGE	112

_Static_assert(FIBD_SMALL % 16 == 0 && FIBD_LARGE % 16 == 0, "entries stay 16-byte aligned");

/*
 * Entries live in chunks of FIBD_CHUNK bytes, each mapped from the kernel on
 * its own and aligned to its size, so that an entry finds its chunk's header.
 * Not in BIRD's slabs: BIRD 2's page allocator keeps 256 free pages and gives
 * every further page a slab empties to the kernel, one madvise() a page, each
 * a TLB shootdown, then faults it in again. The pending set fills and drains at
 * once in a full feed, and in a perf profile of BIRD 2.19.2 in the churn bench
 * (its fibd run alone) those madvise() calls took 8 to 14 % of BIRD's samples,
 * none without the protocol. Given back through the slabs later, in steady
 * state, the slowest probe of one run took 24 ms, BIRD running (put down to
 * its page cleanup; not profiled).
 *
 * Entries are taken in the order they were allocated (a change that replaces a
 * pending one keeps its entry), so chunks empty in order. An empty chunk is
 * kept for the next entries; the ones kept beyond FIBD_CHUNK_KEEP go back with
 * fibd_pending_trim, one munmap() for 64 pages, once the protocol sees nothing
 * pending for a while. BIRD's `show memory` does not count them; `show
 * protocols all` does.
 */
#define FIBD_CHUNK_KEEP	4		/* empty chunks kept for good (and the one being filled) */

struct fibd_chunk {
  struct fibd_chunk *next;		/* kept empty chunks */
  uint live;				/* entries in it not taken yet */
  uint used;				/* bytes handed out, the header's too */
};

#define FIBD_CHUNK_START 16		/* where the first entry goes */
_Static_assert(sizeof(struct fibd_chunk) <= FIBD_CHUNK_START && FIBD_CHUNK_START % 16 == 0,
	       "the header fits before the entries, which stay 16-byte aligned");
_Static_assert((FIBD_CHUNK & (FIBD_CHUNK - 1)) == 0, "a chunk is found by masking an entry's address");

/*
 * Under AddressSanitizer (the unit tests) a taken entry is poisoned, as a
 * freed block would be: a hash slot or queue link left pointing at it is
 * caught. A chunk is unpoisoned before it is unmapped, as the kernel may map
 * the same addresses again for something else.
 */
#if defined(__SANITIZE_ADDRESS__)
#define FIBD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FIBD_ASAN 1
#endif
#endif
#ifdef FIBD_ASAN
#include <sanitizer/asan_interface.h>
#define FIBD_POISON(p, n)	ASAN_POISON_MEMORY_REGION((p), (n))
#define FIBD_UNPOISON(p, n)	ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define FIBD_POISON(p, n)	((void) (p), (void) (n))
#define FIBD_UNPOISON(p, n)	((void) (p), (void) (n))
#endif

struct fibd_entry {
  struct fibd_entry *next;		/* toward the tail */
  u32 hash;				/* key_hash(); routes only */
  u32 metric;
  u32 len;				/* bytes of the encoded message */
  u8 kind;				/* FIBD_E_* */
  u8 fam, plen;
  byte data[];				/* the prefix, then the message or a pointer to it */
};

static inline uint
prefix_len(u8 kind, u8 fam)
{
  return kind != FIBD_E_ROUTE ? 0 : fam == 4 ? 4 : 16;
}

static inline uint
entry_size(u8 kind, u8 fam)
{
  return kind == FIBD_E_ROUTE && fam == 4 ? FIBD_SMALL : FIBD_LARGE;
}

/* Message bytes the entry holds itself. */
static inline uint
inline_room(const struct fibd_entry *e)
{
  return entry_size(e->kind, e->fam) - offsetof(struct fibd_entry, data) -
    prefix_len(e->kind, e->fam);
}

static inline byte *
msg_area(struct fibd_entry *e)
{
  return e->data + prefix_len(e->kind, e->fam);
}

static inline byte *
ext_block(struct fibd_entry *e)
{
  byte *b;

  memcpy(&b, msg_area(e), sizeof(b));	/* not aligned */
  return b;
}

static inline const byte *
entry_msg(struct fibd_entry *e)
{
  return e->len > inline_room(e) ? ext_block(e) : msg_area(e);
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
 * The home slot is the hash's top bits. BIRD's mem_hash() does not fit: over
 * an IPv4 prefix its top bits come almost only from the last octet, 0 for
 * every /24 and shorter. Never 0, which marks a free slot.
 */
static inline u32
key_hash(u8 fam, u8 plen, const byte *prefix, u32 metric)
{
  u64 a, b;
  u32 h;

  memcpy(&a, prefix, 8);
  memcpy(&b, prefix + 8, 8);
  h = mix64(a ^ mix64(b ^ ((u64) metric << 16 | (u64) plen << 8 | fam))) >> 32;
  return h ? h : 1;
}

static inline uint
home(const struct fibd_hash *t, u32 h)
{
  return h >> (32 - t->order);
}

static inline uint
next_slot(const struct fibd_hash *t, uint i)
{
  return (i + 1) & ((1U << t->order) - 1);
}

static inline int
same_key(const struct fibd_entry *e, u8 fam, u8 plen, const byte *prefix, u32 metric)
{
  return e->fam == fam && e->plen == plen && e->metric == metric &&
    !memcmp(e->data, prefix, prefix_len(FIBD_E_ROUTE, fam));
}

/* Whether slot i of the old hash still holds its entry: not moved yet, nor taken out. */
static inline int
old_holds(const struct fibd_pending *q, uint i)
{
  return i >= q->grow_pos && q->old.entry[i];
}

/* The entry of this key, or NULL and in *ret_slot the slot of cur where it would go. */
static struct fibd_entry *
find(struct fibd_pending *q, u32 h, u8 fam, u8 plen, const byte *prefix, u32 metric,
     uint *ret_slot)
{
  struct fibd_hash *t = &q->cur;
  uint i;

  for (i = home(t, h); t->hash[i]; i = next_slot(t, i))
    if (t->hash[i] == h && same_key(t->entry[i], fam, plen, prefix, metric))
      return t->entry[i];
  *ret_slot = i;
  if (!q->old.order)
    return NULL;
  t = &q->old;
  for (i = home(t, h); t->hash[i]; i = next_slot(t, i))
    if (t->hash[i] == h && old_holds(q, i) && same_key(t->entry[i], fam, plen, prefix, metric))
      return t->entry[i];
  return NULL;
}

static void
put(struct fibd_hash *t, u32 h, struct fibd_entry *e)
{
  uint i = home(t, h);

  while (t->hash[i])
    i = next_slot(t, i);
  t->hash[i] = h;
  t->entry[i] = e;
}

/* Slots' entries are read only where their hash is set: only the hashes need clearing. */
static void
hash_alloc(struct fibd_pending *q, struct fibd_hash *t, uint order, int clear)
{
  t->order = order;
  t->hash = clear ? mb_allocz(q->pool, sizeof(u32) << order) : mb_alloc(q->pool, sizeof(u32) << order);
  t->entry = mb_alloc(q->pool, sizeof(struct fibd_entry *) << order);
}

static void
hash_free(struct fibd_hash *t)
{
  if (t->order)
  {
    mb_free(t->hash);
    mb_free(t->entry);
  }
  *t = (struct fibd_hash) { };
}

static inline u64
hash_bytes(const struct fibd_hash *t)
{
  return t->order ? (u64) (sizeof(u32) + sizeof(struct fibd_entry *)) << t->order : 0;
}

/* Take e's slot in t and move later entries of its run back, so no lookup stops short; 0 if not there. */
static int
remove_shift(struct fibd_hash *t, struct fibd_entry *e)
{
  u32 h = e->hash;
  uint i, j;

  for (i = home(t, h); t->hash[i] != h || t->entry[i] != e; i = next_slot(t, i))
    if (!t->hash[i])
      return 0;
  for (j = next_slot(t, i); t->hash[j]; j = next_slot(t, j))
  {
    uint k = home(t, t->hash[j]);
    /* j's entry may fill the hole at i unless its home lies cyclically in (i, j]. */
    if (j > i ? (k <= i || k > j) : (k <= i && k > j))
    {
      t->hash[i] = t->hash[j];
      t->entry[i] = t->entry[j];
      i = j;
    }
  }
  t->hash[i] = 0;
  return 1;
}

static void
hash_remove(struct fibd_pending *q, struct fibd_entry *e)
{
  struct fibd_hash *t = &q->old;
  uint i;

  if (remove_shift(&q->cur, e))
    return;
  /* Not moved yet: the slot stays taken, so that the lookups past it go on. */
  for (i = home(t, e->hash); t->hash[i] != e->hash || t->entry[i] != e || i < q->grow_pos;
       i = next_slot(t, i))
    ;
  t->entry[i] = NULL;
}

/*
 * Growing: once cur is over 3/4 full, a hash twice as large is allocated and
 * each operation clears FIBD_CLEAR_STEP of its slots; new keys go to cur
 * meanwhile. Then it is cur, the former cur is old, and each operation moves
 * FIBD_MOVE_STEP of old's slots into it; a lookup tries both. All at once,
 * growing took 7 ms at 200,000 pending changes and 14 ms at 400,000 (the set
 * alone, over malloc), as long as BIRD 2's loop waited; in BIRD, about half of
 * it was page faults of the new hash. A step takes microseconds. An operation
 * is a route change queued, replaced or taken. From C slots, clearing takes
 * C / 2048 operations (one at least), so cur takes at most that many keys more,
 * and moving C / 16, by when the new hash holds at most 0.82 C keys in 2 C
 * slots: none fills, and the next growing can only start once this one is done.
 */
static void
hash_grow(struct fibd_pending *q)
{
  if (q->next.order || q->old.order || q->cur.order >= FIBD_HASH_MAX ||
      q->routes <= (3U << q->cur.order) / 4)
    return;
  hash_alloc(q, &q->next, q->cur.order + 1, 0);
  q->grow_pos = 0;
}

static void
hash_step(struct fibd_pending *q)
{
  if (q->next.order)
  {
    uint size = 1U << q->next.order, n = MIN(FIBD_CLEAR_STEP, size - q->grow_pos);

    memset(q->next.hash + q->grow_pos, 0, n * sizeof(u32));
    if ((q->grow_pos += n) < size)
      return;
    q->old = q->cur;
    q->cur = q->next;
    q->next = (struct fibd_hash) { };
    q->grow_pos = 0;
  }
  else if (q->old.order)
  {
    struct fibd_hash *t = &q->old;
    uint size = 1U << t->order, end = MIN(q->grow_pos + FIBD_MOVE_STEP, size);

    for (uint i = q->grow_pos; i < end; i++)
      if (t->hash[i] && t->entry[i])
	put(&q->cur, t->hash[i], t->entry[i]);
    if ((q->grow_pos = end) < size)
      return;
    hash_free(t);
    q->grow_pos = 0;
  }
}

static void
drop_msg(struct fibd_pending *q, struct fibd_entry *e)
{
  if (e->len > inline_room(e))
  {
    mb_free(ext_block(e));
    q->ext_bytes -= e->len;
  }
  q->bytes -= e->len;
  e->len = 0;
}

static void
set_msg(struct fibd_pending *q, struct fibd_entry *e, const byte *msg, uint len)
{
  uint room = inline_room(e);

  if (len > room && len == e->len)
  {
    memcpy(ext_block(e), msg, len);	/* the same length: the same block */
    return;
  }
  drop_msg(q, e);
  if (len > room)
  {
    byte *b = mb_alloc(q->pool, len);
    memcpy(b, msg, len);
    memcpy(msg_area(e), &b, sizeof(b));
    q->ext_bytes += len;
  }
  else
    memcpy(msg_area(e), msg, len);
  e->len = len;
  q->bytes += len;
}

static struct fibd_chunk *
chunk_map(void)
{
  /* Twice the size, so that an aligned chunk lies inside; the rest goes back. */
  byte *m = mmap(NULL, 2 * FIBD_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  uintptr_t a;

  if (m == MAP_FAILED)
    die("fibd: mmap(%u) for the pending set failed: %m", 2 * FIBD_CHUNK);
  a = ((uintptr_t) m + FIBD_CHUNK - 1) & ~(uintptr_t) (FIBD_CHUNK - 1);
  if (a > (uintptr_t) m)
    munmap(m, a - (uintptr_t) m);
  if (a + FIBD_CHUNK < (uintptr_t) m + 2 * FIBD_CHUNK)
    munmap((void *) (a + FIBD_CHUNK), (uintptr_t) m + 2 * FIBD_CHUNK - (a + FIBD_CHUNK));
  FIBD_POISON((byte *) a + FIBD_CHUNK_START, FIBD_CHUNK - FIBD_CHUNK_START);
  return (struct fibd_chunk *) a;
}

static void
chunk_unmap(struct fibd_chunk *c)
{
  FIBD_UNPOISON(c, FIBD_CHUNK);
  munmap(c, FIBD_CHUNK);
}

static inline struct fibd_chunk *
chunk_of(const struct fibd_entry *e)
{
  return (struct fibd_chunk *) ((uintptr_t) e & ~(uintptr_t) (FIBD_CHUNK - 1));
}

/* An empty chunk: kept, for the next entries and for fibd_pending_trim. */
static void
chunk_keep(struct fibd_pending *q, struct fibd_chunk *c)
{
  c->next = q->kept;
  q->kept = c;
  q->n_kept++;
}

/* The last chunk kept, taken off the list (there is one). */
static struct fibd_chunk *
chunk_unkeep(struct fibd_pending *q)
{
  struct fibd_chunk *c = q->kept;

  q->kept = c->next;
  q->n_kept--;
  return c;
}

/* A zeroed entry, at the end of the chunk being filled or in a new one. */
static struct fibd_entry *
entry_alloc(struct fibd_pending *q, u8 kind, u8 fam)
{
  uint size = entry_size(kind, fam);
  struct fibd_chunk *c = q->fill;
  struct fibd_entry *e;

  if (!c || c->used + size > FIBD_CHUNK)
  {
    if (q->kept)
      c = chunk_unkeep(q);
    else
    {
      c = chunk_map();
      q->chunks++;
      q->peak_chunks = MAX(q->peak_chunks, q->chunks);
    }
    c->live = 0;
    c->used = FIBD_CHUNK_START;
    q->fill = c;
  }
  e = (void *) ((byte *) c + c->used);
  c->used += size;
  c->live++;
  FIBD_UNPOISON(e, size);
  memset(e, 0, size);
  return e;
}

static void
entry_free(struct fibd_pending *q, struct fibd_entry *e)
{
  struct fibd_chunk *c = chunk_of(e);

  FIBD_POISON(e, entry_size(e->kind, e->fam));
  if (--c->live)
    return;
  if (c == q->fill)
    c->used = FIBD_CHUNK_START;	/* the queue is empty: fill it again from the start */
  else
    chunk_keep(q, c);
}

static void
enqueue(struct fibd_pending *q, struct fibd_entry *e)
{
  if (q->tail)
    q->tail->next = e;
  else
    q->head = e;
  q->tail = e;
}

/* Free the entry at the head of the queue. */
static void
dequeue(struct fibd_pending *q)
{
  struct fibd_entry *e = q->head;

  q->head = e->next;
  if (!q->head)
    q->tail = NULL;
  if (e->kind == FIBD_E_ROUTE)
  {
    hash_remove(q, e);
    q->routes--;
    q->entry_bytes -= entry_size(e->kind, e->fam);
    hash_step(q);
  }
  drop_msg(q, e);
  entry_free(q, e);
}

/* Once nothing is pending, give back a hash grown for a large backlog. */
static void
hash_shrink(struct fibd_pending *q)
{
  if (!q->routes && (q->cur.order > FIBD_HASH_MIN || q->next.order || q->old.order))
  {
    hash_free(&q->cur);
    hash_free(&q->next);
    hash_free(&q->old);
    hash_alloc(q, &q->cur, FIBD_HASH_MIN, 1);
  }
}

void
fibd_pending_init(struct fibd_pending *q, pool *p)
{
  memset(q, 0, sizeof(*q));
  q->pool = p;
  hash_alloc(q, &q->cur, FIBD_HASH_MIN, 1);
}

/* Unmap at most max of the empty chunks kept beyond FIBD_CHUNK_KEEP; returns how many are left. */
uint
fibd_pending_trim(struct fibd_pending *q, uint max)
{
  for (; max && q->n_kept > FIBD_CHUNK_KEEP; max--)
  {
    chunk_unmap(chunk_unkeep(q));
    q->chunks--;
  }
  return fibd_pending_excess(q);
}

uint
fibd_pending_excess(const struct fibd_pending *q)
{
  return q->n_kept > FIBD_CHUNK_KEEP ? q->n_kept - FIBD_CHUNK_KEEP : 0;
}

/*
 * Unmap every chunk: the protocol's run is over. BIRD 2 has freed its pool by
 * then (the hash, long messages' blocks; BIRD 3 frees it right after), so
 * nothing else is touched: a chunk with queued entries goes when the walk has
 * counted the last of them.
 */
void
fibd_pending_free(struct fibd_pending *q)
{
  struct fibd_entry *e = q->head;
  struct fibd_chunk *c;

  while (e)
  {
    struct fibd_entry *next = e->next;
    c = chunk_of(e);
    if (!--c->live && c != q->fill)
      chunk_unmap(c);
    e = next;
  }
  if (q->fill)
    chunk_unmap(q->fill);
  while (q->kept)
    chunk_unmap(chunk_unkeep(q));
  q->head = q->tail = NULL;
  q->fill = NULL;
  q->chunks = 0;
}

/* Forget everything pending (the session is over); the peaks stay. */
void
fibd_pending_flush(struct fibd_pending *q)
{
  while (q->head)
    dequeue(q);
  hash_shrink(q);
}

/* A marker: queued in order, never coalesced. */
void
fibd_pending_mark(struct fibd_pending *q, const byte *msg, uint len)
{
  struct fibd_entry *e = entry_alloc(q, FIBD_E_MARK, 0);

  e->kind = FIBD_E_MARK;
  set_msg(q, e, msg, len);
  enqueue(q, e);
}

/*
 * Start loading the slots where the lookup of this key (as for
 * fibd_pending_route) begins. In a large hash they are cache misses: called
 * before the change is encoded, they overlap the encoding instead of
 * following it.
 */
void
fibd_pending_prefetch(const struct fibd_pending *q, u8 fam, u8 plen, const byte *key_prefix, u32 metric)
{
  byte prefix[16] = { 0 };
  uint i;

  memcpy(prefix, key_prefix, prefix_len(FIBD_E_ROUTE, fam));
  i = home(&q->cur, key_hash(fam, plen, prefix, metric));
  __builtin_prefetch(&q->cur.hash[i], 1);
  __builtin_prefetch(&q->cur.entry[i], 1);
}

/*
 * The encoded change msg for its key (fam is 4 or 6; prefix is 16 bytes, an
 * IPv4 one in the first 4): a new entry at the tail, or the pending entry of
 * the same key updated in place. Returns 0, or -1 if a new entry would pass
 * limit (nothing changed).
 */
int
fibd_pending_route(struct fibd_pending *q, uint limit, u8 fam, u8 plen, const byte *key_prefix,
		   u32 metric, const byte *msg, uint len)
{
  byte prefix[16] = { 0 };
  uint plen_bytes = prefix_len(FIBD_E_ROUTE, fam);
  u32 h;
  uint at = 0;
  struct fibd_entry *e;

  memcpy(prefix, key_prefix, plen_bytes);	/* what an entry keeps */
  h = key_hash(fam, plen, prefix, metric);
  e = find(q, h, fam, plen, prefix, metric, &at);

  if (e)
  {
    q->coalesced++;
    set_msg(q, e, msg, len);
    hash_step(q);
    return 0;
  }
  /* The second test only matters past any pending limit the configuration takes. */
  if (q->routes >= limit || q->routes >= FIBD_HASH_MAX_COUNT)
    return -1;
  e = entry_alloc(q, FIBD_E_ROUTE, fam);
  e->kind = FIBD_E_ROUTE;
  e->hash = h;
  e->fam = fam;
  e->plen = plen;
  e->metric = metric;
  memcpy(e->data, prefix, plen_bytes);
  q->entry_bytes += entry_size(FIBD_E_ROUTE, fam);
  set_msg(q, e, msg, len);
  enqueue(q, e);
  q->cur.hash[at] = h;
  q->cur.entry[at] = e;
  q->routes++;
  /* At most 3/4 full: a lookup that finds nothing then reads about 8 slots, 32 bytes. */
  hash_grow(q);
  hash_step(q);
  if (q->routes > q->peak)
  {
    q->peak = q->routes;
    q->peak_mem = MAX(q->peak_mem, q->entry_bytes + hash_bytes(&q->cur) + hash_bytes(&q->next) +
		      hash_bytes(&q->old) + q->ext_bytes);
  }
  return 0;
}

/* Move whole messages from the head of the queue into buf; returns the bytes moved. */
uint
fibd_pending_take(struct fibd_pending *q, byte *buf, uint room)
{
  uint len = 0;

  while (q->head && len + q->head->len <= room)
  {
    memcpy(buf + len, entry_msg(q->head), q->head->len);
    len += q->head->len;
    dequeue(q);
  }
  hash_shrink(q);
  return len;
}
