/*
 * slab: fixed-size objects on pages carved from large mappings, with bounded,
 * resumable cleanup.
 *
 * Memory. A slab maps chunks of SLAB_CHUNK_SIZE (2 MiB), aligned to their size,
 * so the chunk of any object is its address with the low bits cleared. Each chunk
 * is SLAB_CHUNK_PAGES pages of SLAB_PAGE_SIZE (4 KiB, the system's page, so that a
 * page with no live object can go back on its own); the first SLAB_HEADER_PAGES
 * hold the chunk header and the page heads, the others hold objects back to back
 * with no per-object header. A page head keeps the page's free slots: a list threaded
 * through freed objects, plus a bump index below which slots have been used since
 * the page was last (re)made.
 *
 * Page states and where each page lives:
 *   PARTIAL   on the partial list; 1 <= used < capacity. alloc takes the head.
 *   FULL      in one of SLAB_BUCKETS full lists (its bucket is fixed when the
 *             chunk is mapped, round robin). A free on a full page only links
 *             the slot and sets the bucket's dirty bit: O(1), no list moves.
 *   EMPTY     on the empty list; used == 0, still resident.
 *   RELEASED  on its chunk's released stack; handed back with MADV_DONTNEED (or
 *             never touched). A chunk whose pages are all released is vacant.
 *
 * A magazine of up to SLAB_MAG_SIZE recently freed objects sits in front of the
 * pages, as in Bonwick's slab allocator: free pushes onto it, alloc pops from it,
 * so alloc/free churn reuses hot objects without touching a page head. Objects in
 * the magazine still count as used on their pages; cleanup hands them back.
 *
 * alloc: the magazine; else the partial head; else, if frees on full pages wait
 * for cleanup, one bounded cleanup step to find them; else an empty page; else a
 * released page (from a partly released chunk first, then a vacant one); else a
 * new chunk. So freed slots are reused before anything new is touched or mapped.
 * free: O(1) as above; a partial page that becomes empty moves to the empty list
 * at once.
 *
 * Cleanup (slab_cleanup), at most SLAB_CLEANUP_VISITS_MAX page-head visits per
 * call, resuming where it stopped:
 *   0. hand the magazine's objects back to their pages (at most SLAB_MAG_SIZE);
 *   1. walk only the dirty full buckets; pages with free slots move to the
 *      partial (or empty) list. A bucket's dirty bit is cleared before its walk,
 *      so a free behind the cursor sets it again and the bucket is walked again.
 *   2. release empty pages beyond SLAB_EMPTY_RESERVE, coldest first;
 *   3. unmap vacant chunks beyond SLAB_VACANT_RESERVE.
 * The reserves keep alloc/free ping-pong at a page boundary from mapping and
 * unmapping, or faulting pages in and out, over and over.
 *
 * Metadata per slab: 4096 bucket list heads of 16 bytes plus a 512-byte dirty
 * bitmap (64.5 KiB), and a magazine of 64 pointers; per page a 32-byte head
 * (0.8% of a 4 KiB page), kept in the chunk's header pages (5 of 512 pages).
 *
 * Time: besides the visit budget, a cleanup call stops after SLAB_CLEANUP_NS
 * (returning pages is one madvise each), checked every 32 visits.
 *
 * Single-threaded by design (fibd has one loop); debug builds assert that every
 * call comes from the thread that made the slab.
 *
 * The layout is in slab-internal.h; slab_verify (for tests) in slab_verify.c.
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "slab-internal.h"

static uint64_t mapped_total;

/* ---- lists ---- */

static void
plist_push_head(struct plist *l, struct page *p)
{
	p->prev = NULL;
	p->next = l->head;
	if (l->head)
		l->head->prev = p;
	else
		l->tail = p;
	l->head = p;
}

