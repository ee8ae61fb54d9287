/*
 * The writer (nl.c) over a fake kernel (tests/fakes/kfake_nl.c): routes go out
 * in one batch and are installed by their ACKs; a send the kernel takes long
 * over leaves the loop free (it waits in the writer thread); a batch the kernel refuses as
 * a whole fails each of its routes with that error and frees the window (it
 * wedged the writer before); a send that would block waits and goes out later;
 * ACK errors land on the route (unreachable waits, EEXIST asks the exists hook,
 * a delete of what is gone is done); only a batch's last message asks for an
 * ACK, and an answer settles the silent messages before it as done; an ACK
 * out of order has the messages before it that asked for one written again
 * rather than stuck in flight; routes through a
 * gateway alone take a nexthop object on the device the kernel's echo of the
 * first of them names, and stay inline if the kernel cannot reach it; after a
 * restart such a set uses the object an earlier fibd made without a write, and
 * the object is deleted only when no route uses it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include <cmocka.h>
#include <libmnl/libmnl.h>
#include <linux/nexthop.h>
#include <linux/rtnetlink.h>

#include "kfake.h"
#include "log.h"
#include "nl-internal.h"
#include "nl.h"
#include "table.h"
#include "troute.h"

static uv_loop_t loop;
static unsigned n_done, n_exists;
static int last_err;

static void
on_done(struct route *r, int err, const char *text)
{
	(void)r;
	(void)text;
	if (err < 0)
		return; /* nothing written */
	n_done++;
	last_err = err;
}

static void
on_exists(struct rtable *t)
{
	(void)t;
	n_exists++;
}

static struct rtable *t;

/*
 * 192.0.2.<n>/32 via gw, wanted; on the write queue. (Attribute sets outlive
 * a test: one that uses nexthop objects takes a gateway of its own.)
 */
static struct route *
want_route_via(unsigned n, const char *gw)
{
	char dst[32];
	struct route *r;

	snprintf(dst, sizeof(dst), "192.0.2.%u", n);
	r = troute_want(t, dst, 32, gw);
	r->flags |= R_EXCL;
	nl_enqueue(r);
	return r;
}

static struct route *
want_route(unsigned n)
{
	return want_route_via(n, "198.51.100.1");
}

/* Step the loop, letting the writer thread send what it was handed between steps. */
static void
run(void)
{
	for (int i = 0; i < 10; i++) {
		uv_run(&loop, UV_RUN_NOWAIT);
		nl_sync();
	}
}

static uint32_t
writer_busy(void)
{
	struct nl_stats st;
	nl_get_stats(&st);
	return st.batches_queued;
}

static uint32_t
inflight(void)
{
	struct nl_stats st;
	nl_get_stats(&st);
	return st.inflight;
}

static int
setup(void **state)
{
	(void)state;
	log_init("test", true, LOG_LVL_WARN);
	n_done = n_exists = 0;
	last_err = -1;
	uv_loop_init(&loop);
	if (table_init() < 0 ||
	    nl_init(&loop, 12, &(const struct nl_hooks){ .done = on_done, .exists = on_exists }) < 0)
		return -1;
	nl_use_nh_objects(0);
	kf_nl_install();
	t = table_get(100, PS_FAM_V4, true);
	return t ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	nl_close();
	kf_nl_uninstall();
	uv_run(&loop, UV_RUN_NOWAIT); /* the close callbacks */
	assert_int_equal(uv_loop_close(&loop), 0);
	table_shutdown();
	return 0;
}

static void
test_batch_acked(void **state)
{
	struct route *r[3];
	(void)state;

	for (unsigned i = 0; i < 3; i++)
		r[i] = want_route(i + 1);
	run();
	assert_int_equal(kf_nl_sends, 1); /* one batch */
	assert_int_equal(kf_nl_unanswered(), 3);
	assert_int_equal(kf_nl_type(0), RTM_NEWROUTE);
	assert_int_equal(inflight(), 3);
	kf_nl_ack(3, 0);
	nl_poll();
	assert_int_equal(n_done, 3);
	assert_int_equal(last_err, 0);
	assert_int_equal(inflight(), 0);
	for (unsigned i = 0; i < 3; i++)
		assert_ptr_equal(route_have(r[i]), route_want(r[i]));
	assert_int_equal(t->n_installed, 3);
}

