/*
 * BIRD's pools, memory blocks and slabs, as bird-glue's pending set calls them,
 * over malloc (lib/resource.h). As in BIRD, freeing a pool frees whatever was
 * allocated from it and not freed yet.
 */
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "nest/bird.h"
#include "lib/resource.h"

/* Ahead of each block: the pool's list. */
struct blk {
	alignas(max_align_t) struct blk *prev, *next;
	int slab_object;
};

struct pool {
	struct blk head;
};

struct slab {
	pool *p;
	unsigned size;
};

long fake_mb_live, fake_sl_live;

static void *
blk_alloc(pool *p, unsigned size, int slab_object)
{
	struct blk *b = malloc(sizeof(*b) + size);

	if (!b)
		abort();
	b->slab_object = slab_object;
	b->next = p->head.next;
	b->prev = &p->head;
	b->next->prev = b;
	p->head.next = b;
	if (slab_object)
		fake_sl_live++;
	else
		fake_mb_live++;
	return b + 1;
}

static void
blk_free(struct blk *b)
{
	b->prev->next = b->next;
	b->next->prev = b->prev;
	if (b->slab_object)
		fake_sl_live--;
	else
		fake_mb_live--;
	free(b);
}

pool *
fake_pool_new(void)
{
	pool *p = malloc(sizeof(*p));

	if (!p)
		abort();
	p->head.next = p->head.prev = &p->head;
	return p;
}

void
fake_pool_free(pool *p)
{
	while (p->head.next != &p->head)
		blk_free(p->head.next);
	free(p);
}

void *
mb_alloc(pool *p, unsigned size)
{
	return blk_alloc(p, size, 0);
}

void *
mb_allocz(pool *p, unsigned size)
{
	return memset(mb_alloc(p, size), 0, size);
}

void
mb_free(void *m)
{
	if (m)
		blk_free((struct blk *)m - 1);
}

slab *
sl_new(pool *p, unsigned size)
{
	slab *s = mb_alloc(p, sizeof(*s));

	s->p = p;
	s->size = size;
	return s;
}

void *
sl_allocz(slab *s)
{
	return memset(blk_alloc(s->p, s->size, 1), 0, s->size);
}

void
sl_free(void *m)
{
	blk_free((struct blk *)m - 1);
}
