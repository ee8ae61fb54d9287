/*
 * The sync engine fed scripted dump datagrams through its own parser and job
 * logic (the dump socket's I/O replaced with sync_set_io, the loop run by the
 * test): an interrupted dump and then a good one (nothing adopted from the
 * first), notifications during a dump kept and replayed in order on its
 * snapshot (add then delete ends deleted, delete then add ends present), an
 * overflow of them (the dump is taken again), IPv6 dumps during which others
 * changed the table (discarded a few times, since the kernel's IPv6 walker may
 * skip routes; then used for what they show only),
 * ENOBUFS on the dump socket (discarded, retried), a monitor overrun (the dump
 * taken again; a rescan asked for), a table whose dumps keep
 * failing does not hold up another table's first scan, and shutdown in the
 * middle of a dump.
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
#include "nl.h"
#include "feed_fake.h"
#include "nl_fake.h"
#include "nlbuild.h"
#include "sync.h"
#include "table.h"

static uv_loop_t loop;

/* The requests sync sent, and the datagrams it will receive, in order. */
static unsigned n_requests;
static uint32_t last_table;
static struct nlbuild script[16];
static int script_err[16]; /* errno to fail the receive with instead, or 0 */
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

	assert_true(n_script < 16);
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

	inet_pton(t->family == PS_FAM_V4 ? AF_INET : AF_INET6, dst, p.b);
	return table_lookup(t, &p, (uint8_t)plen, 0, 0);
}

/*
 * A notification by someone else about table t, as nl.c's monitor hands it
 * on: counted, then kept while t's scan runs, or acted on at once.
 */
static void
notify(struct rtable *t, uint16_t type, const char *dst, unsigned plen, uint8_t proto)
{
	static struct nlbuild b;
	struct nlmsghdr *nlh = (struct nlmsghdr *)b.buf;

	memset(&b, 0, sizeof(b));
	nlb_route(&b, t->family == PS_FAM_V4 ? AF_INET : AF_INET6, dst, plen, t->id, proto, 0, 0);
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = 0;
	t->changes++;
	if (sync_keeps(t))
		sync_keep(t, nlh);
	else
		nl_route_notified(t, nlh);
}

/* t's first scan is asked for, and its first datagram (one route of fibd's) delivered. */
static void
first_datagram(struct rtable *t, const char *dst, unsigned plen)
{
	struct nlbuild *b;

	assert_false(sync_table_ready(t));
	b = next_datagram();
	nlb_route(b, t->family == PS_FAM_V4 ? AF_INET : AF_INET6, dst, plen, t->id, 12, 0, 0);
	deliver();
}