/*
 * The kernel takes long over a batch: the send waits in the writer thread, the
 * loop goes on and builds the next batch meanwhile, and both go out in order.
 */
static void
test_loop_free_while_send_blocks(void **state)
{
	struct route *a, *b;
	(void)state;

	kf_nl_hold(true);
	a = want_route(1);
	for (int i = 0; i < 10; i++)
		uv_run(&loop, UV_RUN_NOWAIT); /* returns: the loop does not wait */
	for (int i = 0; i < 1000 && !kf_nl_held_sends(); i++)
		usleep(1000);
	assert_int_equal(kf_nl_held_sends(), 1); /* the first batch's send is under way */
	b = want_route(2);
	for (int i = 0; i < 10; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	assert_int_equal(inflight(), 2); /* the second is built and handed over */
	assert_int_equal(kf_nl_sends, 0);
	kf_nl_hold(false);
	run();
	assert_int_equal(kf_nl_sends, 2);
	assert_int_equal(kf_nl_seq(0) + 1, kf_nl_seq(1)); /* in order */
	kf_nl_ack(2, 0);
	nl_poll();
	assert_ptr_equal(route_have(a), route_want(a));
	assert_ptr_equal(route_have(b), route_want(b));
	assert_int_equal(inflight(), 0);
}

/* Hand batches while every send is held; count what is handed over. */
static void
build_held(unsigned first, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		want_route(first + i);
		for (int k = 0; k < 5; k++)
			uv_run(&loop, UV_RUN_NOWAIT);
	}
}

/*
 * The ring of batches is bounded: with the kernel stuck on one send, the loop
 * hands NL_SLOTS - 1 batches to the writer (one sending, the others queued),
 * fills the last slot, and then waits for a free one; the other routes stay on
 * the queue, not built.
 */
_Static_assert(NL_SLOTS >= 2 && 2 * NL_SLOTS <= 254, "test_batches_bounded: routes 192.0.2.1 .. 2*NL_SLOTS");

static void
test_batches_bounded(void **state)
{
	(void)state;

	kf_nl_hold(true);
	build_held(1, 2 * NL_SLOTS); /* one batch a route while there is a slot */
	assert_int_equal(writer_busy(), NL_SLOTS - 1);
	assert_int_equal(inflight(), NL_SLOTS); /* handed over, and one filled and waiting */
	kf_nl_hold(false);
	run();
	/* Those handed over, then the filled one, then the other NL_SLOTS routes in one batch. */
	assert_int_equal(kf_nl_sends, NL_SLOTS + 1);
	kf_nl_ack(2 * NL_SLOTS, 0);
	nl_poll();
	assert_int_equal(inflight(), 0);
	assert_int_equal(n_done, 2 * NL_SLOTS);
}

/* Sends held, routes 192.0.2.1 to n, each handed to the writer thread as a batch of its own. */
static void
held_batches_of_one(struct route **r, unsigned n)
{
	kf_nl_hold(true);
	for (unsigned i = 0; i < n; i++) {
		r[i] = want_route(i + 1);
		for (int k = 0; k < 5; k++)
			uv_run(&loop, UV_RUN_NOWAIT);
	}
}

/* A refused batch between two good ones fails exactly its own routes. */
static void
test_refused_batch_among_others(void **state)
{
	struct route *r[3];
	(void)state;

	held_batches_of_one(r, 3);
	/* The first send goes; the second is refused; the third goes after it. */
	kf_nl_send_errno_at(2, EINVAL);
	kf_nl_hold(false);
	run();
	assert_int_equal(kf_nl_sends, 2);
	kf_nl_ack(2, 0);
	nl_poll();
	assert_ptr_equal(route_have(r[0]), route_want(r[0]));
	assert_null(route_have(r[1]));
	assert_true(r[1]->flags & R_FAILED);
	assert_int_equal(r[1]->err, EINVAL);
	assert_ptr_equal(route_have(r[2]), route_want(r[2]));
	assert_int_equal(inflight(), 0);
}

static void *
release_later(void *arg)
{
	(void)arg;
	usleep(100 * 1000);
	kf_nl_hold(false);
	return NULL;
}