static void
plist_unlink(struct plist *l, struct page *p)
{
	if (p->prev)
		p->prev->next = p->next;
	else
		l->head = p->next;
	if (p->next)
		p->next->prev = p->prev;
	else
		l->tail = p->prev;
	p->next = p->prev = NULL;
}

static void
clist_push_head(struct clist *l, struct chunk *c)
{
	c->l_prev = NULL;
	c->l_next = l->head;
	if (l->head)
		l->head->l_prev = c;
	else
		l->tail = c;
	l->head = c;
}

static void
clist_unlink(struct clist *l, struct chunk *c)
{
	if (c->l_prev)
		c->l_prev->l_next = c->l_next;
	else
		l->head = c->l_next;
	if (c->l_next)
		c->l_next->l_prev = c->l_prev;
	else
		l->tail = c->l_prev;
	c->l_next = c->l_prev = NULL;
}

/* ---- chunks ---- */

/* Move a chunk to the list its count of released pages calls for. */
static void
chunk_relist(struct slab *s, struct chunk *c)
{
	uint8_t want = c->n_released == SLAB_OBJ_PAGES ? CL_VACANT
	    : c->n_released ? CL_RELEASED
			    : CL_NONE;

	if (want == c->list)
		return;
	if (c->list == CL_RELEASED)
		clist_unlink(&s->released_chunks, c);
	else if (c->list == CL_VACANT) {
		clist_unlink(&s->vacant, c);
		s->n_vacant--;
	}
	if (want == CL_RELEASED)
		clist_push_head(&s->released_chunks, c);
	else if (want == CL_VACANT) {
		clist_push_head(&s->vacant, c);
		s->n_vacant++;
	}
	c->list = want;
}

/* A free number for a new chunk (growing ids[]), or 0 with errno ENOMEM. */
static uint32_t
chunk_id_take(struct slab *s)
{
	uint32_t id, n;
	void **ids;

	for (id = 1; id < s->by.n_ids; id++)
		if (!s->by.ids[id])
			return id;
	if (s->by.n_ids >= SLAB_REF_CHUNKS) {
		errno = ENOMEM;
		return 0;
	}
	n = s->by.n_ids ? s->by.n_ids * 2 : 16;
	if (n > SLAB_REF_CHUNKS)
		n = SLAB_REF_CHUNKS;
	if (!(ids = realloc(s->by.ids, n * sizeof(*ids))))
		return 0;
	memset(ids + s->by.n_ids, 0, (n - s->by.n_ids) * sizeof(*ids));
	id = s->by.n_ids ? s->by.n_ids : 1;
	s->by.ids = ids;
	s->by.n_ids = n;
	return id;
}

