/*
 * The sync engine fed scripted dump datagrams through its own parser and job
 * logic (the dump socket's I/O replaced with sync_set_io, the loop run by the
 * test): an interrupted dump and then a good one (nothing adopted from the
 * first), a dump during which the table changed (discarded), ENOBUFS on the
 * dump socket (discarded, retried), a table whose dumps keep failing does not
 * hold up another table's first scan, and shutdown in the middle of a dump.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <cmocka.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <uv.h>

#include "log.h"
#include "nlbuild.h"
#include "sync.h"
#include "table.h"

static uv_loop_t loop;

/* The requests sync sent, and the datagrams it will receive, in order. */
static unsigned n_requests;
static uint32_t last_table;
static struct nlbuild script[8];
static int script_err[8]; /* errno to fail the receive with instead, or 0 */
static unsigned n_script, at_script;

static ssize_t
fake_send(const void *buf, size_t len)
{
	const struct nlmsghdr *nlh = buf;
	const struct nlattr *a;

	n_requests++;
	mnl_attr_for_each(a, nlh, sizeof(struct rtmsg))
		if (mnl_attr_get_type(a) == RTA_TABLE)
			last_table = mnl_attr_get_u32(a);
	return (ssize_t)len;
}

static ssize_t
fake_recv(void *buf, size_t len)
{
	if (at_script == n_script) {
		errno = EAGAIN;
		return -1;
	}
	if (script_err[at_script]) {
		errno = script_err[at_script++];
		return -1;
	}
	assert_true(script[at_script].len <= len);
	memcpy(buf, script[at_script].buf, script[at_script].len);
	return (ssize_t)script[at_script++].len;
}

static struct nlbuild *
next_datagram(void)
{
	struct nlbuild *b = &script[n_script];

	assert_true(n_script < 8);
	memset(b, 0, sizeof(*b));
	script_err[n_script++] = 0;
	return b;
}

/* Deliver what is scripted, as the loop would when the socket is readable. */
static void
deliver(void)
{
	while (at_script < n_script)
		sync_poll();
}

/* Run the loop until cond() holds (timers included); false after 3 s. */
static bool
run_until(bool (*cond)(void))
{
	for (int i = 0; i < 300; i++) {
		if (cond())
			return true;
		uv_run(&loop, UV_RUN_NOWAIT);
		uv_sleep(10);
	}
	return cond();
}

static unsigned want_requests;
static bool
requests_reached(void)
{
	return n_requests >= want_requests;
}

static struct rtable *cond_table;
static bool
table_ready(void)
{
	return sync_table_ready(cond_table);
}

static struct route *
lookup(struct rtable *t, const char *dst, unsigned plen)
{
	union ps_addr p = { 0 };

	inet_pton(AF_INET, dst, p.b);
	return table_lookup(t, &p, (uint8_t)plen, 0, 0);
}

/* After a discarded dump: request number n comes, and a good dump of dst/24 is adopted. */
static void
retry_then_adopt(struct rtable *t, unsigned n, const char *dst)
{
	struct nlbuild *b;

	want_requests = n;
	assert_true(run_until(requests_reached));
	b = next_datagram();
	nlb_route(b, AF_INET, dst, 24, t->id, 12, 0, 0);
	nlb_done(b, 0);
	deliver();
	cond_table = t;
	assert_true(run_until(table_ready));
	assert_non_null(lookup(t, dst, 24));
	assert_non_null(lookup(t, dst, 24)->have);
}

static int
setup(void **state)
{
	(void)state;
	log_init("test", true, LOG_LVL_WARN);
	n_requests = n_script = at_script = 0;
	uv_loop_init(&loop);
	if (table_init() < 0 || sync_init(&loop, 12, 60, 0) < 0)
		return -1;
	sync_set_io(fake_send, fake_recv);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	sync_close();
	sync_set_io(NULL, NULL);
	uv_run(&loop, UV_RUN_NOWAIT); /* the close callbacks */
	table_shutdown();
	assert_int_equal(uv_loop_close(&loop), 0);
	return 0;
}

