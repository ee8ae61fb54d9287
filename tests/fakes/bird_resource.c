/*
 * BIRD's pools and memory blocks, as bird-glue's pending set calls them, over
 * malloc (lib/resource.h), and its die(). As in BIRD, freeing a pool frees
 * whatever was allocated from it and not freed yet.
 */
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nest/bird.h"
#include "lib/resource.h"

/* Ahead of each block: the pool's list. */
struct blk {
	alignas(max_align_t) struct blk *prev, *next;
};

struct pool {
	struct blk head;
};

long fake_mb_live;

static void *
blk_alloc(pool *p, unsigned size)
{
	struct blk *b = malloc(sizeof(*b) + size);

	if (!b)
		abort();
	b->next = p->head.next;
	b->prev = &p->head;
	b->next->prev = b;
	p->head.next = b;
	fake_mb_live++;
	return b + 1;
}

static void
blk_free(struct blk *b)
{
	b->prev->next = b->next;
	b->next->prev = b->prev;
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
	return blk_alloc(p, size);
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

void
die(const char *msg, ...)
{
	va_list ap;

	va_start(ap, msg);
	vfprintf(stderr, msg, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}