/* Closing with batches handed over: the send under way ends, the rest are dropped, no leak. */
static void
test_close_with_batches_in_flight(void **state)
{
	pthread_t th;
	(void)state;

	kf_nl_hold(true);
	build_held(1, 3);
	assert_int_equal(writer_busy(), 3);
	for (int i = 0; i < 1000 && !kf_nl_held_sends(); i++)
		usleep(1000);
	assert_int_equal(kf_nl_held_sends(), 1); /* the first send is under way */
	assert_int_equal(pthread_create(&th, NULL, release_later, NULL), 0);
	nl_close(); /* waits for the held send only */
	pthread_join(th, NULL);
	assert_int_equal(kf_nl_sends, 1);
	/* teardown closes again: a no-op */
}

/* The kernel refuses the whole batch: each route fails with that error; nothing stays in flight. */
static void
test_refused_batch_fails_each_route(void **state)
{
	struct nl_stats st;
	struct route *r[3], *later;
	(void)state;

	kf_nl_send_errno = EINVAL;
	for (unsigned i = 0; i < 3; i++)
		r[i] = want_route(i + 1);
	run();
	assert_int_equal(kf_nl_sends, 0);
	assert_int_equal(n_done, 3);
	assert_int_equal(last_err, EINVAL);
	assert_int_equal(inflight(), 0); /* the window is free again */
	for (unsigned i = 0; i < 3; i++) {
		assert_null(route_have(r[i]));
		assert_true(r[i]->flags & R_FAILED);
		assert_int_equal(r[i]->err, EINVAL);
	}
	nl_get_stats(&st);
	assert_int_equal(st.batches_refused, 1);
	/* The writer goes on: a later route is written and installed. */
	later = want_route(9);
	run();
	assert_int_equal(kf_nl_unanswered(), 1);
	kf_nl_ack(1, 0);
	nl_poll();
	assert_ptr_equal(route_have(later), route_want(later));
	assert_int_equal(inflight(), 0);
}

/* A send that would block (the socket's buffer is full) waits, and goes out when it can. */
static void
test_send_waits(void **state)
{
	struct nl_stats st;
	struct route *r;
	(void)state;

	kf_nl_send_errno = ENOBUFS;
	r = want_route(1);
	run(); /* the first try meets ENOBUFS; the socket then polls writable and sends */
	nl_get_stats(&st);
	assert_int_equal(st.eagain, 1);
	assert_int_equal(kf_nl_sends, 1);
	kf_nl_ack(1, 0);
	nl_poll();
	assert_ptr_equal(route_have(r), route_want(r));
}

static void
test_ack_errors(void **state)
{
	struct route *a, *b;
	(void)state;

	a = want_route(1);
	b = want_route(2);
	run();
	kf_nl_ack(1, ENETUNREACH);
	kf_nl_ack(1, EEXIST);
	nl_poll();
	assert_true(a->flags & R_WAITING); /* retried on a link or address change */
	assert_true(b->flags & R_FAILED);
	assert_int_equal(n_exists, 1); /* an EXCL add met a route there */
	assert_int_equal(inflight(), 0);

	/* A delete of a route already gone is done. */
	nl_links_changed(); /* a is tried again */
	run();
	kf_nl_ack(1, 0);
	nl_poll();
	assert_ptr_equal(route_have(a), route_want(a));
	route_set_want(a, NULL);
	nl_enqueue(a);
	run();
	assert_int_equal(kf_nl_type(0), RTM_DELROUTE);
	kf_nl_ack(1, ESRCH);
	nl_poll();
	assert_null(route_have(a));
	assert_int_equal(last_err, 0);
}

/* The value of 32-bit attribute `type` of message i as sent, or 0 if it has none. */
static uint32_t
sent_u32(unsigned i, size_t hdrlen, uint16_t type)
{
	const struct nlmsghdr *nlh = kf_nl_msg(i);
	const struct nlattr *attr;

	mnl_attr_for_each(attr, nlh, hdrlen)
		if (mnl_attr_get_type(attr) == type)
			return mnl_attr_get_u32(attr);
	return 0;
}

