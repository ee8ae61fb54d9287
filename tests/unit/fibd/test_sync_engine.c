/*
 * The sync engine over the real dump socket code (dump.c) and monitor
 * (monitor.c), with a fake kernel under them (tests/fakes/kfake.c) and the
 * writer faked (tests/fakes/nl_fake.c), the loop run by the test: an interrupted dump and then a good one (nothing adopted from the
 * first), notifications during a dump kept and replayed in order on its
 * snapshot (add then delete ends deleted, delete then add ends present), an
 * overflow of them (the dump is taken again), IPv6 dumps during which others
 * changed the table (discarded a few times, since the kernel's IPv6 walker may
 * skip routes; then used for what they show only), IPv6 rescans during which
 * fibd itself wrote the table (their repair waits for another dump), a
 * route fibd deleted while a dump that shows it ran (not adopted),
 * ENOBUFS on the dump socket (discarded, retried), a monitor overrun (the dump
 * taken again; a rescan asked for), one that only the socket's drop counter
 * shows, notifications lost during every dump (a few discarded, then one
 * used), an IPv6 dump that ends with the monitor behind, a table whose dumps keep
 * failing does not hold up another table's first scan, learn dumps as refreshes
 * (ended only when whole; taken again after a loss), and shutdown in the
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
#include <unistd.h>
#include <arpa/inet.h>

#include <cmocka.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <uv.h>

#include "log.h"
#include "nl.h"
#include "dump.h"
#include "kfake.h"
#include "learn.h"
#include "monitor.h"
#include "nl_fake.h"
#include "nlbuild.h"
#include "sync.h"
#include "table.h"
#include "troute.h"

static uv_loop_t loop;

/* The datagrams sync will receive come from the fake kernel (tests/fakes/kfake.c). */
static struct nlbuild *
next_datagram(void)
{
	return kf_dump_reply();
}

/* Deliver what is scripted, as the loop would when the socket is readable. */
static void
deliver(void)
{
	while (kf_dump_pending() && dump_running())
		dump_poll();
}

/*
 * The monitor's socket, faked: it reports an overrun (ENOBUFS) when asked to;
 * its drop counter rises as the test says (the kernel drops silently after an
 * overrun until the socket is read empty); and it holds mon_backlog
 * notifications about a table fibd does not manage, one per datagram.
 */
static int mon_overruns_due;
static uint32_t mon_drops;
static unsigned mon_backlog;

static ssize_t
mon_recv(void *buf, size_t len)
{
	if (mon_overruns_due) {
		mon_overruns_due--;
		errno = ENOBUFS;
		return -1;
	}
	if (mon_backlog) {
		struct nlbuild b = { .len = 0 };
		mon_backlog--;
		nlb_route(&b, AF_INET, "203.0.113.0", 24, 999, 4, 0, 0);
		assert_true(b.len <= len);
		memcpy(buf, b.buf, b.len);
		return (ssize_t)b.len;
	}
	errno = EAGAIN;
	return -1;
}

static int
mon_drop_counter(uint32_t *ret)
{
	*ret = mon_drops;
	return 0;
}

/* The monitor's changed hook: how often it said notifications were lost. */
static unsigned mon_said_lost;

