/*
 * learn: which kernel routes become LEARN messages, and the keeping of route
 * notifications during a learn dump: replayed in order after a complete dump
 * a budget at a time (an add then a delete of one prefix ends deleted; a delete
 * then an add ends present; one that comes meanwhile goes last), held over an
 * incomplete one, and an overflow asks for another dump; the refresh marks
 * around a learn dump.
 * The messages are built here as the kernel sends them; feed_learn and
 * feed_learn_refresh are fakes that record what they are handed.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

#include "feed.h"
#include "feed_fake.h"
#include "learn.h"
#include "sync.h"
#include "table.h"

#define OURS 12

static _Alignas(8) char msg[512];

/* One route message: type RTM_NEWROUTE or RTM_DELROUTE, via 198.51.100.1. */
static const struct nlmsghdr *
route_msg(uint16_t type, const char *dst, unsigned plen, uint8_t proto, uint8_t rtype, uint32_t metric)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(msg);
	struct rtmsg *rtm;
	uint8_t addr[4], gw[4];

	nlh->nlmsg_type = type;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = AF_INET;
	rtm->rtm_dst_len = (uint8_t)plen;
	rtm->rtm_table = 100;
	rtm->rtm_protocol = proto;
	rtm->rtm_type = rtype;
	mnl_attr_put_u32(nlh, RTA_TABLE, 100);
	inet_pton(AF_INET, dst, addr);
	mnl_attr_put(nlh, RTA_DST, 4, addr);
	if (metric)
		mnl_attr_put_u32(nlh, RTA_PRIORITY, metric);
	if (rtype == RTN_UNICAST) {
		inet_pton(AF_INET, "198.51.100.1", gw);
		mnl_attr_put(nlh, RTA_GATEWAY, 4, gw);
	}
	return nlh;
}

static struct rtable *
table(void)
{
	struct rtable *t = table_get(100, PS_FAM_V4, true);
	assert_non_null(t);
	return t;
}

static int
setup(void **state)
{
	(void)state;
	fake_n_learned = 0;
	learn_init(OURS, &sync_env,
	    &(const struct learn_hooks){ .route = feed_learn, .refresh = feed_learn_refresh });
	return table_init();
}

static int
teardown(void **state)
{
	(void)state;
	learn_forget(table());
	table_shutdown();
	return 0;
}

static void
test_what_is_learned(void **state)
{
	struct rtable *t = table();
	(void)state;

	learn_dump_msg(t, route_msg(RTM_NEWROUTE, "192.0.2.0", 24, RTPROT_STATIC, RTN_UNICAST, 10));
	learn_dump_msg(t, route_msg(RTM_NEWROUTE, "192.0.2.128", 25, OURS, RTN_UNICAST, 0));
	learn_dump_msg(t, route_msg(RTM_NEWROUTE, "198.51.100.0", 24, RTPROT_KERNEL, RTN_UNICAST, 0));
	learn_dump_msg(t, route_msg(RTM_NEWROUTE, "198.51.100.2", 32, RTPROT_KERNEL, RTN_LOCAL, 0));
	learn_dump_msg(t, route_msg(RTM_NEWROUTE, "203.0.113.0", 24, RTPROT_BOOT, RTN_BLACKHOLE, 0));
	assert_int_equal(fake_n_learned, 2);
	assert_int_equal(fake_learned[0].op, PS_LEARN_ADD);
	assert_int_equal(fake_learned[0].prefix[0], 192);
	assert_int_equal(fake_learned[0].metric, 10);
	assert_int_equal(fake_learned[0].protocol, RTPROT_STATIC);
	assert_int_equal(fake_learned[0].n_nexthops, 1);
	assert_int_equal(fake_learned[1].type, PS_RT_BLACKHOLE);
	assert_int_equal(fake_learned[1].prefix[0], 203);

	/* Without a learn dump going on, a notification goes out at once. */
	learn_notify(t, route_msg(RTM_DELROUTE, "192.0.2.0", 24, RTPROT_STATIC, RTN_UNICAST, 10));
	assert_int_equal(fake_n_learned, 3);
	assert_int_equal(fake_learned[2].op, PS_LEARN_DELETE);
}