static void
test_gateway_only_takes_object(void **state)
{
	struct route *r[3], *u[3];
	uint32_t id;
	(void)state;

	nl_use_nh_objects(1);
	for (unsigned i = 0; i < 3; i++)
		r[i] = want_route_via(i + 1, "198.51.100.20");
	run();
	/* The first route asks, inline; the others wait for the answer. */
	assert_int_equal(kf_nl_unanswered(), 1);
	assert_int_equal(kf_nl_type(0), RTM_NEWROUTE);
	assert_true(kf_nl_msg(0)->nlmsg_flags & NLM_F_ECHO);
	assert_int_equal(sent_u32(0, sizeof(struct rtmsg), RTA_NH_ID), 0);
	assert_int_equal(sent_u32(0, sizeof(struct rtmsg), RTA_OIF), 0);
	kf_nl_echo(0, 7);
	kf_nl_ack(1, 0);
	nl_poll();
	run();
	/* An object on device 7, and the two routes through it. */
	assert_int_equal(kf_nl_unanswered(), 3);
	assert_int_equal(kf_nl_type(0), RTM_NEWNEXTHOP);
	assert_int_equal(sent_u32(0, sizeof(struct nhmsg), NHA_OIF), 7);
	id = sent_u32(0, sizeof(struct nhmsg), NHA_ID);
	assert_int_not_equal(id, 0);
	for (unsigned i = 1; i < 3; i++) {
		assert_int_equal(kf_nl_type(i), RTM_NEWROUTE);
		assert_false(kf_nl_msg(i)->nlmsg_flags & NLM_F_ECHO);
		assert_int_equal(sent_u32(i, sizeof(struct rtmsg), RTA_NH_ID), id);
	}
	kf_nl_ack(3, 0);
	nl_poll();
	assert_int_equal(n_done, 3);
	for (unsigned i = 0; i < 3; i++)
		assert_ptr_equal(route_have(r[i]), route_want(r[i]));

	/* A gateway the kernel cannot reach: one asks, the rest go inline and wait as such routes do. */
	for (unsigned i = 0; i < 3; i++) {
		char dst[32];
		snprintf(dst, sizeof(dst), "192.0.2.%u", 10 + i);
		u[i] = troute_want(t, dst, 32, "198.51.100.9");
		u[i]->flags |= R_EXCL;
		nl_enqueue(u[i]);
	}
	run();
	assert_int_equal(kf_nl_unanswered(), 1);
	assert_true(kf_nl_msg(0)->nlmsg_flags & NLM_F_ECHO);
	kf_nl_ack(1, ENETUNREACH);
	nl_poll();
	run();
	assert_int_equal(kf_nl_unanswered(), 2);
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(kf_nl_type(i), RTM_NEWROUTE);
		assert_false(kf_nl_msg(i)->nlmsg_flags & NLM_F_ECHO);
		assert_int_equal(sent_u32(i, sizeof(struct rtmsg), RTA_NH_ID), 0);
	}
	kf_nl_ack(2, ENETUNREACH);
	nl_poll();
	for (unsigned i = 0; i < 3; i++)
		assert_true(u[i]->flags & R_WAITING);
	assert_int_equal(inflight(), 0);
}

/* Nexthop i of an IPv4 unicast route: via gw on dev, weight 1. */
static void
set_nh_v4(struct ps_route *pr, unsigned i, const char *gw, const char *dev)
{
	pr->nh[i].gw_family = PS_FAM_V4;
	assert_int_equal(inet_pton(AF_INET, gw, pr->nh[i].gw.b), 1);
	pr->nh[i].weight = 1;
	snprintf(pr->nh[i].ifname, sizeof(pr->nh[i].ifname), "%s", dev);
}

/* The interned set "via gw dev dev" of t's family. */
static struct rattr *
rattr_via(const char *gw, const char *dev)
{
	static struct ps_route pr;

	memset(&pr, 0, sizeof(pr));
	pr.key.family = PS_FAM_V4;
	pr.type = PS_RT_UNICAST;
	pr.n_nexthops = 1;
	set_nh_v4(&pr, 0, gw, dev);
	return rattr_intern(&pr);
}

/* Whether a message not yet answered deletes nexthop object id. */
static bool
deletes_object(uint32_t id)
{
	for (unsigned i = 0; i < kf_nl_unanswered(); i++)
		if (kf_nl_type(i) == RTM_DELNEXTHOP && sent_u32(i, sizeof(struct nhmsg), NHA_ID) == id)
			return true;
	return false;
}