static void
mon_changed(bool lost)
{
	mon_said_lost += lost;
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
	return kf_dump_requests >= want_requests;
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
 * A notification by someone else about table t, handed to the engine as the
 * monitor does (sync_kernel_route: counted, then kept while t's scan runs, or
 * acted on at once).
 */
static void
notify(struct rtable *t, uint16_t type, const char *dst, unsigned plen, uint8_t proto)
{
	static struct nlbuild b;
	struct nlmsghdr *nlh = (struct nlmsghdr *)b.buf;
	struct kmsg_rt kr;

	memset(&b, 0, sizeof(b));
	nlb_route(&b, t->family == PS_FAM_V4 ? AF_INET : AF_INET6, dst, plen, t->id, proto, 0, 0);
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = 0;
	assert_int_equal(kmsg_rt_parse(nlh, &kr), 0);
	sync_kernel_route(nlh, &kr);
}

/* A route of t a client wants (via 2001:db8:ff::1), as installed by an earlier write. */
static struct route *
installed_route(struct rtable *t, const char *dst, unsigned plen)
{
	struct route *r = troute_want(t, dst, plen, "2001:db8:ff::1");

	route_set_have(r, rattr_ref(route_want(r)));
	r->owner = 0; /* someone's */
	t->n_installed++;
	return r;
}

/*
 * Dump request number n, of table t, comes; the fake kernel answers with the
 * routes in first, then (between two datagrams) meanwhile(t) if given, then
 * NLMSG_DONE.
 */
static void
answer_dump_with(struct rtable *t, unsigned n, const struct nlbuild *first,
    void (*meanwhile)(struct rtable *))
{
	struct nlbuild *b;

	want_requests = n;
	assert_true(run_until(requests_reached));
	assert_int_equal(kf_dump_last_table, t->id);
	b = next_datagram();
	memcpy(b->buf + b->len, first->buf, first->len);
	b->len += first->len;
	if (meanwhile) {
		deliver();
		meanwhile(t);
		b = next_datagram();
	}
	nlb_done(b, 0);
	deliver();
}

/* The same, answered with dst/plen of fibd's. */
static void
answer_dump(struct rtable *t, unsigned n, const char *dst, unsigned plen,
    void (*meanwhile)(struct rtable *))
{
	struct nlbuild first = { .len = 0 };

	nlb_route(&first, t->family == PS_FAM_V4 ? AF_INET : AF_INET6, dst, plen, t->id, 12, 0, 0);
	answer_dump_with(t, n, &first, meanwhile);
}

/* After a discarded dump: request number n comes, and a good dump of dst/plen is adopted. */
static void
retry_then_adopt(struct rtable *t, unsigned n, const char *dst, unsigned plen)
{
	answer_dump(t, n, dst, plen, NULL);
	cond_table = t;
	assert_true(run_until(table_ready));
	assert_non_null(lookup(t, dst, plen));
	assert_non_null(route_have(lookup(t, dst, plen)));
}

/*
 * t's first dump, with meanwhile(t) while it runs: discarded (counted as
 * failed, or as interrupted), nothing adopted from it.
 */
static void
first_dump_discarded(struct rtable *t, const char *dst, unsigned plen,
    void (*meanwhile)(struct rtable *), bool interrupted)
{
	struct sync_stats st;

	assert_false(sync_table_ready(t));
	answer_dump(t, 1, dst, plen, meanwhile);
	sync_get_stats(&st);
	assert_int_equal(interrupted ? st.dumps_interrupted : st.dumps_failed, 1);
	assert_int_equal(st.dumps_completed, 0);
	assert_null(lookup(t, dst, plen));
}

static int
setup(void **state)
{
	static const struct mon_hooks hooks = { .route = sync_kernel_route, .changed = mon_changed };
	(void)state;
	log_init("test", true, LOG_LVL_WARN);
	uv_loop_init(&loop);
	mon_overruns_due = 0;
	mon_drops = 0;
	mon_backlog = 0;
	mon_said_lost = 0;
	fake_nl_reset();
	mon_set_io(mon_recv, mon_drop_counter);
	if (table_init() < 0 || sync_init(&loop, 12, 60, 0) < 0 ||
	    mon_init(&loop, &hooks, 0, 0) < 0)
		return -1;
	kf_dump_install();
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	sync_close();
	mon_close();
	mon_set_io(NULL, NULL);
	kf_dump_uninstall();
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
	assert_int_equal(kf_dump_requests, 1);
	assert_int_equal(kf_dump_last_table, 100);
	assert_int_equal(kf_dump_last_protocol, 12); /* the kernel filters by fibd's protocol */

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
	assert_non_null(route_have(lookup(t, "198.51.100.0", 24)));
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
	assert_true(lookup(t, "10.0.0.0", 8) == NULL || route_have(lookup(t, "10.0.0.0", 8)) == NULL);
	assert_non_null(lookup(t, "192.0.2.0", 24));
	assert_non_null(route_have(lookup(t, "192.0.2.0", 24)));
	assert_true(lookup(t, "198.51.100.0", 24) == NULL || route_have(lookup(t, "198.51.100.0", 24)) == NULL);
	assert_null(lookup(t, "203.0.113.0", 24));
	assert_non_null(lookup(t, "172.16.0.0", 12));
	assert_non_null(route_have(lookup(t, "172.16.0.0", 12)));
	assert_int_equal(t->n_installed, 2); /* A and E */
	/* After the scan, notifications are acted on at once again. */
	notify(t, RTM_DELROUTE, "172.16.0.0", 12, 12);
	assert_true(lookup(t, "172.16.0.0", 12) == NULL || route_have(lookup(t, "172.16.0.0", 12)) == NULL);
}

/* More notifications than can be kept (during a dump of t). */
static void
notify_too_many(struct rtable *t)
{
	for (unsigned i = 0; i < SYNC_KEEP_MAX / 40; i++) /* each is 44 bytes */
		notify(t, i % 2 ? RTM_DELROUTE : RTM_NEWROUTE, "203.0.113.0", 24, 4);
}

/* More notifications during a dump than can be kept: the dump is taken again. */
static void
test_keep_overflow_rescans(void **state)
{
	struct rtable *t = table_get(100, PS_FAM_V4, true);
	struct sync_stats st;
	(void)state;

	first_dump_discarded(t, "192.0.2.0", 24, notify_too_many, false);
	sync_get_stats(&st);
	assert_int_equal(st.keep_overflows, 1);
	retry_then_adopt(t, 2, "198.51.100.0", 24);
}

/* Others change table t (during a dump). */
static void
churn_once(struct rtable *t)
{
	notify(t, RTM_NEWROUTE, "2001:db8:1::", 48, 4);
}

/* One dump of IPv6 table t showing dst/plen, with a change by others while it runs. */
static void
v6_dump_under_churn(struct rtable *t, unsigned request, const char *dst, unsigned plen)
{
	answer_dump(t, request, dst, plen, churn_once);
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
	struct route *lost;
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

	/*
	 * A route a client wants, installed, that no dump shows from now on: an
	 * unsure rescan does not take it for lost; a sure one does.
	 */
	lost = installed_route(t, "2001:db8:5::", 48);
	/* A rescan under churn at once is discarded again, then... */
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
	for (int i = 0; i < 50 && route_have(lost); i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	assert_false(t->dump_unsure);
	assert_null(route_have(lost)); /* the repair walk found it lost: written again */
	assert_true(lost->flags & R_QUEUED);
}

/* fibd's own write in t is acknowledged (as nl_ack.c counts it). */
static void
own_write(struct rtable *t)
{
	t->writes++;
}

/* One of fibd's is sent to t and not answered yet (nl.c counts it); the test takes it back. */
static void
own_in_flight(struct rtable *t)
{
	t->n_inflight++;
}

/* A write of fibd's in flight, and a link changes (main.c asks for a rescan soon). */
static void
in_flight_and_link_change(struct rtable *t)
{
	own_in_flight(t);
	sync_rescan_soon();
}

/* A write of fibd's acknowledged, and a link changes. */
static void
write_and_link_change(struct rtable *t)
{
	own_write(t);
	sync_rescan_soon();
}

/* Let the engine apply a dump and end its job. */
static void
settle(void)
{
	for (int i = 0; i < 50; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
}

/*
 * Rescan request n of IPv6 table t: the dump shows fibd's 2001:db8::/32 and
 * 2001:db8:N::/48 for each N in `shown` (0-terminated), meanwhile(t) between
 * two datagrams; then the engine settles.
 */
static void
v6_rescan(struct rtable *t, unsigned n, const unsigned *shown, void (*meanwhile)(struct rtable *))
{
	struct nlbuild first = { .len = 0 };
	char dst[32];

	nlb_route(&first, AF_INET6, "2001:db8::", 32, t->id, 12, 0, 0);
	for (; *shown; shown++) {
		snprintf(dst, sizeof(dst), "2001:db8:%u::", *shown);
		nlb_route(&first, AF_INET6, dst, 48, t->id, 12, 0, 0);
	}
	answer_dump_with(t, n, &first, meanwhile);
	settle();
}

/*
 * fibd's own adds and deletes move the IPv6 walker as others' do, and nothing
 * tells of them: a rescan during which fibd wrote the table (acknowledged, or
 * in flight at its end) takes no route for lost; another dump follows after a
 * pause and adds to it, and the repair takes only what none of them showed.
 * After SYNC_CHURN_TRIES such rescans since the last repair walk it goes
 * ahead, link changes or not. A link change or a loss starts the union afresh
 * (a route seen before it may be gone without a word). A repair that took
 * routes for lost asks for a rescan when an EXCL add then meets EEXIST, once.
 */
static void
test_v6_own_writes_repair_waits(void **state)
{
	struct rtable *t = table_get(100, PS_FAM_V6, true);
	struct route *a, *b, *c, *d;
	struct sync_stats st;
	unsigned n = 1;
	uint64_t t0;
	(void)state;

	assert_false(sync_table_ready(t));
	v6_rescan(t, n, (const unsigned[]){ 0 }, NULL);
	cond_table = t;
	assert_true(run_until(table_ready));
	a = installed_route(t, "2001:db8:5::", 48);
	b = installed_route(t, "2001:db8:6::", 48);
	c = installed_route(t, "2001:db8:7::", 48);
	d = installed_route(t, "2001:db8:8::", 48);

	/* fibd wrote during it; it lacks b, c and d: none taken for lost, another dump asked for. */
	assert_true(sync_rescan_table(t));
	t0 = uv_now(&loop);
	v6_rescan(t, ++n, (const unsigned[]){ 5, 0 }, own_write);
	sync_get_stats(&st);
	assert_int_equal(st.repairs_deferred, 1);
	assert_int_equal(t->repair_waits, 1);
	assert_true(t->scan_queued || kf_dump_requests == n + 1);
	assert_true(t->scan_not_before >= t0 + SYNC_RETRY_MIN_MS); /* after a pause */
	assert_non_null(route_have(b));
	assert_non_null(route_have(c));
	/* A quiet one showing b and d: the repair takes c only, which neither showed. */
	v6_rescan(t, ++n, (const unsigned[]){ 6, 8, 0 }, NULL);
	assert_int_equal(t->repair_waits, 0);
	assert_non_null(route_have(a));
	assert_non_null(route_have(b));
	assert_null(route_have(c));
	assert_true(c->flags & R_QUEUED);
	assert_non_null(route_have(d));
	/*
	 * Its add then meets EEXIST, while another rescan has begun: one more
	 * rescan is asked for, once per repair.
	 */
	assert_true(t->repaired);
	assert_true(sync_rescan_table(t));
	want_requests = n + 1;
	assert_true(run_until(requests_reached));
	sync_route_exists(t);
	assert_false(t->repaired);
	assert_true(t->scan_queued);
	v6_rescan(t, ++n, (const unsigned[]){ 5, 6, 8, 0 }, NULL);
	v6_rescan(t, ++n, (const unsigned[]){ 5, 6, 8, 0 }, NULL);
	sync_route_exists(t); /* another EEXIST: no rescan */
	settle();
	assert_false(t->scan_queued);
	assert_int_equal(kf_dump_requests, n);
	sync_get_stats(&st);
	assert_int_equal(st.dumps_completed, 5);
	fake_nl_reset(); /* the writer quiet again (c stays queued) */

	/*
	 * A write in flight at its end counts too. A link change during it:
	 * the dump that follows starts afresh, so a, shown before the change
	 * only, is taken for lost. Then the rescan the change asked for.
	 */
	assert_true(sync_rescan_table(t));
	v6_rescan(t, ++n, (const unsigned[]){ 5, 6, 8, 0 }, in_flight_and_link_change);
	t->n_inflight = 0;
	v6_rescan(t, ++n, (const unsigned[]){ 6, 8, 0 }, NULL);
	assert_null(route_have(a));
	assert_non_null(route_have(d));
	fake_nl_reset(); /* the writer quiet again: the change's rescan comes */
	v6_rescan(t, ++n, (const unsigned[]){ 6, 8, 0 }, NULL);
	sync_get_stats(&st);
	assert_int_equal(st.repairs_deferred, 2);
	assert_int_equal(st.rescans_triggered, 1);

	/*
	 * fibd writes during every dump, and a link changes during each (no
	 * union then): SYNC_CHURN_TRIES wait, then the repair goes ahead.
	 */
	assert_true(sync_rescan_table(t));
	for (unsigned i = 1; i <= SYNC_CHURN_TRIES; i++) {
		v6_rescan(t, ++n, (const unsigned[]){ 6, 0 },
		    i == 1 ? own_write : write_and_link_change);
		assert_int_equal(t->repair_waits, i);
		assert_non_null(route_have(d));
	}
	v6_rescan(t, ++n, (const unsigned[]){ 6, 0 }, own_write);
	assert_int_equal(t->repair_waits, 0);
	assert_null(route_have(d));
	assert_non_null(route_have(b));
	sync_get_stats(&st);
	assert_int_equal(st.repairs_deferred, 2 + SYNC_CHURN_TRIES);
	assert_int_equal(st.repairs_forced, 1);
}

/* fibd's delete of `deleting` in t is acknowledged; its owner lets the entry go. */
static struct route *deleting;
static void
own_delete(struct rtable *t)
{
	struct route *r = deleting;

	sync_route_deleted(r);
	route_set_have(r, NULL);
	t->n_installed--;
	route_set_want(r, NULL);
	r->owner = OWNER_NONE;
	assert_true(table_release(r));
	t->writes++;
}

/*
 * A dump shows a route of fibd's that fibd deletes before the dump is applied
 * (the entry is gone by then): it is not adopted, since the kernel no longer
 * has it; the delete is kept as the kernel's notification would be, and
 * replayed on the snapshot. (Adopted, fibd would take it for installed: a
 * client feeding it again would cost no write, and the kernel would lack it.)
 */
static void
test_own_delete_not_adopted(void **state)
{
	struct rtable *t = table_get(100, PS_FAM_V6, true);
	struct sync_stats st0, st;
	uint64_t installed;
	(void)state;

	assert_false(sync_table_ready(t));
	v6_rescan(t, 1, (const unsigned[]){ 0 }, NULL);
	cond_table = t;
	assert_true(run_until(table_ready));
	sync_get_stats(&st0);
	installed = t->n_installed; /* 2001:db8::/32, adopted */
	deleting = installed_route(t, "2001:db8:9::", 48);
	assert_true(sync_rescan_table(t));
	v6_rescan(t, 2, (const unsigned[]){ 9, 0 }, own_delete);
	assert_null(lookup(t, "2001:db8:9::", 48));
	sync_get_stats(&st);
	assert_int_equal(st.routes_adopted, st0.routes_adopted);
	assert_int_equal(t->n_installed, installed);
	/* Outside a scan, nothing is kept. */
	deleting = installed_route(t, "2001:db8:9::", 48);
	own_delete(t);
	assert_null(lookup(t, "2001:db8:9::", 48));
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
	kf_dump_fail(ENOBUFS);
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
	assert_int_equal(kf_dump_requests, 2);
	assert_int_equal(kf_dump_last_table, 101);
	b = next_datagram();
	nlb_done(b, 0);
	deliver();
	cond_table = b101;
	assert_true(run_until(table_ready));
	assert_false(sync_table_ready(a));
	/* Then 100 again, after its pause. */
	want_requests = 3;
	assert_true(run_until(requests_reached));
	assert_int_equal(kf_dump_last_table, 100);
}

/*
 * ENOBUFS on the monitor: notifications were lost. During a dump, the dump is
 * no snapshot and is taken again; at any time, nl asks for a rescan of every
 * table (sync_rescan_soon), which comes after a short delay.
 */
static void
overrun_once(struct rtable *t)
{
	(void)t;
	mon_overruns_due = 1;
}

static void
test_monitor_overrun_rescans(void **state)
{
	struct rtable *t = table_get(100, PS_FAM_V4, true);
	struct sync_stats st;
	(void)state;

	first_dump_discarded(t, "192.0.2.0", 24, overrun_once, false);
	retry_then_adopt(t, 2, "192.0.2.0", 24);

	/* An overrun later: a rescan of the table follows, and it completes. */
	mon_overruns_due = 1;
	sync_rescan_soon();
	retry_then_adopt(t, 3, "192.0.2.0", 24);
	sync_get_stats(&st);
	assert_int_equal(st.dumps_completed, 2);
}

/* The kernel drops five notifications, with no ENOBUFS: the socket was congested already. */
static void
lose_five(struct rtable *t)
{
	(void)t;
	mon_drops += 5;
}

/*
 * After an overrun the kernel drops notifications silently until the socket
 * has been read empty: only the socket's drop counter says so. A dump during
 * which it rose is taken again, as one during which ENOBUFS came; the monitor
 * counts the overrun and the drops.
 */
static void
test_monitor_silent_drops(void **state)
{
	struct rtable *t = table_get(100, PS_FAM_V4, true);
	struct mon_stats ms;
	(void)state;

	first_dump_discarded(t, "192.0.2.0", 24, lose_five, false);
	mon_get_stats(&ms);
	assert_int_equal(ms.overruns, 1);
	assert_int_equal(ms.drops, 5);
	retry_then_adopt(t, 2, "192.0.2.0", 24);
	mon_get_stats(&ms);
	assert_int_equal(ms.overruns, 1); /* the counter stood still: nothing more lost */
}

/* The kernel drops a notification for the monitor (during a dump of t). */
static void
lose_one(struct rtable *t)
{
	(void)t;
	mon_drops++;
}

static uint64_t want_completed;
static bool
completed_reached(void)
{
	struct sync_stats st;

	sync_get_stats(&st);
	return st.dumps_completed >= want_completed;
}

/*
 * t's first scan, notifications lost during every dump: SYNC_CHURN_TRIES
 * discarded, the next used (IPv6: unsure); its rescan comes unasked, and a
 * quiet dump ends it. *n counts the dump requests.
 */
static void
first_scan_under_loss(struct rtable *t, unsigned *n, const char *dst, unsigned plen)
{
	bool v6 = t->family == PS_FAM_V6;
	struct sync_stats before, st;

	sync_get_stats(&before);
	assert_false(sync_table_ready(t));
	for (unsigned i = 0; i <= SYNC_CHURN_TRIES; i++)
		answer_dump(t, ++*n, dst, plen, lose_one);
	cond_table = t;
	assert_true(run_until(table_ready));
	assert_true(t->dump_unsure == v6);
	assert_non_null(route_have(lookup(t, dst, plen)));
	sync_get_stats(&st);
	assert_int_equal(st.dumps_failed - before.dumps_failed, SYNC_CHURN_TRIES);
	assert_int_equal(st.dumps_completed - before.dumps_completed, 1);
	assert_int_equal(st.dumps_unsure - before.dumps_unsure, v6);
	answer_dump(t, ++*n, dst, plen, NULL); /* unasked */
	want_completed = before.dumps_completed + 2;
	assert_true(run_until(completed_reached));
	assert_false(t->dump_unsure);
}

/*
 * Notifications lost during every dump: SYNC_CHURN_TRIES are discarded in a
 * row, then one is used, so that a first scan does not wait for the churn to
 * end: an IPv4 one as it is (what it lacks was gone at its turn), an IPv6 one
 * as unsure (its walker may have skipped routes, and the notifications that
 * would say whether the table changed are gone). Either table is scanned
 * again soon after, unasked (what the dump showed may be stale), and no more.
 */
static void
sustained_loss(struct rtable *t, const char *dst, unsigned plen)
{
	unsigned n = 0;

	first_scan_under_loss(t, &n, dst, plen);
	for (int i = 0; i < 80; i++) {
		uv_run(&loop, UV_RUN_NOWAIT);
		uv_sleep(10);
	}
	assert_int_equal(kf_dump_requests, n);
}

static void
test_sustained_loss_v4(void **state)
{
	(void)state;
	sustained_loss(table_get(100, PS_FAM_V4, true), "192.0.2.0", 24);
}

static void
test_sustained_loss_v6(void **state)
{
	(void)state;
	sustained_loss(table_get(100, PS_FAM_V6, true), "2001:db8::", 32);
}

/* More notifications wait for the monitor than it reads at once (at the end of a dump of t). */
static void
monitor_behind(struct rtable *t)
{
	(void)t;
	mon_backlog = MON_CATCH_UP + 1;
}

/* More than sync lets it read before it judges a dump. */
static void
monitor_far_behind(struct rtable *t)
{
	(void)t;
	mon_backlog = SYNC_CATCH_UP_READS * MON_CATCH_UP + 1;
}

/*
 * An IPv6 dump that ends while the monitor has more notifications waiting
 * than sync lets it read before judging the dump: they may say that others
 * changed the table, so the dump counts as changed and is taken again. The
 * next ends with fewer waiting (more than one read's worth): read up, it is
 * sure.
 */
static void
test_v6_monitor_behind(void **state)
{
	struct rtable *t = table_get(100, PS_FAM_V6, true);
	struct sync_stats st;
	(void)state;

	first_dump_discarded(t, "2001:db8::", 32, monitor_far_behind, true);
	answer_dump(t, 2, "2001:db8::", 32, monitor_behind);
	cond_table = t;
	assert_true(run_until(table_ready));
	assert_non_null(route_have(lookup(t, "2001:db8::", 32)));
	assert_int_equal(mon_backlog, 0);
	assert_false(t->dump_unsure);
	sync_get_stats(&st);
	assert_int_equal(st.dumps_unsure, 0);
}

/*
 * While the socket stays congested every read may find more dropped: the
 * monitor says a loss when it begins, and again when the socket is read
 * empty with nothing more lost (a rescan is for after), not at every read.
 */
static void
test_monitor_loss_said_twice(void **state)
{
	struct mon_stats ms;
	(void)state;

	mon_drops++;
	mon_catch_up();
	assert_int_equal(mon_said_lost, 1);
	mon_drops++;
	mon_catch_up();
	assert_int_equal(mon_said_lost, 1); /* still losing */
	mon_catch_up();
	assert_int_equal(mon_said_lost, 2); /* read empty, nothing more lost */
	mon_catch_up();
	assert_int_equal(mon_said_lost, 2);
	/* A loss with more waiting than one read: its end is when they are read. */
	mon_drops++;
	mon_backlog = MON_CATCH_UP + 10;
	mon_catch_up();
	assert_int_equal(mon_said_lost, 3);
	mon_catch_up();
	assert_int_equal(mon_said_lost, 4);
	mon_get_stats(&ms);
	assert_int_equal(ms.overruns, 3);
	assert_int_equal(ms.drops, 3);
}

/*
 * Does the monitor's socket filter, attached to one end of a datagram
 * socketpair, let this message through: a type, rtm_table, an RTA_TABLE
 * attribute of id after another attribute (none if id is 0), and the port?
 */
static bool
filter_passes_msg(int sv[2], uint16_t type, uint8_t rtm_table, uint32_t id, uint32_t port)
{
	struct {
		struct nlmsghdr h;
		struct rtmsg rt;
		struct nlattr prio;
		uint32_t metric;
		struct nlattr tab;
		uint32_t id;
	} m = { .h = { .nlmsg_type = type, .nlmsg_pid = port },
		.rt = { .rtm_family = AF_INET, .rtm_table = rtm_table },
		.prio = { .nla_len = NLA_HDRLEN + 4, .nla_type = RTA_PRIORITY }, .metric = 20,
		.tab = { .nla_len = NLA_HDRLEN + 4, .nla_type = RTA_TABLE }, .id = id };
	char buf[64];

	m.h.nlmsg_len = id ? sizeof(m) : offsetof(typeof(m), prio);
	mon_filter_to(sv[1]);
	if (send(sv[0], &m, m.h.nlmsg_len, 0) < 0)
		return false;
	/* What the receiver's filter drops, the sender's send discards. */
	return recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT) == (ssize_t)m.h.nlmsg_len;
}

/* The same, of table, as the kernel names it: rtm_table, or RT_TABLE_COMPAT over 255, and RTA_TABLE. */
static bool
filter_passes(int sv[2], uint16_t type, uint32_t table, uint32_t port)
{
	return filter_passes_msg(sv, type, table > 255 ? RT_TABLE_COMPAT : (uint8_t)table, table, port);
}

/*
 * The monitor's socket filter, as the kernel runs it: off go fibd's own
 * echoes and route messages of tables not named, over 255 too (found by their
 * RTA_TABLE attribute), and of table 252 (RT_TABLE_COMPAT) unless named; link
 * and address messages, and a route message with RT_TABLE_COMPAT and no
 * attribute, pass. Before any table is named, and with more than it can check,
 * every table passes.
 */
static void
test_monitor_filter(void **state)
{
	uint32_t named[] = { 100, 254, 100, 300 }, many[260];
	int sv[2];
	(void)state;

	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
	mon_close(); /* again with a writer's port to filter */
	uv_run(&loop, UV_RUN_NOWAIT);
	assert_int_equal(mon_init(&loop, &(const struct mon_hooks){ 0 }, 0, 4242), 0);
	assert_true(filter_passes(sv, RTM_NEWROUTE, 200, 1));
	assert_false(filter_passes(sv, RTM_NEWROUTE, 200, 4242));
	mon_set_tables(named, 4);
	assert_true(filter_passes(sv, RTM_NEWROUTE, 100, 1));
	assert_true(filter_passes(sv, RTM_DELROUTE, 254, 1));
	assert_false(filter_passes(sv, RTM_NEWROUTE, 200, 1));
	assert_false(filter_passes(sv, RTM_DELROUTE, 255, 1));
	assert_false(filter_passes(sv, RTM_NEWROUTE, RT_TABLE_COMPAT, 1)); /* 252 is a table */
	assert_true(filter_passes_msg(sv, RTM_NEWROUTE, RT_TABLE_COMPAT, 0, 1)); /* no RTA_TABLE */
	assert_true(filter_passes(sv, RTM_NEWROUTE, 300, 1));
	assert_true(filter_passes(sv, RTM_DELROUTE, 300, 1));
	assert_false(filter_passes(sv, RTM_NEWROUTE, 301, 1));
	assert_false(filter_passes(sv, RTM_NEWROUTE, 300 + (1u << 24), 1));
	assert_false(filter_passes(sv, RTM_NEWROUTE, 300, 4242));
	assert_false(filter_passes(sv, RTM_NEWROUTE, 100, 4242));
	assert_true(filter_passes(sv, RTM_NEWLINK, 200, 1));
	assert_true(filter_passes(sv, RTM_NEWADDR, 0, 1));
	for (unsigned i = 0; i < 260; i++)
		many[i] = i < 200 ? i + 1 : 1000 + i;
	many[0] = RT_TABLE_COMPAT;
	mon_set_tables(many, 220);
	assert_true(filter_passes(sv, RTM_NEWROUTE, RT_TABLE_COMPAT, 1));
	assert_true(filter_passes(sv, RTM_NEWROUTE, 200, 1));
	assert_false(filter_passes(sv, RTM_NEWROUTE, 201, 1));
	assert_true(filter_passes(sv, RTM_NEWROUTE, 1219, 1));
	assert_false(filter_passes(sv, RTM_NEWROUTE, 1220, 1));
	for (unsigned i = 0; i < 260; i++)
		many[i] = i;
	mon_set_tables(many, 260);
	assert_true(filter_passes(sv, RTM_NEWROUTE, 201, 1));
	assert_false(filter_passes(sv, RTM_NEWROUTE, 201, 4242));
	close(sv[0]);
	close(sv[1]);
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

/*
 * What learn hands the learners, as one string: B and E for a refresh's begin
 * and end, + and - for a route added and deleted, with its N: 2001:db8:N::/48,
 * 192.0.N.0/24.
 */
static char learned[128];

static void
learned_route(const struct ps_route *r)
{
	size_t n = strlen(learned);

	snprintf(learned + n, sizeof(learned) - n, "%c%u", r->learn_op == PS_LEARN_ADD ? '+' : '-',
	    r->key.prefix.b[r->key.family == PS_FAM_V4 ? 2 : 5]);
}

static void
learned_mark(uint32_t table, uint8_t family, uint8_t phase)
{
	size_t n = strlen(learned);

	assert_true(table_get(table, family, false)->learners);
	snprintf(learned + n, sizeof(learned) - n, "%c", phase == PS_REFRESH_BEGIN ? 'B' : 'E');
}

static char *
learned_take(void)
{
	static char was[sizeof(learned)];

	strcpy(was, learned);
	learned[0] = 0;
	return was;
}

/* The route message b holds at offset `at` becomes a blackhole (learnable without nexthops). */
static void
blackhole(struct nlbuild *b, size_t at)
{
	struct rtmsg *rtm = mnl_nlmsg_get_payload((struct nlmsghdr *)(b->buf + at));

	rtm->rtm_type = RTN_BLACKHOLE;
}

/* A foreign blackhole route N of t's family (2001:db8:N::/48, 192.0.N.0/24) into b. */
static void
foreign_route(struct nlbuild *b, const struct rtable *t, unsigned route)
{
	size_t at = b->len;
	char dst[32];

	if (t->family == PS_FAM_V4)
		snprintf(dst, sizeof(dst), "192.0.%u.0", route);
	else
		snprintf(dst, sizeof(dst), "2001:db8:%u::", route);
	nlb_route(b, t->family == PS_FAM_V4 ? AF_INET : AF_INET6, dst,
	    t->family == PS_FAM_V4 ? 24 : 48, t->id, RTPROT_STATIC, 0, 0);
	blackhole(b, at);
}

/* Learn dump request n of t, showing foreign route N, meanwhile(t) during it. */
static void
answer_learn_dump(struct rtable *t, unsigned n, unsigned route, void (*meanwhile)(struct rtable *))
{
	struct nlbuild first = { .len = 0 };

	foreign_route(&first, t, route);
	answer_dump_with(t, n, &first, meanwhile);
	assert_int_equal(kf_dump_requests, n);
	assert_int_equal(kf_dump_last_protocol, 0); /* every protocol */
	for (int i = 0; i < 20; i++)
		uv_run(&loop, UV_RUN_NOWAIT); /* the replay */
}

/* Others add route 1 to t, and the monitor hands it on. */
static void
foreign_add(struct rtable *t)
{
	static struct nlbuild b;
	struct nlmsghdr *nlh = (struct nlmsghdr *)b.buf;
	struct kmsg_rt kr;

	memset(&b, 0, sizeof(b));
	foreign_route(&b, t, 1);
	nlh->nlmsg_flags = 0;
	assert_int_equal(kmsg_rt_parse(nlh, &kr), 0);
	sync_kernel_route(nlh, &kr);
}

/* The kernel drops notifications (t's change count stands still). */
static void
lose_some(struct rtable *t)
{
	(void)t;
	mon_drops += 5;
}

static bool
learn_idle(void)
{
	return !cond_table->learn_queued && kf_dump_requests == want_requests;
}

/*
 * t's learn dump just ended unsure (try n in a row): the next waits
 * SYNC_LEARN_RETRY_MS, doubling; the test does not wait it out, it asks again.
 */
static void
learn_backoff(struct rtable *t, unsigned n)
{
	uint64_t want = (uint64_t)SYNC_LEARN_RETRY_MS << (n - 1);

	if (want > SYNC_RETRY_MAX_MS)
		want = SYNC_RETRY_MAX_MS;
	assert_true(t->learn_queued);
	assert_true(t->learn_not_before > uv_now(&loop) + want - 100);
	assert_true(t->learn_not_before <= uv_now(&loop) + want);
	t->learn_not_before = 0;
	sync_learn_table(t);
}

/*
 * A learn dump is a refresh: begin before its routes, end once the dump is
 * whole, before the notifications kept during it. One during which the table
 * changed (others, or fibd's own writes), or notifications were lost, may lack
 * routes still there: no end, its kept notifications replayed, and another
 * after a backoff that doubles, SYNC_CHURN_TRIES times in a row, then left
 * open; in either family. Notifications lost: every learned table is dumped
 * again (soon).
 */
static void
test_learn_refresh(void **state)
{
	struct rtable *t = table_get(100, PS_FAM_V6, true), *t4 = table_get(100, PS_FAM_V4, true);
	struct learn_stats ls;
	unsigned n = 0;
	(void)state;

	learn_init(12, &sync_env, &(const struct learn_hooks){ .route = learned_route,
	    .refresh = learned_mark });
	learned[0] = 0;
	t->learners = 1; /* as feed.c counts them */
	sync_learn_table(t);
	answer_learn_dump(t, ++n, 7, NULL);
	assert_string_equal(learned_take(), "B+7E");

	/* Changed by others: no end; what changed is replayed; another follows (1 s), quiet. */
	sync_learn_table(t);
	answer_learn_dump(t, ++n, 7, foreign_add);
	assert_string_equal(learned_take(), "B+7+1");
	answer_learn_dump(t, ++n, 7, NULL);
	assert_string_equal(learned_take(), "B+7E");
	cond_table = t;
	assert_true(run_until(learn_idle));

	/* Notifications lost while nothing runs: the table is learned again. */
	sync_notifications_lost();
	answer_learn_dump(t, ++n, 7, NULL);
	assert_string_equal(learned_take(), "B+7E");

	/* Lost during one, or fibd's own write acknowledged: no end, and again. */
	sync_learn_table(t);
	answer_learn_dump(t, ++n, 7, lose_some);
	assert_string_equal(learned_take(), "B+7");
	learn_backoff(t, 1);
	answer_learn_dump(t, ++n, 7, own_write);
	assert_string_equal(learned_take(), "B+7");
	learn_backoff(t, 2);
	answer_learn_dump(t, ++n, 2, NULL);
	assert_string_equal(learned_take(), "B+2E");
	learn_get_stats(&ls);
	assert_int_equal(ls.refreshes, 4);

	/* Churn in every dump: SYNC_CHURN_TRIES more, then the refresh is left open. */
	sync_learn_table(t);
	for (unsigned i = 1; i <= SYNC_CHURN_TRIES + 1; i++) {
		answer_learn_dump(t, ++n, 7, foreign_add);
		assert_string_equal(learned_take(), "B+7+1");
		if (i <= SYNC_CHURN_TRIES)
			learn_backoff(t, i);
	}
	want_requests = n;
	assert_true(run_until(learn_idle));
	assert_int_equal(t->learn_tries, 0);

	/* IPv4 the same: a dump its learners may drop routes on moves nothing under it. */
	t4->learners = 1;
	sync_learn_table(t4);
	answer_learn_dump(t4, ++n, 7, lose_some);
	assert_string_equal(learned_take(), "B+7");
	learn_backoff(t4, 1);
	answer_learn_dump(t4, ++n, 7, foreign_add);
	assert_string_equal(learned_take(), "B+7+1");
	learn_backoff(t4, 2);
	answer_learn_dump(t4, ++n, 7, own_write);
	assert_string_equal(learned_take(), "B+7");
	learn_backoff(t4, 3);
	answer_learn_dump(t4, ++n, 7, own_in_flight);
	assert_string_equal(learned_take(), "B+7");
	t4->n_inflight = 0;
	/* Given up after those; a new learner asks again: fibd's writes in another table do not count. */
	want_requests = n;
	cond_table = t4;
	assert_true(run_until(learn_idle));
	assert_int_equal(t4->learn_tries, 0);
	t->n_inflight = 1;
	sync_learn_table(t4);
	answer_learn_dump(t4, ++n, 7, NULL);
	assert_string_equal(learned_take(), "B+7E");
	t->n_inflight = 0;

	t->learners = t4->learners = 0;
	learn_forget(t);
	learn_forget(t4);
	learn_init(12, &sync_env, &(const struct learn_hooks){ 0 });
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_interrupted_then_good, setup, teardown),
		cmocka_unit_test_setup_teardown(test_notifications_replayed_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keep_overflow_rescans, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v6_changed_during_dump, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v6_own_writes_repair_waits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_delete_not_adopted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_enobufs_discards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failing_table_does_not_block_another, setup, teardown),
		cmocka_unit_test_setup_teardown(test_monitor_overrun_rescans, setup, teardown),
		cmocka_unit_test_setup_teardown(test_monitor_silent_drops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sustained_loss_v4, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sustained_loss_v6, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v6_monitor_behind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_monitor_loss_said_twice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_monitor_filter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_learn_refresh, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shutdown_mid_dump, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
