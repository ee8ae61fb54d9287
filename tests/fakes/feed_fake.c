/* A stand-in for feed's repair walk in unit tests of the sync engine's parser. */
#include "feed.h"

void
feed_repair(struct rtable *t, void (*done)(void))
{
	(void)t;
	done();
}

void
feed_learn(const struct ps_route *r)
{
	(void)r;
}
