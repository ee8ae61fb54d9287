/* A stand-in for feed_learn (learn's sink) in unit tests of learn. */
#include <string.h>

#include "feed.h"
#include "feed_fake.h"

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