/* After a discarded dump: request number n comes, and a good dump of dst/plen is adopted. */
static void
retry_then_adopt(struct rtable *t, unsigned n, const char *dst, unsigned plen)
{
	struct nlbuild *b;

	want_requests = n;
	assert_true(run_until(requests_reached));
	b = next_datagram();
	nlb_route(b, t->family == PS_FAM_V4 ? AF_INET : AF_INET6, dst, plen, t->id, 12, 0, 0);
	nlb_done(b, 0);
	deliver();
	cond_table = t;
	assert_true(run_until(table_ready));
	assert_non_null(lookup(t, dst, plen));
	assert_non_null(lookup(t, dst, plen)->have);
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

/*
 * Notifications while the dump runs are kept and replayed in order once its
 * snapshot is applied: an IPv4 dump during which others changed the table is
 * good, since every change it may have missed comes in a notification.
 */
static void
test_notifications_replayed_in_order(void **state)
{
	struct rtable *t = table_get(100, PS_FAM_V4, true);
	struct sync_stats st;
	struct nlbuild *b;
	(void)state;

	assert_false(sync_table_ready(t));
	b = next_datagram();
	nlb_route(b, AF_INET, "192.0.2.0", 24, 100, 12, 0, 0);    /* A */
	nlb_route(b, AF_INET, "198.51.100.0", 24, 100, 12, 0, 0); /* B */
	deliver();
	assert_true(sync_keeps(t));
	/* C added behind the dump's position, then deleted: ends deleted. */
	notify(t, RTM_NEWROUTE, "10.0.0.0", 8, 12);
	notify(t, RTM_DELROUTE, "10.0.0.0", 8, 12);
	/* A deleted, then added again: ends present. */
	notify(t, RTM_DELROUTE, "192.0.2.0", 24, 12);
	notify(t, RTM_NEWROUTE, "192.0.2.0", 24, 12);
	/* B deleted: no longer adopted. D, another protocol's: not fibd's business. */
	notify(t, RTM_DELROUTE, "198.51.100.0", 24, 12);
	notify(t, RTM_NEWROUTE, "203.0.113.0", 24, 4);
	/* E added after the dump passed its place: adopted from the notification. */
	notify(t, RTM_NEWROUTE, "172.16.0.0", 12, 12);
	assert_null(lookup(t, "192.0.2.0", 24)); /* nothing applied before the dump ends */
	b = next_datagram();
	nlb_done(b, 0);
	deliver();
	cond_table = t;
	assert_true(run_until(table_ready));
	assert_false(sync_keeps(t));
	sync_get_stats(&st);
	assert_int_equal(st.dumps_completed, 1);
	assert_int_equal(st.dumps_interrupted, 0);
	assert_int_equal(st.notifications_replayed, 7);
	assert_true(lookup(t, "10.0.0.0", 8) == NULL || lookup(t, "10.0.0.0", 8)->have == NULL);
	assert_non_null(lookup(t, "192.0.2.0", 24));
	assert_non_null(lookup(t, "192.0.2.0", 24)->have);
	assert_true(lookup(t, "198.51.100.0", 24) == NULL || lookup(t, "198.51.100.0", 24)->have == NULL);
	assert_null(lookup(t, "203.0.113.0", 24));
	assert_non_null(lookup(t, "172.16.0.0", 12));
	assert_non_null(lookup(t, "172.16.0.0", 12)->have);
	assert_int_equal(t->n_installed, 2); /* A and E */
	/* After the scan, notifications are acted on at once again. */
	notify(t, RTM_DELROUTE, "172.16.0.0", 12, 12);
	assert_true(lookup(t, "172.16.0.0", 12) == NULL || lookup(t, "172.16.0.0", 12)->have == NULL);
}

/* More notifications during a dump than can be kept: the dump is taken again. */
static void
test_keep_overflow_rescans(void **state)
{
	struct rtable *t = table_get(100, PS_FAM_V4, true);
	struct sync_stats st;
	struct nlbuild *b;
	(void)state;

	first_datagram(t, "192.0.2.0", 24);
	for (unsigned i = 0; i < SYNC_KEEP_MAX / 40; i++) /* each is 44 bytes */
		notify(t, i % 2 ? RTM_DELROUTE : RTM_NEWROUTE, "203.0.113.0", 24, 4);
	b = next_datagram();
	nlb_done(b, 0);
	deliver();
	sync_get_stats(&st);
	assert_int_equal(st.keep_overflows, 1);
	assert_int_equal(st.dumps_failed, 1);
	assert_int_equal(st.dumps_completed, 0);
	assert_null(lookup(t, "192.0.2.0", 24));
	retry_then_adopt(t, 2, "198.51.100.0", 24);
}

/* One dump of IPv6 table t showing dst/plen, with a change by others while it runs. */
static void
v6_dump_under_churn(struct rtable *t, unsigned request, const char *dst, unsigned plen)
{
	struct nlbuild *b;

	want_requests = request;
	assert_true(run_until(requests_reached));
	b = next_datagram();
	nlb_route(b, AF_INET6, dst, plen, t->id, 12, 0, 0);
	deliver();
	notify(t, RTM_NEWROUTE, "2001:db8:1::", 48, 4);
	b = next_datagram();
	nlb_done(b, 0);
	deliver();
}

/*
 * An IPv6 dump during which others changed the table: the kernel's walker may
 * have skipped routes nobody touched, unflagged, so it is discarded, up to
 * SYNC_CHURN_TRIES times in a row; then one is used as unsure, and a rescan
 * from an unsure dump takes no route for lost (no repair walk). A quiet dump
 * is sure again.
 */
static void
test_v6_changed_during_dump(void **state)
{
	struct rtable *t = table_get(100, PS_FAM_V6, true);
	struct sync_stats st;
	struct nlbuild *b;
	unsigned repairs;
	(void)state;

	assert_false(sync_table_ready(t));
	for (unsigned i = 1; i <= SYNC_CHURN_TRIES; i++) {
		v6_dump_under_churn(t, i, "2001:db8::", 32);
		sync_get_stats(&st);
		assert_int_equal(st.dumps_interrupted, i);
		assert_int_equal(st.dumps_completed, 0);
		assert_null(lookup(t, "2001:db8::", 32));
	}
	/* The next one, under churn too, is used: the first scan ends. */
	v6_dump_under_churn(t, SYNC_CHURN_TRIES + 1, "2001:db8::", 32);
	cond_table = t;
	assert_true(run_until(table_ready));
	assert_true(t->dump_unsure);
	assert_non_null(lookup(t, "2001:db8::", 32));
	sync_get_stats(&st);
	assert_int_equal(st.dumps_unsure, 1);

	/* A rescan under churn at once is discarded again, then... */
	repairs = fake_repairs;
	assert_true(sync_rescan_table(t));
	v6_dump_under_churn(t, SYNC_CHURN_TRIES + 2, "2001:db8::", 32);
	sync_get_stats(&st);
	assert_int_equal(st.dumps_interrupted, SYNC_CHURN_TRIES + 1);
	/* ... a quiet one is sure, and its repair walk runs. */
	want_requests = SYNC_CHURN_TRIES + 3;
	assert_true(run_until(requests_reached));
	b = next_datagram();
	nlb_route(b, AF_INET6, "2001:db8::", 32, 100, 12, 0, 0);
	nlb_done(b, 0);
	deliver();
	for (int i = 0; i < 50 && fake_repairs == repairs; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	assert_false(t->dump_unsure);
	assert_int_equal(fake_repairs, repairs + 1);
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
	retry_then_adopt(t, 2, "198.51.100.0", 24);
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

/*
 * ENOBUFS on the monitor: notifications were lost. During a dump, the dump is
 * no snapshot and is taken again; at any time, nl asks for a rescan of every
 * table (sync_rescan_soon), which comes after a short delay.
 */
static void
test_monitor_overrun_rescans(void **state)
{
	struct rtable *t = table_get(100, PS_FAM_V4, true);
	struct sync_stats st;
	struct nlbuild *b;
	(void)state;

	first_datagram(t, "192.0.2.0", 24);
	fake_nl_overruns++; /* the monitor overran while the dump ran */
	b = next_datagram();
	nlb_done(b, 0);
	deliver();
	sync_get_stats(&st);
	assert_int_equal(st.dumps_failed, 1);
	assert_int_equal(st.dumps_completed, 0);
	assert_null(lookup(t, "192.0.2.0", 24));
	retry_then_adopt(t, 2, "192.0.2.0", 24);

	/* An overrun later: a rescan of the table follows, and it completes. */
	fake_nl_overruns++;
	sync_rescan_soon();
	retry_then_adopt(t, 3, "192.0.2.0", 24);
	sync_get_stats(&st);
	assert_int_equal(st.dumps_completed, 2);
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
		cmocka_unit_test_setup_teardown(test_notifications_replayed_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keep_overflow_rescans, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v6_changed_during_dump, setup, teardown),
		cmocka_unit_test_setup_teardown(test_enobufs_discards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failing_table_does_not_block_another, setup, teardown),
		cmocka_unit_test_setup_teardown(test_monitor_overrun_rescans, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shutdown_mid_dump, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
