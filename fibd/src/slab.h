/*
 * slab: a bounded allocator for fixed-size objects (route entries, trie nodes,
 * nexthop sets), one slab per object size. See slab.c for the design.
 *
 * Single-threaded: a slab belongs to the thread that made it (asserted in debug
 * builds). Objects are 8-byte aligned and carry no header.
 */
#ifndef FIBD_SLAB_H
#define FIBD_SLAB_H

#include <stdbool.h>
#include <assert.h>
#include <stddef.h>
#include <stdint.h>

/* Page-head visits one slab_cleanup call may make. */
#define SLAB_CLEANUP_VISITS_MAX 256
/* The largest object a slab holds. */
#define SLAB_OBJ_MAX 2048

struct slab;

struct slab_stats {
	const char *name;
	size_t obj_size;         /* after rounding up to 8 bytes */
	unsigned objs_per_page;
	uint64_t live;           /* objects allocated and not freed */
	uint64_t pages_full;     /* on the full list (some may hold frees not yet seen) */
	uint64_t pages_partial;
	uint64_t pages_empty;    /* resident, no objects: the reserve and pages awaiting release */
	uint64_t pages_released; /* handed back to the system, or never touched */
	uint64_t chunks;         /* mappings of SLAB_CHUNK_SIZE */
	uint64_t bytes_mapped;
	uint64_t bytes_resident; /* mapped minus released pages: an upper bound of RSS */
	uint64_t limit_bytes;    /* 0: unlimited */
	uint64_t dirty_buckets;
	uint64_t cleanup_calls;
	uint64_t cleanup_visits;     /* page heads visited, all calls */
	uint64_t cleanup_visits_max; /* in one call */
	uint64_t pages_returned;     /* madvise(MADV_DONTNEED) calls, all time */
	uint64_t chunks_unmapped;    /* all time */
	uint64_t alloc_failures;
};

/*
 * slab_new - a slab for objects of obj_size bytes (1..SLAB_OBJ_MAX), named for
 * statistics (borrowed: a string that outlives the slab). max_bytes bounds the
 * memory it maps (0: no bound). Caller owns the result; NULL with errno EINVAL or
 * ENOMEM.
 */
struct slab *slab_new(size_t obj_size, const char *name, size_t max_bytes);

/*
 * slab_destroy - unmap everything, whatever the state of cleanup; objects still
 * allocated become invalid. Accepts NULL; returns NULL.
 */
struct slab *slab_destroy(struct slab *s);

/* slab_alloc - an object (contents undefined), or NULL when the mapping or the limit fails. */
void *slab_alloc(struct slab *s);

/* slab_free - give back an object of this slab. O(1); the page is tidied by cleanup. */
void slab_free(struct slab *s, void *obj);

/*
 * References: an object as 32 bits, for structures that hold many links (trie
 * nodes). A reference is the object's chunk, numbered within its slab
 * (SLAB_REF_CHUNK_BITS), and its 8-byte slot in the chunk; 0 is NULL (no object
 * starts a chunk: its header does). Valid while the object is allocated. A slab
 * maps at most 2^SLAB_REF_CHUNK_BITS - 1 chunks (almost 32 GiB) at once.
 *
 * slab_ref - the reference of obj (NULL: 0). slab_deref - its object (0: NULL).
 * slab_at - the object of a reference known not to be 0.
 */
#define SLAB_REF_CHUNK_BITS 14
uint32_t slab_ref(const struct slab *s, const void *obj);

/*
 * The start of every struct slab: its chunks by number. slab_deref reads it
 * inline, as a trie walk or a route list follows a reference at every step.
 */
struct slab_chunks {
	void **ids;     /* [0] unused, NULL: a free number */
	uint32_t n_ids; /* entries of ids[] */
};

static inline void *
slab_at(const struct slab *s, uint32_t ref)
{
	const struct slab_chunks *by = (const struct slab_chunks *)(const void *)s;
	uint32_t chunk = ref >> (32 - SLAB_REF_CHUNK_BITS);

	assert(ref && chunk < by->n_ids && by->ids[chunk]);
	return (char *)by->ids[chunk] + ((size_t)(ref & ((1u << (32 - SLAB_REF_CHUNK_BITS)) - 1)) << 3);
}

static inline void *
slab_deref(const struct slab *s, uint32_t ref)
{
	return ref ? slab_at(s, ref) : NULL;
}

/*
 * slab_cleanup - one bounded step of tidying: recently freed objects held for
 * quick reuse go back to their pages, pages that got frees while full move
 * to the partial list, empty pages beyond a small reserve go back to the system,
 * idle mappings are unmapped. Visits at most SLAB_CLEANUP_VISITS_MAX page heads
 * and resumes where it stopped. Returns the visits it made.
 */
int slab_cleanup(struct slab *s);

/* slab_cleanup_pending - whether slab_cleanup has work left. */
bool slab_cleanup_pending(const struct slab *s);

void slab_get_stats(const struct slab *s, struct slab_stats *ret);

/* Bytes mapped by all slabs of this process. */
uint64_t slab_mapped_total(void);

/*
 * slab_verify - walk every page and check the slab's invariants (list membership,
 * counts). Returns 0 if consistent, -EUCLEAN otherwise. *ret_hidden_free (if not
 * NULL) is the number of full-list pages holding free slots, which cleanup has not
 * seen yet. For tests; it is O(pages).
 */
int slab_verify(const struct slab *s, uint64_t *ret_hidden_free);

#endif
