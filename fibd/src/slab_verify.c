/*
 * slab_verify: the allocator's invariants checked by walking every page, for
 * tests (O(pages)).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "slab-internal.h"

static bool
in_list(const struct plist *l, const struct page *p, uint64_t *count)
{
	bool found = false;
	uint64_t n = 0;

	for (const struct page *q = l->head; q; q = q->next) {
		if (q == p)
			found = true;
		if (!q->next && q != l->tail)
			return false;
		n++;
	}
	if (count)
		*count = n;
	return found || !p;
}

/* The slots a page can still hand out, counted from its free list and bump index. */
static int
free_slots(const struct slab *s, const struct page *p, unsigned *ret)
{
	unsigned n = s->per_page - p->bump;
	const char *base = page_base(p);

	for (void *f = p->free; f; f = *(void **)f) {
		if ((const char *)f < base || (const char *)f >= base + (size_t)p->bump * s->obj_size)
			return -1;
		if (++n > s->per_page)
			return -1;
	}
	*ret = n;
	return 0;
}

int
slab_verify(const struct slab *s, uint64_t *ret_hidden_free)
{
	uint64_t counts[4] = { 0 }, live = 0, hidden = 0, n, total;
	uint64_t vacant = 0;

	uint64_t numbered = 0;

	for (uint32_t id = 1; id < s->by.n_ids; id++)
		numbered += s->by.ids[id] != NULL;
	if (numbered != s->n_chunks)
		return -EUCLEAN;
	for (const struct chunk *c = s->chunks; c; c = c->all_next) {
		unsigned released = 0;
		if (c->slab != s || c->id == 0 || c->id >= s->by.n_ids || s->by.ids[c->id] != c)
			return -EUCLEAN;
		for (size_t i = SLAB_HEADER_PAGES; i < SLAB_CHUNK_PAGES; i++) {
			const struct page *p = &c->pages[i];
			unsigned fs;
			if (p->state > PG_FULL)
				return -EUCLEAN;
			counts[p->state]++;
			if (p->state == PG_RELEASED) {
				released++;
				if (p->used)
					return -EUCLEAN;
				continue;
			}
			if (free_slots(s, p, &fs) < 0 || fs != s->per_page - p->used)
				return -EUCLEAN;
			live += p->used;
			switch (p->state) {
			case PG_EMPTY:
				if (p->used || !in_list(&s->empty, p, NULL))
					return -EUCLEAN;
				break;
			case PG_PARTIAL:
				if (!p->used || p->used >= s->per_page ||
				    !in_list(&s->partial, p, NULL))
					return -EUCLEAN;
				break;
			case PG_FULL:
				if (!in_list(&s->full[p->bucket], p, NULL))
					return -EUCLEAN;
				if (p->used < s->per_page) {
					/* Seen by cleanup later: a dirty bucket, or ahead in the walk. */
					bool dirty = s->dirty[p->bucket / 64] & (1ull << (p->bucket % 64));
					bool ahead = false;
					if (s->walking == p->bucket)
						for (const struct page *q = s->cur; q; q = q->next)
							ahead |= q == p;
					if (!dirty && !ahead)
						return -EUCLEAN;
					hidden++;
				}
				break;
			}
		}
		if (released != c->n_released)
			return -EUCLEAN;
		vacant += released == SLAB_OBJ_PAGES;
	}
	if (live != s->live + s->n_mag || counts[PG_RELEASED] != s->n_released ||
	    counts[PG_EMPTY] != s->n_empty || counts[PG_PARTIAL] != s->n_partial ||
	    counts[PG_FULL] != s->n_full || vacant != s->n_vacant)
		return -EUCLEAN;
	total = 0;
	for (unsigned b = 0; b < SLAB_BUCKETS; b++) {
		if (!in_list(&s->full[b], NULL, &n))
			return -EUCLEAN;
		total += n;
	}
	if (total != s->n_full)
		return -EUCLEAN;
	if (!in_list(&s->partial, NULL, &n) || n != s->n_partial ||
	    !in_list(&s->empty, NULL, &n) || n != s->n_empty)
		return -EUCLEAN;
	if (ret_hidden_free)
		*ret_hidden_free = hidden;
	return 0;
}
