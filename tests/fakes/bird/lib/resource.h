/*
 * BIRD's pools and memory blocks, as bird-glue's pending set calls them,
 * over malloc (tests/fakes/bird_resource.c). The fake counts what is allocated,
 * so a test can tell what the code under test frees itself.
 */
#ifndef FAKE_BIRD_LIB_RESOURCE_H
#define FAKE_BIRD_LIB_RESOURCE_H

#include <stddef.h>

typedef struct pool pool;

void *mb_alloc(pool *p, unsigned size);
void *mb_allocz(pool *p, unsigned size);
void mb_free(void *m);

/* A pool, and freeing it with everything still allocated from it (BIRD's rfree). */
pool *fake_pool_new(void);
void fake_pool_free(pool *p);

/* Blocks allocated and not yet freed. */
extern long fake_mb_live;

#endif
