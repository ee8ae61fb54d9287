/*
 * slab's private part: the layout of chunks, pages and the slab (slab.c has the
 * design), shared by the allocator (slab.c) and its verification (slab_verify.c).
 */
#ifndef FIBD_SLAB_INTERNAL_H
#define FIBD_SLAB_INTERNAL_H

#include <assert.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "slab.h"

#define SLAB_PAGE_SHIFT 12
#define SLAB_PAGE_SIZE (1u << SLAB_PAGE_SHIFT)
#define SLAB_CHUNK_SHIFT 21
#define SLAB_CHUNK_SIZE ((size_t)1 << SLAB_CHUNK_SHIFT)
#define SLAB_CHUNK_PAGES (SLAB_CHUNK_SIZE / SLAB_PAGE_SIZE)
#define SLAB_HEADER_PAGES ((sizeof(struct chunk) + SLAB_PAGE_SIZE - 1) / SLAB_PAGE_SIZE)
#define SLAB_OBJ_PAGES (SLAB_CHUNK_PAGES - SLAB_HEADER_PAGES)
#define SLAB_CLEANUP_NS 500000
#define SLAB_BUCKETS 4096
#define SLAB_EMPTY_RESERVE 4
#define SLAB_VACANT_RESERVE 1
#define SLAB_MAG_SIZE 64
#define SLAB_REF_SLOT_BITS (SLAB_CHUNK_SHIFT - 3)
#define SLAB_REF_CHUNKS (1u << SLAB_REF_CHUNK_BITS)

_Static_assert(SLAB_REF_CHUNK_BITS + SLAB_REF_SLOT_BITS == 32, "a reference is 32 bits");

enum page_state { PG_RELEASED, PG_EMPTY, PG_PARTIAL, PG_FULL };
enum chunk_list { CL_NONE, CL_RELEASED, CL_VACANT };

struct page {
	struct page *next;
	struct page *prev;
	void *free;      /* freed slots, linked through their first word */
	uint16_t bump;   /* slots [bump, capacity) unused since the page was made */
	uint16_t used;
	uint16_t bucket;
	uint8_t state;
};

struct plist {
	struct page *head;
	struct page *tail;
};

struct chunk {
	struct slab *slab;
	struct chunk *all_next;
	struct chunk *all_prev;
	struct chunk *l_next; /* on the slab's released-chunks or vacant list */
	struct chunk *l_prev;
	uint8_t list;         /* enum chunk_list */
	uint16_t n_released;
	uint32_t id;          /* its number in the slab's ids[], for references */
	struct page *released; /* stack of released pages, through page->next */
	struct page pages[SLAB_CHUNK_PAGES]; /* [0, SLAB_HEADER_PAGES) unused: the header */
};

_Static_assert(sizeof(struct chunk) <= 8 * SLAB_PAGE_SIZE, "chunk header is a few pages");
_Static_assert(sizeof(struct page) == 32, "page head size is part of the metadata budget");

struct clist {
	struct chunk *head;
	struct chunk *tail;
};

struct slab {
	struct slab_chunks by; /* first: slab_deref (slab.h) reads it */
	const char *name;
	size_t obj_size;
	unsigned per_page;
	size_t max_bytes;
	struct plist partial;
	struct plist empty;
	struct plist full[SLAB_BUCKETS];
	uint64_t dirty[SLAB_BUCKETS / 64];
	unsigned n_dirty;
	unsigned cursor;  /* next bucket to look at for a dirty bit */
	int walking;      /* bucket being walked, or -1 */
	struct page *cur; /* next page to visit in that bucket */
	struct chunk *chunks; /* all chunks, through all_next */
	struct clist released_chunks;
	struct clist vacant;
	unsigned next_bucket;
	unsigned n_mag;
	void *mag[SLAB_MAG_SIZE];
	/* live counts objects the user holds; magazine objects are not live */
	uint64_t n_vacant, n_empty, n_partial, n_full, n_released, n_chunks, live;
	uint64_t cleanup_calls, cleanup_visits, cleanup_visits_max;
	uint64_t pages_returned, chunks_unmapped, alloc_failures;
#ifndef NDEBUG
	pthread_t owner;
#endif
};

_Static_assert(offsetof(struct slab, by) == 0, "slab_deref reads the chunks at the start of a slab");

#ifndef NDEBUG
#define ASSERT_OWNER(s) assert(pthread_equal((s)->owner, pthread_self()))
#else
#define ASSERT_OWNER(s) ((void)0)
#endif

/* ---- addressing ---- */

static inline struct chunk *
chunk_of(const void *p)
{
	return (struct chunk *)((uintptr_t)p & ~(uintptr_t)(SLAB_CHUNK_SIZE - 1));
}

static inline char *
page_base(const struct page *p)
{
	uintptr_t c = (uintptr_t)chunk_of(p);
	size_t index = ((uintptr_t)p - c - offsetof(struct chunk, pages)) / sizeof(struct page);

	return (char *)(c + index * SLAB_PAGE_SIZE);
}

#endif
