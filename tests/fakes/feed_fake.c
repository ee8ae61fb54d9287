/* A stand-in for feed's repair walk in unit tests of the sync engine's parser. */
#include <string.h>

#include "feed.h"
#include "feed_fake.h"

unsigned fake_repairs;

void
feed_repair(struct rtable *t, void (*done)(void))
{
	(void)t;
	fake_repairs++;
	done();
}

struct fake_learned fake_learned[64];
unsigned fake_n_learned;

void
feed_learn(const struct ps_route *r)
{
	struct fake_learned *l;

	if (fake_n_learned++ >= 64)
		return;
	l = &fake_learned[fake_n_learned - 1];
	l->op = r->learn_op;
	l->type = r->type;
	l->plen = r->key.plen;
	l->protocol = r->protocol;
	memcpy(l->prefix, r->key.prefix.b, 16);
	l->metric = r->key.metric;
	l->n_nexthops = r->n_nexthops;
}