/*
 * After a restart: a route fed through a gateway alone finds the kernel's
 * route (as its dump read, with the device) on an earlier fibd's object, which
 * another route, fed with that device, uses too. The gateway-only set uses the
 * object without a write; when its route goes, the object stays for the other;
 * when that one goes too, the object is deleted, and deleted again when an
 * overrun loses the answer (it stayed in the kernel before).
 */
static void
test_object_taken_over_and_shared(void **state)
{
	struct rattr *h;
	struct route *r1, *r2;
	const uint32_t x = 0x10000005;
	(void)state;

	nl_use_nh_objects(1);
	h = rattr_via("198.51.100.21", "lo"); /* as a dump read it: fibd's earlier object x */
	h->nh_id = x;
	h->nh_state = RATTR_NH_CREATED;
	r1 = want_route_via(1, "198.51.100.21"); /* via the gateway alone */
	route_set_have(r1, rattr_ref(h));
	r1->flags &= (uint8_t)~R_EXCL;
	r2 = troute_want(t, "192.0.2.2", 32, "198.51.100.21");
	route_set_want(r2, rattr_ref(h));    /* fed with its device */
	route_set_have(r2, h);               /* the reference rattr_via gave */
	run();
	assert_int_equal(kf_nl_unanswered(), 0); /* nothing written */
	assert_ptr_equal(route_have(r1), route_want(r1));
	assert_int_equal(route_want(r1)->nh_id, x);

	/* r1 goes: its route is deleted, the object stays (r2 uses it). */
	route_set_want(r1, NULL);
	nl_enqueue(r1);
	run();
	assert_int_equal(kf_nl_unanswered(), 1);
	assert_int_equal(kf_nl_type(0), RTM_DELROUTE);
	kf_nl_ack(1, 0);
	nl_poll();
	run();
	assert_false(deletes_object(x));
	assert_int_equal(kf_nl_unanswered(), 0);

	/* r2 goes too: now the object is deleted. */
	route_set_want(r2, NULL);
	nl_enqueue(r2);
	run();
	kf_nl_ack(1, 0);
	nl_poll();
	run();
	assert_true(deletes_object(x));

	/* Its answer lost in an overrun: the deletion is written again. */
	kf_nl_overrun();
	kf_nl_ack(kf_nl_unanswered(), 0); /* dropped */
	nl_poll();
	run();
	assert_true(deletes_object(x));
	kf_nl_ack(kf_nl_unanswered(), 0);
	nl_poll();
	assert_int_equal(inflight(), 0);
}

/*
 * An echo in the middle of a batch: the kernel's copy of the route that asks
 * comes before that route's ACK, and settles the silent messages before it.
 */
static void
test_echo_mid_batch(void **state)
{
	struct route *r0, *r1, *r2;
	struct nl_stats st;
	(void)state;

	nl_use_nh_objects(1);
	r0 = troute_want(t, "192.0.2.1", 32, "198.51.100.1");
	route_set_want(r0, rattr_via("198.51.100.22", "lo")); /* an object, then the route */
	r0->flags |= R_EXCL;
	nl_enqueue(r0);
	r1 = want_route_via(2, "198.51.100.23"); /* a gateway alone: asks, with an echo */
	r2 = troute_want(t, "192.0.2.3", 32, "198.51.100.1");
	route_set_want(r2, rattr_ref(route_want(r0))); /* through r0's object */
	r2->flags |= R_EXCL;
	nl_enqueue(r2);
	run();
	assert_int_equal(kf_nl_sends, 1);
	assert_int_equal(kf_nl_unanswered(), 4);
	assert_int_equal(kf_nl_type(0), RTM_NEWNEXTHOP);
	assert_false(kf_nl_msg(0)->nlmsg_flags & NLM_F_ACK);
	assert_false(kf_nl_msg(1)->nlmsg_flags & NLM_F_ACK);
	assert_true(kf_nl_msg(2)->nlmsg_flags & NLM_F_ECHO);
	assert_true(kf_nl_msg(2)->nlmsg_flags & NLM_F_ACK);
	assert_true(kf_nl_msg(3)->nlmsg_flags & NLM_F_ACK);

	kf_nl_ack(2, 0);   /* the object and r0: done, no answer */
	kf_nl_echo(0, 7);  /* r1's copy */
	nl_poll();
	assert_ptr_equal(route_have(r0), route_want(r0));
	assert_true(r1->flags & R_INFLIGHT);
	assert_int_equal(inflight(), 2);
	kf_nl_ack(2, 0);   /* r1's ACK, r2's */
	nl_poll();
	assert_ptr_equal(route_have(r1), route_want(r1));
	assert_ptr_equal(route_have(r2), route_want(r2));
	assert_int_equal(inflight(), 0);
	nl_get_stats(&st);
	assert_int_equal(st.gateways_resolved, 1);
}

