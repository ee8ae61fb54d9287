/*
 * BIRD's pools, memory blocks and slabs, as bird-glue's pending set calls them,
 * over malloc (tests/fakes/bird_resource.c). The fake counts what is allocated,
 * so a test can tell what the code under test frees itself.
 */
#ifndef FAKE_BIRD_LIB_RESOURCE_H
#define FAKE_BIRD_LIB_RESOURCE_H

#include <stddef.h>

typedef struct pool pool;
typedef struct slab slab;

void *mb_alloc(pool *p, unsigned size);
void *mb_allocz(pool *p, unsigned size);
void mb_free(void *m);

slab *sl_new(pool *p, unsigned size);
void *sl_allocz(slab *s);
void sl_free(void *m);

/* A pool, and freeing it with everything still allocated from it (BIRD's rfree). */
pool *fake_pool_new(void);
void fake_pool_free(pool *p);

/* Blocks (slabs' own included) and slab objects allocated and not yet freed. */
extern long fake_mb_live, fake_sl_live;

#endif