/* A first scan: asked for, interrupted, retried, then complete. */
static void
test_interrupted_then_good(void **state)
{
	struct rtable *t = table_get(100, PS_FAM_V4, true);
	struct sync_stats st;
	struct nlbuild *b;
	(void)state;

	assert_false(sync_table_ready(t));
	assert_int_equal(n_requests, 1);
	assert_int_equal(last_table, 100);

	/* The first dump shows X, then a message flagged NLM_F_DUMP_INTR. */
	b = next_datagram();
	nlb_route(b, AF_INET, "192.0.2.0", 24, 100, 12, 0, 0);
	nlb_route(b, AF_INET, "198.51.100.0", 24, 100, 12, 0, NLM_F_DUMP_INTR);
	deliver();
	sync_get_stats(&st);
	assert_int_equal(st.dumps_interrupted, 1);
	assert_null(lookup(t, "192.0.2.0", 24));
	assert_false(sync_table_ready(t));

	/* Retried after a pause; the good dump shows only Y. */
	want_requests = 2;
	assert_true(run_until(requests_reached));
	b = next_datagram();
	nlb_route(b, AF_INET, "198.51.100.0", 24, 100, 12, 0, 0);
	nlb_route(b, AF_INET, "203.0.113.0", 24, 100, 4, 0, 0); /* static: foreign */
	nlb_done(b, 0);
	deliver();
	cond_table = t;
	assert_true(run_until(table_ready));
	assert_non_null(lookup(t, "198.51.100.0", 24));
	assert_non_null(lookup(t, "198.51.100.0", 24)->have);
	assert_null(lookup(t, "192.0.2.0", 24)); /* nothing from the interrupted dump */
	assert_null(lookup(t, "203.0.113.0", 24));
	sync_get_stats(&st);
	assert_int_equal(st.dumps_completed, 1);
	assert_int_equal(st.routes_adopted, 1);
}

/* The kernel did not flag it, but the monitor saw the table change: discarded. */
static void
test_changed_during_dump_discarded(void **state)
{
	struct rtable *t = table_get(100, PS_FAM_V4, true);
	struct sync_stats st;
	struct nlbuild *b;
	(void)state;

	assert_false(sync_table_ready(t));
	b = next_datagram();
	nlb_route(b, AF_INET, "192.0.2.0", 24, 100, 12, 0, 0);
	deliver();
	t->changes++; /* a notification from someone else, as nl.c counts it */
	b = next_datagram();
	nlb_done(b, 0);
	deliver();
	sync_get_stats(&st);
	assert_int_equal(st.dumps_interrupted, 1);
	assert_int_equal(st.dumps_completed, 0);
	assert_null(lookup(t, "192.0.2.0", 24));
	retry_then_adopt(t, 2, "192.0.2.0");
}

/* ENOBUFS on the dump socket: messages were lost; discarded and retried. */
static void
test_enobufs_discards(void **state)
{
	struct rtable *t = table_get(100, PS_FAM_V4, true);
	struct sync_stats st;
	struct nlbuild *b;
	(void)state;

	assert_false(sync_table_ready(t));
	b = next_datagram();
	nlb_route(b, AF_INET, "192.0.2.0", 24, 100, 12, 0, 0);
	next_datagram();
	script_err[n_script - 1] = ENOBUFS;
	deliver();
	sync_get_stats(&st);
	assert_int_equal(st.dumps_failed, 1);
	assert_null(lookup(t, "192.0.2.0", 24));
	retry_then_adopt(t, 2, "198.51.100.0");
}

/*
 * Table 100's dumps keep being interrupted; table 101's first scan, asked for
 * meanwhile, goes ahead of 100's retries (per-table backoff, first scans first).
 */
static void
test_failing_table_does_not_block_another(void **state)
{
	struct rtable *a = table_get(100, PS_FAM_V4, true), *b101 = table_get(101, PS_FAM_V4, true);
	struct nlbuild *b;
	(void)state;

	assert_false(sync_table_ready(a));
	b = next_datagram();
	nlb_route(b, AF_INET, "192.0.2.0", 24, 100, 12, 0, NLM_F_DUMP_INTR);
	deliver();
	assert_false(sync_table_ready(b101)); /* queued while 100 backs off */
	assert_int_equal(n_requests, 2);
	assert_int_equal(last_table, 101);
	b = next_datagram();
	nlb_done(b, 0);
	deliver();
	cond_table = b101;
	assert_true(run_until(table_ready));
	assert_false(sync_table_ready(a));
	/* Then 100 again, after its pause. */
	want_requests = 3;
	assert_true(run_until(requests_reached));
	assert_int_equal(last_table, 100);
}

/* SIGTERM in the middle of a dump: sync closes with the job half done, nothing leaks. */
static void
test_shutdown_mid_dump(void **state)
{
	struct rtable *t = table_get(100, PS_FAM_V4, true);
	struct nlbuild *b;
	(void)state;

	assert_false(sync_table_ready(t));
	b = next_datagram();
	for (int i = 0; i < 100; i++) {
		char dst[32];
		snprintf(dst, sizeof(dst), "10.0.%d.0", i);
		nlb_route(b, AF_INET, dst, 24, 100, 12, 0, 0);
	}
	deliver();
	assert_false(sync_table_ready(t));
	/* teardown closes sync now; under ASan a leaked key vector fails the run */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_interrupted_then_good, setup, teardown),
		cmocka_unit_test_setup_teardown(test_changed_during_dump_discarded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_enobufs_discards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failing_table_does_not_block_another, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shutdown_mid_dump, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