/*
 * The widest route (PS_NEXTHOPS_MAX nexthops, each with its device) with
 * nexthop objects: its objects, its group and the route go out in one batch,
 * however small batches are.
 */
static void
test_widest_route_with_objects(void **state)
{
	static struct ps_route pr;
	struct route *r;
	(void)state;

	nl_use_nh_objects(1);
	memset(&pr, 0, sizeof(pr));
	pr.key.family = PS_FAM_V4;
	pr.type = PS_RT_UNICAST;
	pr.n_nexthops = PS_NEXTHOPS_MAX;
	for (unsigned i = 0; i < PS_NEXTHOPS_MAX; i++) {
		char gw[32];
		snprintf(gw, sizeof(gw), "10.1.%u.%u", i / 128, i % 128 + 1);
		set_nh_v4(&pr, i, gw, "lo");
	}
	r = troute_want(t, "192.0.2.1", 32, "198.51.100.23");
	route_set_want(r, rattr_intern(&pr));
	nl_enqueue(r);
	run();
	/* An object a nexthop, the group, the route. */
	assert_int_equal(kf_nl_unanswered(), PS_NEXTHOPS_MAX + 2);
	assert_int_equal(kf_nl_type(0), RTM_NEWNEXTHOP);
	assert_int_equal(kf_nl_type(PS_NEXTHOPS_MAX + 1), RTM_NEWROUTE);
	kf_nl_ack(PS_NEXTHOPS_MAX + 2, 0);
	nl_poll();
	assert_int_equal(n_done, 1);
	assert_ptr_equal(route_have(r), route_want(r));
	assert_int_equal(inflight(), 0);
}

/* The batch of the route that asks is refused: the routes waiting for the answer ask again, not wait for ever. */
static void
test_asking_batch_refused(void **state)
{
	struct route *r[3];
	(void)state;

	nl_use_nh_objects(1);
	for (unsigned i = 0; i < 3; i++)
		r[i] = want_route_via(i + 1, "198.51.100.22");
	kf_nl_send_errno = EINVAL;
	run();
	assert_true(r[0]->flags & R_FAILED);
	/* The next route asks; the last waits for its answer. */
	assert_int_equal(kf_nl_unanswered(), 1);
	assert_true(kf_nl_msg(0)->nlmsg_flags & NLM_F_ECHO);
	kf_nl_echo(0, 7);
	kf_nl_ack(1, 0);
	nl_poll();
	run();
	assert_int_equal(kf_nl_unanswered(), 2); /* the object, and the last route through it */
	assert_int_equal(kf_nl_type(0), RTM_NEWNEXTHOP);
	kf_nl_ack(2, 0);
	nl_poll();
	assert_ptr_equal(route_have(r[1]), route_want(r[1]));
	assert_ptr_equal(route_have(r[2]), route_want(r[2]));
	assert_int_equal(inflight(), 0);
}

/*
 * Only a batch's last message asks for an ACK; those before it are answered
 * only if they fail. An answer settles every message before it: one that did
 * not ask succeeded, as soon as anything after it is answered.
 */
static void
test_last_message_acked(void **state)
{
	struct route *r[4];
	(void)state;

	for (unsigned i = 0; i < 4; i++)
		r[i] = want_route(i + 1);
	run();
	assert_int_equal(kf_nl_sends, 1);
	assert_int_equal(kf_nl_unanswered(), 4);
	for (unsigned i = 0; i < 3; i++)
		assert_false(kf_nl_msg(i)->nlmsg_flags & NLM_F_ACK);
	assert_true(kf_nl_msg(3)->nlmsg_flags & NLM_F_ACK);

	kf_nl_ack(1, 0);      /* r0: done, no answer */
	kf_nl_ack(1, EINVAL); /* r1: refused, answered */
	nl_poll();
	assert_ptr_equal(route_have(r[0]), route_want(r[0])); /* settled by r1's answer */
	assert_true(r[1]->flags & R_FAILED);
	assert_int_equal(last_err, EINVAL);
	assert_true(r[2]->flags & R_INFLIGHT);
	assert_true(r[3]->flags & R_INFLIGHT);
	assert_int_equal(inflight(), 2);

	kf_nl_ack(2, 0); /* r2 done silently, r3's ACK */
	nl_poll();
	assert_int_equal(inflight(), 0);
	assert_ptr_equal(route_have(r[2]), route_want(r[2]));
	assert_ptr_equal(route_have(r[3]), route_want(r[3]));
	assert_int_equal(n_done, 4);
	assert_int_equal(t->n_installed, 3);
}

