/* Stand-ins for feed_learn and feed_learn_refresh (learn's hooks) in unit tests of learn. */
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
	memset(l, 0, sizeof(*l));
	l->table = r->key.table;
	l->family = r->key.family;
	l->op = r->learn_op;
	l->type = r->type;
	l->plen = r->key.plen;
	l->protocol = r->protocol;
	memcpy(l->prefix, r->key.prefix.b, 16);
	l->metric = r->key.metric;
	l->n_nexthops = r->n_nexthops;
}

void
feed_learn_refresh(uint32_t table, uint8_t family, uint8_t phase)
{
	struct fake_learned *l;

	if (fake_n_learned++ >= 64)
		return;
	l = &fake_learned[fake_n_learned - 1];
	memset(l, 0, sizeof(*l));
	l->refresh = phase;
	l->table = table;
	l->family = family;
}
