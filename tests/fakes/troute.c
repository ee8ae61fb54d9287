/* Routes for unit tests (troute.h). */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "troute.h"

struct route *
troute_want(struct rtable *t, const char *dst, unsigned plen, const char *gw)
{
	static struct ps_route pr;
	int af = t->family == PS_FAM_V4 ? AF_INET : AF_INET6;
	union ps_addr p = { 0 };
	struct route *r;

	assert_int_equal(inet_pton(af, dst, p.b), 1);
	r = table_insert(t, &p, (uint8_t)plen, 0, 0);
	assert_non_null(r);
	memset(&pr, 0, sizeof(pr));
	pr.key.family = t->family;
	pr.type = PS_RT_UNICAST;
	pr.n_nexthops = 1;
	pr.nh[0].gw_family = t->family;
	assert_int_equal(inet_pton(af, gw, pr.nh[0].gw.b), 1);
	pr.nh[0].weight = 1;
	route_set_want(r, rattr_intern(&pr));
	assert_non_null(route_want(r));
	return r;
}