/*
 * An ACK before the ACK of an earlier message that asked for one: that one is
 * written again, not left in flight for ever; one that did not ask succeeded.
 */
static void
test_out_of_order_ack(void **state)
{
	struct route *r[3];
	uint32_t third;
	(void)state;

	r[0] = want_route(1);
	run(); /* a batch of its own: it asks for an ACK */
	r[1] = want_route(2);
	r[2] = want_route(3);
	run();
	assert_int_equal(kf_nl_sends, 2);
	assert_true(kf_nl_msg(0)->nlmsg_flags & NLM_F_ACK);
	assert_false(kf_nl_msg(1)->nlmsg_flags & NLM_F_ACK);
	third = kf_nl_seq(2);
	kf_nl_ack_seq(third, 0);
	nl_poll();
	assert_ptr_equal(route_have(r[1]), route_want(r[1]));
	assert_ptr_equal(route_have(r[2]), route_want(r[2]));
	assert_int_equal(inflight(), 0);
	assert_true(r[0]->flags & R_QUEUED);
	kf_nl_ack(2, 0); /* the kernel's late ACK for the first send: ignored */
	nl_poll();
	run();
	assert_int_equal(kf_nl_unanswered(), 1); /* written again */
	assert_int_equal(kf_nl_seq(0) > third, 1);
	kf_nl_ack(1, 0);
	nl_poll();
	for (unsigned i = 0; i < 3; i++)
		assert_ptr_equal(route_have(r[i]), route_want(r[i]));
}

/*
 * An overrun, reported while answers are still queued: every message in
 * flight is written again, but only once the queue has been read empty. The
 * kernel drops answers without a word until then, and a batch sent meanwhile
 * whose errors were dropped would pass for done when a later ACK came.
 * Nothing runs the loop once the refusals are read: its retry timer (a second)
 * would write the refused routes again, which a slow run (ThreadSanitizer, a
 * busy machine) reached, and the ACK below would then be theirs.
 */
static void
test_overrun_drains_first(void **state)
{
	enum { N = NL_RECV_BUDGET * NL_MMSG + 100 }; /* more answers than one callback reads */
	static struct route *r[N];
	struct route *last;
	char dst[32];
	(void)state;

	for (unsigned i = 0; i < N; i++) {
		snprintf(dst, sizeof(dst), "10.0.%u.%u", i / 256, i % 256);
		r[i] = troute_want(t, dst, 32, "198.51.100.1");
		r[i]->flags |= R_EXCL;
		nl_enqueue(r[i]);
	}
	run();
	assert_int_equal(inflight(), N);
	kf_nl_ack(N, EEXIST); /* N answers queued... */
	kf_nl_overrun();      /* ...and the one after them lost */
	nl_poll();            /* ENOBUFS: all N lost; one callback's worth of answers read away */
	assert_int_equal(inflight(), 0);
	for (unsigned i = 0; i < N; i++)
		assert_true(r[i]->flags & R_QUEUED);
	run(); /* reads the rest away, then writes them all again */
	assert_int_equal(inflight(), N);
	last = want_route(1);
	run();
	assert_int_equal(inflight(), N + 1);
	kf_nl_ack(N, EINVAL); /* each refused (dropped, had they gone out before the queue was empty) */
	kf_nl_ack(1, 0);      /* last's ACK settles every message before it that got no answer */
	nl_poll();            /* one callback's worth of refusals */
	nl_poll();            /* the rest, and last's ACK */
	assert_ptr_equal(route_have(last), route_want(last));
	for (unsigned i = 0; i < N; i++) {
		assert_null(route_have(r[i]));
		assert_true(r[i]->flags & R_FAILED);
	}
	assert_int_equal(inflight(), 0);
}

