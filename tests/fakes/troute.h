#ifndef TEST_TROUTE_H
#define TEST_TROUTE_H

/* Routes for unit tests: made in a table, wanted by someone, through one gateway. */

#include "table.h"

/*
 * troute_want - the route dst/plen (metric 0, tos 0) of table t, made if
 * needed, with want = unicast via gw (of t's family). Fails the test when out of
 * memory.
 */
struct route *troute_want(struct rtable *t, const char *dst, unsigned plen, const char *gw);

#endif
