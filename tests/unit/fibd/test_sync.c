/*
 * The dump parser of the sync engine, fed netlink datagrams built here the way
 * the kernel sends them: routes of fibd's protocol are reported with their key,
 * others are counted as foreign, a dump ends at NLMSG_DONE, and a dump whose
 * messages carry NLM_F_DUMP_INTR, or that carries an error, is refused.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

#include "nlbuild.h"
#include "sync.h"

static struct nlbuild nb;
#define dgram nb.buf
#define dlen nb.len

static void
add_route(int family, const char *dst, unsigned plen, uint32_t table, uint8_t proto,
    uint32_t metric, uint16_t flags)
{
	nlb_route(&nb, family, dst, plen, table, proto, metric, flags);
}

static void
add_done(uint16_t flags)
{
	nlb_done(&nb, flags);
}

struct seen {
	struct sync_key k[16];
	unsigned n;
};

static void
on_route(const struct sync_key *k, void *ctx)
{
	struct seen *s = ctx;
	assert_true(s->n < 16);
	s->k[s->n++] = *k;
}

static void
test_routes_of_ours_reported(void **state)
{
	struct seen s = { .n = 0 };
	uint64_t foreign = 0;
	(void)state;

	dlen = 0;
	add_route(AF_INET, "192.0.2.0", 24, 100, 12, 0, 0);
	add_route(AF_INET, "198.51.100.0", 24, 100, 4, 0, 0);  /* static: foreign */
	add_route(AF_INET, "203.0.113.0", 24, 100, 12, 20, 0);
	add_route(AF_INET, "", 0, 100, 12, 0, 0);                /* default route */
	add_route(AF_INET, "192.0.2.0", 24, 200, 12, 0, 0);      /* other table: ignored */
	add_route(AF_INET6, "2001:db8::", 32, 100, 12, 0, 0);    /* other family: ignored */
	assert_int_equal(sync_parse(dgram, dlen, 100, PS_FAM_V4, 12, on_route, &s, &foreign), 0);
	assert_int_equal(s.n, 3);
	assert_int_equal(foreign, 1);
	assert_int_equal(s.k[0].plen, 24);
	assert_int_equal(s.k[0].prefix.b[0], 192);
	assert_int_equal(s.k[1].metric, 20);
	assert_int_equal(s.k[2].plen, 0);

	/* The dump's last datagram ends with DONE. */
	dlen = 0;
	s.n = 0;
	add_route(AF_INET6, "2001:db8:1::", 48, 100, 12, 1024, 0);
	add_done(0);
	assert_int_equal(sync_parse(dgram, dlen, 100, PS_FAM_V6, 12, on_route, &s, &foreign), 1);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.k[0].metric, 1024);
}

static void
test_interrupted_dump_refused(void **state)
{
	struct seen s = { .n = 0 };
	(void)state;

	dlen = 0;
	add_route(AF_INET, "192.0.2.0", 24, 100, 12, 0, 0);
	add_route(AF_INET, "203.0.113.0", 24, 100, 12, 0, NLM_F_DUMP_INTR);
	assert_int_equal(sync_parse(dgram, dlen, 100, PS_FAM_V4, 12, on_route, &s, NULL), -EINTR);
	/* DONE can carry the flag too. */
	dlen = 0;
	add_done(NLM_F_DUMP_INTR);
	assert_int_equal(sync_parse(dgram, dlen, 100, PS_FAM_V4, 12, on_route, &s, NULL), -EINTR);
}

static void
test_error_and_malformed(void **state)
{
	struct seen s = { .n = 0 };
	struct nlmsghdr *nlh;
	struct nlmsgerr *e;
	(void)state;

	dlen = 0;
	nlh = mnl_nlmsg_put_header(dgram);
	nlh->nlmsg_type = NLMSG_ERROR;
	e = mnl_nlmsg_put_extra_header(nlh, sizeof(*e));
	e->error = -ENOBUFS;
	dlen = nlh->nlmsg_len;
	assert_int_equal(sync_parse(dgram, dlen, 100, PS_FAM_V4, 12, on_route, &s, NULL), -ENOBUFS);

	/* A route whose destination is not 4 bytes long in an IPv4 dump. */
	dlen = 0;
	add_route(AF_INET6, "2001:db8::", 32, 100, 12, 0, 0);
	((struct rtmsg *)mnl_nlmsg_get_payload((struct nlmsghdr *)dgram))->rtm_family = AF_INET;
	((struct rtmsg *)mnl_nlmsg_get_payload((struct nlmsghdr *)dgram))->rtm_dst_len = 24;
	assert_int_equal(sync_parse(dgram, dlen, 100, PS_FAM_V4, 12, on_route, &s, NULL), -EIO);

	/* A datagram cut inside a message. */
	dlen = 0;
	add_route(AF_INET, "192.0.2.0", 24, 100, 12, 0, 0);
	assert_int_equal(sync_parse(dgram, dlen - 3, 100, PS_FAM_V4, 12, on_route, &s, NULL), -EIO);
	assert_int_equal(s.n, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routes_of_ours_reported),
		cmocka_unit_test(test_interrupted_dump_refused),
		cmocka_unit_test(test_error_and_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
