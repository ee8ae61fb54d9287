/*
 * watch: the answers fed by events (watch.c, through event.c). A watch of one
 * table streams that table's route events and others' kernel changes, and no
 * other table's; events cost nothing while no watch is open (event_demand); a
 * reader that falls behind loses events, counted and said in the stream, never
 * fibd's memory; a diff collects the rescan it waits for and ends with its
 * summary; closing a watch lowers the demand again.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <proto-shim/dec.h>
#include <proto-shim/enc.h>

#include "answer.h"
#include "event.h"
#include "reply.h"
#include "table.h"
#include "troute.h"
#include "watch.h"

extern unsigned sync_fake_rescans;

static unsigned wakes;

static void
on_wake(void *session)
{
	(void)session;
	wakes++;
}

static struct ps_buf out;
static struct answer ans;

static void
read_out(void)
{
	answer_read(&out, &ans);
}

static struct route *
route_in(struct rtable *t, const char *dst)
{
	return troute_want(t, dst, 24, "198.51.100.1");
}

static int
setup(void **state)
{
	(void)state;
	ps_buf_init(&out);
	event_set_sink(watch_on_event);
	reply_set_wake(on_wake);
	return table_init();
}

static int
teardown(void **state)
{
	(void)state;
	ps_buf_release(&out);
	table_shutdown();
	return 0;
}

static void
test_watch_streams_its_table(void **state)
{
	struct rtable *t100 = table_get(100, PS_FAM_V4, true), *t200 = table_get(200, PS_FAM_V4, true);
	struct route *r = route_in(t100, "192.0.2.0"), *other = route_in(t200, "203.0.113.0");
	struct kmsg_rt kr = { 0 };
	struct rtmsg rtm = { .rtm_protocol = 4 };
	struct watch *w;
	(void)state;

	assert_false(event_wanted());
	w = watch_open((void *)1, 7, false, 100);
	assert_non_null(w);
	assert_true(event_wanted());
	event_emit(&(struct event){ .kind = EV_DESIRED, .t = t100, .r = r, .client = "bird" });
	event_emit(&(struct event){ .kind = EV_DESIRED, .t = t200, .r = other, .client = "bird" });
	kr.rtm = &rtm;
	kr.family = PS_FAM_V4;
	kr.plen = 24;
	inet_pton(AF_INET, "198.18.0.0", kr.prefix.b);
	event_emit(&(struct event){ .kind = EV_KERNEL_ADD, .t = t100, .kr = &kr });
	event_emit(&(struct event){ .kind = EV_FAILED, .t = t100, .r = r, .client = "bird", .err = 101,
	    .text = "Nexthop has invalid gateway" });
	assert_int_equal(wakes, 3);
	assert_false(watch_more(w, &out)); /* a watch does not end */
	read_out();
	assert_int_equal(ans.end_code, -1);
	assert_non_null(strstr(ans.text, "desired    192.0.2.0/24 via 198.51.100.1 table 100 metric 0  # client bird\n"));
	assert_null(strstr(ans.text, "203.0.113.0"));
	assert_non_null(strstr(ans.text, "kernel-add 198.18.0.0/24 table 100 metric 0 proto 4  # by someone else\n"));
	assert_non_null(strstr(ans.text, "failed     192.0.2.0/24"));
	assert_non_null(strstr(ans.text, "Nexthop has invalid gateway"));
	watch_close(w);
	assert_false(event_wanted());
}

/* A reader that falls behind: events over WATCH_BUF_MAX are lost, counted, and said. */
static void
test_slow_reader_loses_events(void **state)
{
	struct rtable *t = table_get(100, PS_FAM_V4, true);
	struct route *r = route_in(t, "192.0.2.0");
	struct watch *w = watch_open((void *)1, 8, true, 0);
	unsigned n = 0;
	(void)state;

	while (n < 100000) {
		event_emit(&(struct event){ .kind = EV_INSTALLED, .t = t, .r = r, .client = "bird" });
		n++;
	}
	assert_false(watch_more(w, &out));
	read_out();
	assert_true(ans.len <= WATCH_BUF_MAX + 512);
	/* The next event says how many were lost before it. */
	event_emit(&(struct event){ .kind = EV_REMOVED, .t = t, .r = r, .client = "bird" });
	assert_false(watch_more(w, &out));
	read_out();
	assert_non_null(strstr(ans.text, "{\"event\":\"lost\",\"count\":"));
	assert_non_null(strstr(ans.text, "\"event\":\"removed\""));
	watch_close(w);
}

/* A diff waits for its table's rescan, collects what it finds, and ends with the summary. */
static void
test_diff_collects_one_rescan(void **state)
{
	struct rtable *t = table_get(100, PS_FAM_V4, true);
	struct route *r = route_in(t, "192.0.2.0");
	char err[128];
	struct watch *w;
	(void)state;

	w = diff_open((void *)1, 9, false, 100, err, sizeof(err));
	assert_non_null(w);
	assert_true(sync_fake_rescans >= 1);
	assert_int_equal(t->diff_waiting, 1);
	/* Differences before the rescan begins are not this diff's. */
	event_emit(&(struct event){ .kind = EV_DIFF, .t = t, .r = r, .diff = DIFF_MISSING });
	event_emit(&(struct event){ .kind = EV_RESCAN_BEGIN, .t = t });
	assert_true(t->diffing);
	assert_int_equal(t->diff_waiting, 0);
	event_emit(&(struct event){ .kind = EV_DIFF, .t = t, .r = r, .diff = DIFF_MISSING });
	event_emit(&(struct event){ .kind = EV_RESCAN_END, .t = t, .routes = 41 });
	assert_false(t->diffing);
	assert_true(watch_more(w, &out)); /* ended, and freed */
	read_out();
	assert_non_null(strstr(ans.text, "missing  192.0.2.0/24 via 198.51.100.1 table 100 metric 0"));
	assert_int_equal(ans.end_code, PS_E_OK);
	assert_string_equal(ans.end_text, "diff: 1 differences (1 missing, 0 differing, 0 extra, 0 failed) "
				      "against fresh dumps of 41 routes");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_watch_streams_its_table),
		cmocka_unit_test(test_slow_reader_loses_events),
		cmocka_unit_test(test_diff_collects_one_rescan),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