static void
test_kept_and_replayed_in_order(void **state)
{
	struct rtable *t = table();
	bool again = true;
	(void)state;

	assert_true(learn_begin(t));
	assert_false(learn_begin(t)); /* already keeping */
	learn_notify(t, route_msg(RTM_NEWROUTE, "192.0.2.0", 24, RTPROT_STATIC, RTN_UNICAST, 0));
	learn_notify(t, route_msg(RTM_DELROUTE, "192.0.2.0", 24, RTPROT_STATIC, RTN_UNICAST, 0));
	learn_notify(t, route_msg(RTM_DELROUTE, "203.0.113.0", 24, RTPROT_STATIC, RTN_UNICAST, 0));
	learn_notify(t, route_msg(RTM_NEWROUTE, "203.0.113.0", 24, RTPROT_STATIC, RTN_UNICAST, 0));
	/* The dump's own routes go out as they come. */
	learn_dump_msg(t, route_msg(RTM_NEWROUTE, "192.0.2.0", 24, RTPROT_STATIC, RTN_UNICAST, 0));
	assert_int_equal(fake_n_learned, 1);

	/* An incomplete dump replays nothing: another follows. */
	assert_true(learn_end(t, false, false));
	assert_int_equal(fake_n_learned, 1);

	assert_false(learn_end(t, true, false));
	/* Replayed a budget at a time; what comes meanwhile joins the end. */
	assert_int_equal(fake_n_learned, 1);
	assert_false(learn_replay(t, 2, &again));
	assert_int_equal(fake_n_learned, 3);
	learn_notify(t, route_msg(RTM_NEWROUTE, "198.51.100.128", 25, RTPROT_STATIC, RTN_UNICAST, 0));
	assert_int_equal(fake_n_learned, 3);
	assert_false(learn_replay(t, 2, &again));
	assert_int_equal(fake_n_learned, 5);
	assert_true(learn_replay(t, 2, &again));
	assert_false(again);
	assert_int_equal(fake_n_learned, 6);
	assert_int_equal(fake_learned[5].prefix[0], 198);
	/* add then delete of 192.0.2.0/24: ends deleted, after the dump's add */
	assert_int_equal(fake_learned[1].op, PS_LEARN_ADD);
	assert_int_equal(fake_learned[2].op, PS_LEARN_DELETE);
	assert_int_equal(fake_learned[2].prefix[0], 192);
	/* delete then add of 203.0.113.0/24: ends present */
	assert_int_equal(fake_learned[3].op, PS_LEARN_DELETE);
	assert_int_equal(fake_learned[4].op, PS_LEARN_ADD);
	assert_int_equal(fake_learned[4].prefix[0], 203);

	/* Keeping stopped with the replay. */
	learn_notify(t, route_msg(RTM_NEWROUTE, "198.51.100.0", 24, RTPROT_STATIC, RTN_UNICAST, 0));
	assert_int_equal(fake_n_learned, 7);
}

static void
test_overflow_asks_for_another_dump(void **state)
{
	struct rtable *t = table();
	bool again = true;
	unsigned sent;
	(void)state;

	learn_begin(t);
	for (unsigned i = 0; i < LEARN_BUFFER_MAX / 32; i++) /* each over 32 bytes */
		learn_notify(t, route_msg(RTM_NEWROUTE, "192.0.2.0", 24, RTPROT_STATIC, RTN_UNICAST, i));
	sent = fake_n_learned;
	/* The dump that ended predates lost notifications: dump again, still keeping. */
	assert_true(learn_end(t, true, false));
	assert_int_equal(fake_n_learned, sent);
	learn_notify(t, route_msg(RTM_DELROUTE, "192.0.2.0", 24, RTPROT_STATIC, RTN_UNICAST, 7));
	assert_int_equal(fake_n_learned, sent);
	assert_false(learn_end(t, true, false));
	assert_true(learn_replay(t, LEARN_REPLAY_BUDGET, &again));
	assert_false(again);
	assert_int_equal(fake_n_learned, sent + 1);
	assert_int_equal(fake_learned[sent].op, PS_LEARN_DELETE);
	assert_int_equal(fake_learned[sent].metric, 7);
}

/*
 * A learn dump is a refresh: begin when it starts; end once it is whole, before
 * what was kept during it (changes after the dump's); no end for one that may
 * lack routes, that was not complete, or during which kept ones were lost.
 */
static void
test_refresh_marks(void **state)
{
	struct rtable *t = table();
	bool again = true;
	(void)state;

	learn_begin(t);
	learn_dump_start(t);
	learn_dump_msg(t, route_msg(RTM_NEWROUTE, "192.0.2.0", 24, RTPROT_STATIC, RTN_UNICAST, 0));
	learn_notify(t, route_msg(RTM_DELROUTE, "192.0.2.0", 24, RTPROT_STATIC, RTN_UNICAST, 0));
	assert_true(learn_end(t, false, true)); /* not complete: no end */
	learn_dump_start(t);
	assert_false(learn_end(t, true, false)); /* may lack routes: no end */
	assert_true(learn_replay(t, LEARN_REPLAY_BUDGET, &again));
	assert_int_equal(fake_n_learned, 4);
	assert_int_equal(fake_learned[0].refresh, PS_REFRESH_BEGIN);
	assert_int_equal(fake_learned[0].table, 100);
	assert_int_equal(fake_learned[0].family, PS_FAM_V4);
	assert_int_equal(fake_learned[1].op, PS_LEARN_ADD);
	assert_int_equal(fake_learned[2].refresh, PS_REFRESH_BEGIN);
	assert_int_equal(fake_learned[3].op, PS_LEARN_DELETE);

	learn_begin(t);
	learn_dump_start(t);
	learn_notify(t, route_msg(RTM_NEWROUTE, "203.0.113.0", 24, RTPROT_STATIC, RTN_UNICAST, 0));
	assert_false(learn_end(t, true, true));
	assert_int_equal(fake_n_learned, 6);
	assert_int_equal(fake_learned[5].refresh, PS_REFRESH_END);
	assert_true(learn_replay(t, LEARN_REPLAY_BUDGET, &again));
	assert_int_equal(fake_n_learned, 7);
	assert_int_equal(fake_learned[6].refresh, 0);
	assert_int_equal(fake_learned[6].prefix[0], 203);

	/* Notifications lost to the keeping (over the bound): no end, dump again. */
	learn_begin(t);
	learn_dump_start(t);
	for (unsigned i = 0; i < LEARN_BUFFER_MAX / 32; i++) /* each over 32 bytes */
		learn_notify(t, route_msg(RTM_NEWROUTE, "192.0.2.0", 24, RTPROT_STATIC, RTN_UNICAST, i));
	assert_true(learn_end(t, true, true));
	assert_int_equal(fake_n_learned, 8);
	assert_int_equal(fake_learned[7].refresh, PS_REFRESH_BEGIN);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_what_is_learned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kept_and_replayed_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overflow_asks_for_another_dump, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refresh_marks, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