/*
 * Answers for messages given up in an overrun come after the socket was read
 * empty when the writer thread was sending their batch then: they are counted
 * and ignored, and the routes, written again, take the answers of their new
 * messages only. Once an answer of a message written since came, an older one
 * is no longer late (the kernel answers in order): it is a stray, not counted.
 */
static void
test_late_answers_after_overrun(void **state)
{
	enum { N = 10 };
	struct route *r[N];
	struct nl_stats st;
	char dst[32];
	(void)state;

	for (unsigned i = 0; i < N; i++) {
		snprintf(dst, sizeof(dst), "10.1.0.%u", i);
		r[i] = troute_want(t, dst, 32, "198.51.100.1");
		nl_enqueue(r[i]);
	}
	run();
	assert_int_equal(inflight(), N);
	kf_nl_overrun(); /* before the kernel answered the batch */
	nl_poll();       /* ENOBUFS: all N lost, and the queue is empty */
	assert_int_equal(inflight(), 0);
	kf_nl_ack(4, EEXIST); /* four of the first batch's answers, late (errors), nothing in flight */
	nl_poll();
	run(); /* written again */
	assert_int_equal(inflight(), N);
	kf_nl_ack(2, EEXIST); /* two more, late, with the new messages in flight */
	nl_poll();
	nl_get_stats(&st);
	assert_int_equal(st.overruns, 1);
	assert_int_equal(st.answers_late, 6);
	assert_int_equal(inflight(), N);
	for (unsigned i = 0; i < N; i++)
		assert_false(r[i]->flags & R_FAILED);
	/* The new batch's ACK, before the last four of the old (as no kernel would) */
	kf_nl_ack_seq(kf_nl_seq(kf_nl_unanswered() - 1), 0);
	nl_poll();
	assert_int_equal(inflight(), 0);
	kf_nl_ack(4, EEXIST);
	nl_poll();
	nl_get_stats(&st);
	assert_int_equal(st.answers_late, 6);
	for (unsigned i = 0; i < N; i++) {
		assert_false(r[i]->flags & R_FAILED);
		assert_ptr_equal(route_have(r[i]), route_want(r[i]));
	}
}

/*
 * The kernel refuses the batch the writer thread was sending when an overrun
 * gave up the window: its messages left the window with the others, so the
 * refusal fails none of the routes written again since; they take the
 * answers of their new messages.
 */
static void
test_refused_batch_during_overrun(void **state)
{
	struct route *r[3];
	struct nl_stats st;
	(void)state;

	held_batches_of_one(r, 3);
	for (int i = 0; i < 1000 && !kf_nl_held_sends(); i++)
		usleep(1000);
	assert_int_equal(kf_nl_held_sends(), 1); /* the first batch is in the send */
	kf_nl_send_errno_at(1, EINVAL);          /* which the kernel will refuse */
	kf_nl_overrun();
	nl_poll(); /* all three given up; the batches not sent yet are dropped */
	assert_int_equal(inflight(), 0);
	kf_nl_hold(false);
	run();
	nl_get_stats(&st);
	assert_int_equal(st.batches_refused, 1);
	assert_int_equal(inflight(), 3);
	for (unsigned i = 0; i < 3; i++)
		assert_false(r[i]->flags & R_FAILED);
	kf_nl_ack(3, 0);
	nl_poll();
	assert_int_equal(inflight(), 0);
	for (unsigned i = 0; i < 3; i++)
		assert_ptr_equal(route_have(r[i]), route_want(r[i]));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_batch_acked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loop_free_while_send_blocks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batches_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_batch_among_others, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_with_batches_in_flight, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_batch_fails_each_route, setup, teardown),
		cmocka_unit_test_setup_teardown(test_send_waits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ack_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_last_message_acked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_out_of_order_ack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overrun_drains_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_answers_after_overrun, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_batch_during_overrun, setup, teardown),
		cmocka_unit_test_setup_teardown(test_echo_mid_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gateway_only_takes_object, setup, teardown),
		cmocka_unit_test_setup_teardown(test_object_taken_over_and_shared, setup, teardown),
		cmocka_unit_test_setup_teardown(test_asking_batch_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_widest_route_with_objects, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