static struct chunk *
chunk_map(struct slab *s)
{
	char *raw, *base;
	size_t head;
	struct chunk *c;
	uint32_t id;

	if (s->max_bytes && (s->n_chunks + 1) * SLAB_CHUNK_SIZE > s->max_bytes) {
		errno = ENOMEM;
		return NULL;
	}
	if (!(id = chunk_id_take(s)))
		return NULL;
	/* Map twice the size and trim, to get a chunk aligned to its size. */
	raw = mmap(NULL, 2 * SLAB_CHUNK_SIZE, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	base = (char *)(((uintptr_t)raw + SLAB_CHUNK_SIZE - 1) & ~(uintptr_t)(SLAB_CHUNK_SIZE - 1));
	head = (size_t)(base - raw);
	if (head)
		munmap(raw, head);
	munmap(base + SLAB_CHUNK_SIZE, SLAB_CHUNK_SIZE - head);

	c = (struct chunk *)base;
	c->slab = s;
	c->id = id;
	s->by.ids[id] = c;
	c->all_prev = NULL;
	c->all_next = s->chunks;
	if (s->chunks)
		s->chunks->all_prev = c;
	s->chunks = c;
	c->list = CL_NONE;
	c->released = NULL;
	/* Stack the pages so that the lowest is used first. */
	for (size_t i = SLAB_CHUNK_PAGES - 1; i >= SLAB_HEADER_PAGES; i--) {
		struct page *p = &c->pages[i];
		p->state = PG_RELEASED;
		p->used = 0;
		p->bucket = (uint16_t)(s->next_bucket++ % SLAB_BUCKETS);
		p->prev = NULL;
		p->next = c->released;
		c->released = p;
	}
	c->n_released = SLAB_OBJ_PAGES;
	s->n_released += SLAB_OBJ_PAGES;
	s->n_chunks++;
	mapped_total += SLAB_CHUNK_SIZE;
	chunk_relist(s, c);
	return c;
}

static void
chunk_unmap(struct slab *s, struct chunk *c)
{
	c->n_released = 0;
	chunk_relist(s, c); /* off the vacant list */
	if (c->all_prev)
		c->all_prev->all_next = c->all_next;
	else
		s->chunks = c->all_next;
	if (c->all_next)
		c->all_next->all_prev = c->all_prev;
	s->n_released -= SLAB_OBJ_PAGES;
	s->n_chunks--;
	s->chunks_unmapped++;
	mapped_total -= SLAB_CHUNK_SIZE;
	s->by.ids[c->id] = NULL;
	munmap(c, SLAB_CHUNK_SIZE);
}

/* ---- pages ---- */

/* A page to allocate from: empty, else released, else from a new chunk. */
static struct page *
page_take(struct slab *s)
{
	struct page *p = s->empty.head;

	if (p) {
		plist_unlink(&s->empty, p);
		s->n_empty--;
	} else {
		struct chunk *c = s->released_chunks.head ? s->released_chunks.head : s->vacant.head;
		if (!c && !(c = chunk_map(s)))
			return NULL;
		p = c->released;
		c->released = p->next;
		c->n_released--;
		s->n_released--;
		chunk_relist(s, c);
	}
	p->free = NULL;
	p->bump = 0;
	p->used = 0;
	p->state = PG_PARTIAL;
	plist_push_head(&s->partial, p);
	s->n_partial++;
	return p;
}

static void
page_release(struct slab *s, struct page *p)
{
	struct chunk *c = chunk_of(p);

	/* The page's head lives in the header pages, so its contents may go. */
	madvise(page_base(p), SLAB_PAGE_SIZE, MADV_DONTNEED);
	s->pages_returned++;
	p->state = PG_RELEASED;
	p->prev = NULL;
	p->next = c->released;
	c->released = p;
	c->n_released++;
	s->n_released++;
	chunk_relist(s, c);
}

static unsigned walk_dirty(struct slab *s, unsigned visits);
static void cleanup_account(struct slab *s, unsigned visits);

/* ---- public ---- */

struct slab *
slab_new(size_t obj_size, const char *name, size_t max_bytes)
{
	struct slab *s;

	if (obj_size == 0 || obj_size > SLAB_OBJ_MAX) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->name = name ? name : "slab";
	s->obj_size = (obj_size + 7) & ~(size_t)7;
	s->per_page = (unsigned)(SLAB_PAGE_SIZE / s->obj_size);
	s->max_bytes = max_bytes;
	s->walking = -1;
#ifndef NDEBUG
	s->owner = pthread_self();
#endif
	return s;
}

struct slab *
slab_destroy(struct slab *s)
{
	if (!s)
		return NULL;
	ASSERT_OWNER(s);
	while (s->chunks) {
		struct chunk *c = s->chunks;
		s->chunks = c->all_next;
		mapped_total -= SLAB_CHUNK_SIZE;
		munmap(c, SLAB_CHUNK_SIZE);
	}
	free(s->by.ids);
	free(s);
	return NULL;
}

uint32_t
slab_ref(const struct slab *s, const void *obj)
{
	const struct chunk *c;

	if (!obj)
		return 0;
	c = chunk_of(obj);
	assert(c->slab == s && s->by.ids[c->id] == c);
	assert((((uintptr_t)obj - (uintptr_t)c) & 7) == 0);
	(void)s;
	return c->id << SLAB_REF_SLOT_BITS | (uint32_t)(((uintptr_t)obj - (uintptr_t)c) >> 3);
}

void *
slab_alloc(struct slab *s)
{
	struct page *p;
	void *obj;

	ASSERT_OWNER(s);
	if (s->n_mag) {
		s->live++;
		return s->mag[--s->n_mag];
	}
	p = s->partial.head;
	if (!p && (s->n_dirty || s->walking >= 0)) {
		/* Frees on full pages wait for cleanup: find them before taking a new page. */
		s->cleanup_calls++;
		cleanup_account(s, walk_dirty(s, 0));
		p = s->partial.head;
	}
	if (!p && !(p = page_take(s))) {
		s->alloc_failures++;
		return NULL;
	}
	if (p->free) {
		obj = p->free;
		p->free = *(void **)obj;
	} else {
		obj = page_base(p) + (size_t)p->bump * s->obj_size;
		p->bump++;
	}
	p->used++;
	s->live++;
	if (p->used == s->per_page) {
		plist_unlink(&s->partial, p);
		s->n_partial--;
		p->state = PG_FULL;
		plist_push_head(&s->full[p->bucket], p);
		s->n_full++;
	}
	return obj;
}

/* Give a slot back to its page. */
static void
page_put(struct slab *s, void *obj)
{
	struct chunk *c = chunk_of(obj);
	struct page *p = &c->pages[((uintptr_t)obj - (uintptr_t)c) >> SLAB_PAGE_SHIFT];

	assert(c->slab == s);
	assert(p >= &c->pages[SLAB_HEADER_PAGES]);
	assert(p->state == PG_FULL || p->state == PG_PARTIAL);
	assert(p->used > 0);
	assert(((uintptr_t)obj - (uintptr_t)page_base(p)) % s->obj_size == 0);

	*(void **)obj = p->free;
	p->free = obj;
	p->used--;
	if (p->state == PG_FULL) {
		uint64_t bit = 1ull << (p->bucket % 64);
		if (!(s->dirty[p->bucket / 64] & bit)) {
			s->dirty[p->bucket / 64] |= bit;
			s->n_dirty++;
		}
	} else if (p->used == 0) {
		plist_unlink(&s->partial, p);
		s->n_partial--;
		p->state = PG_EMPTY;
		plist_push_head(&s->empty, p);
		s->n_empty++;
	}
}

void
slab_free(struct slab *s, void *obj)
{
	ASSERT_OWNER(s);
	assert(chunk_of(obj)->slab == s);
	s->live--;
	if (s->n_mag < SLAB_MAG_SIZE)
		s->mag[s->n_mag++] = obj;
	else
		page_put(s, obj);
}

/* The first dirty bucket at or after the cursor, wrapping; there is one. */
static unsigned
next_dirty(const struct slab *s)
{
	unsigned b = s->cursor;

	for (unsigned n = 0; n <= SLAB_BUCKETS / 64; n++) {
		uint64_t word = s->dirty[b / 64] & (~0ull << (b % 64));
		if (word)
			return (b & ~63u) + (unsigned)__builtin_ctzll(word);
		b = ((b / 64 + 1) * 64) % SLAB_BUCKETS;
	}
	assert(!"dirty count without a dirty bit");
	return 0;
}

/*
 * Step 1 of cleanup: walk dirty full buckets until the budget (counting `visits`
 * already made) is spent. Returns the visits made in total.
 */
static unsigned
walk_dirty(struct slab *s, unsigned visits)
{
	while (visits < SLAB_CLEANUP_VISITS_MAX) {
		struct plist *bucket;
		if (s->walking < 0) {
			unsigned b;
			if (!s->n_dirty)
				break;
			b = next_dirty(s);
			s->dirty[b / 64] &= ~(1ull << (b % 64));
			s->n_dirty--;
			s->walking = (int)b;
			s->cur = s->full[b].head;
			s->cursor = (b + 1) % SLAB_BUCKETS;
		}
		bucket = &s->full[s->walking];
		while (s->cur && visits < SLAB_CLEANUP_VISITS_MAX) {
			struct page *p = s->cur;
			s->cur = p->next;
			visits++;
			if (p->used == s->per_page)
				continue;
			plist_unlink(bucket, p);
			s->n_full--;
			if (p->used == 0) {
				p->state = PG_EMPTY;
				plist_push_head(&s->empty, p);
				s->n_empty++;
			} else {
				p->state = PG_PARTIAL;
				plist_push_head(&s->partial, p);
				s->n_partial++;
			}
		}
		if (!s->cur)
			s->walking = -1;
	}
	return visits;
}

static uint64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Within budget: visits under the maximum and, checked every 32 visits, time left. */
static bool
budget_left(unsigned visits, uint64_t deadline)
{
	if (visits >= SLAB_CLEANUP_VISITS_MAX)
		return false;
	return visits % 32 != 0 || visits == 0 || now_ns() < deadline;
}

static void
cleanup_account(struct slab *s, unsigned visits)
{
	s->cleanup_visits += visits;
	if (visits > s->cleanup_visits_max)
		s->cleanup_visits_max = visits;
}

int
slab_cleanup(struct slab *s)
{
	uint64_t deadline = now_ns() + SLAB_CLEANUP_NS;
	unsigned visits = 0;

	ASSERT_OWNER(s);
	s->cleanup_calls++;

	/* 0. The magazine's objects go back to their pages, so that pages can empty. */
	while (s->n_mag) {
		page_put(s, s->mag[--s->n_mag]);
		visits++;
	}

	/* 1. Full pages that got frees, in dirty buckets only. */
	visits = walk_dirty(s, visits);

	/* 2. Empty pages beyond the reserve go back to the system, coldest first. */
	while (budget_left(visits, deadline) && s->n_empty > SLAB_EMPTY_RESERVE) {
		struct page *p = s->empty.tail;
		plist_unlink(&s->empty, p);
		s->n_empty--;
		visits++;
		page_release(s, p);
	}

	/* 3. Vacant chunks beyond the reserve are unmapped. */
	while (budget_left(visits, deadline) && s->n_vacant > SLAB_VACANT_RESERVE) {
		visits++;
		chunk_unmap(s, s->vacant.tail);
	}

	cleanup_account(s, visits);
	return (int)visits;
}

bool
slab_cleanup_pending(const struct slab *s)
{
	return s->n_mag || s->n_dirty || s->walking >= 0 || s->n_empty > SLAB_EMPTY_RESERVE ||
	    s->n_vacant > SLAB_VACANT_RESERVE;
}

void
slab_get_stats(const struct slab *s, struct slab_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->name = s->name;
	ret->obj_size = s->obj_size;
	ret->objs_per_page = s->per_page;
	ret->live = s->live;
	ret->pages_full = s->n_full;
	ret->pages_partial = s->n_partial;
	ret->pages_empty = s->n_empty;
	ret->pages_released = s->n_released;
	ret->chunks = s->n_chunks;
	ret->bytes_mapped = s->n_chunks * SLAB_CHUNK_SIZE;
	ret->bytes_resident = ret->bytes_mapped - s->n_released * SLAB_PAGE_SIZE;
	ret->limit_bytes = s->max_bytes;
	ret->dirty_buckets = s->n_dirty;
	ret->cleanup_calls = s->cleanup_calls;
	ret->cleanup_visits = s->cleanup_visits;
	ret->cleanup_visits_max = s->cleanup_visits_max;
	ret->pages_returned = s->pages_returned;
	ret->chunks_unmapped = s->chunks_unmapped;
	ret->alloc_failures = s->alloc_failures;
}

uint64_t
slab_mapped_total(void)
{
	return mapped_total;
}
