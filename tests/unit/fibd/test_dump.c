/*
 * The dump parser (dump_parse), fed netlink datagrams built here the way the
 * kernel sends them: the routes of the asked table and family are reported with
 * their key and protocol, others skipped; replies to another request (another
 * sequence number or port id) are skipped and counted, never taken for this
 * dump's; a dump ends at its NLMSG_DONE, and one whose messages carry
 * NLM_F_DUMP_INTR, or that carries an error, or is cut, is refused.
 *
 * Then the socket's code itself over a fake kernel (tests/fakes/kfake.c): a
 * dump that ends any way but with its own DONE leaves the kernel mid-dump, so
 * the socket is replaced before the next (whose replies then cannot be taken
 * for the old one's, nor the old DONE for the new one's end); EBUSY, ENOBUFS,
 * a failed send, a second dump while one runs, and dump_abandon.
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

#include "dump.h"
#include "kfake.h"
#include "log.h"
#include "nlbuild.h"

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

#define SEQ 77
#define PORT 4242

struct seen {
	struct {
		union ps_addr prefix;
		uint8_t plen;
		uint32_t metric;
		uint8_t protocol;
	} k[16];
	unsigned n;
};

static void
on_route(const struct nlmsghdr *nlh, const struct kmsg_rt *kr, void *ctx)
{
	struct seen *s = ctx;
	(void)nlh;
	assert_true(s->n < 16);
	s->k[s->n].prefix = kr->prefix;
	s->k[s->n].plen = kr->plen;
	s->k[s->n].metric = kr->metric;
	s->k[s->n].protocol = kr->rtm->rtm_protocol;
	s->n++;
}

/* Stamp every message of the datagram as a reply to request seq on port pid. */
static void
stamp(uint32_t seq, uint32_t pid)
{
	int left = (int)dlen;

	for (struct nlmsghdr *nlh = (struct nlmsghdr *)dgram; mnl_nlmsg_ok(nlh, left);
	     nlh = mnl_nlmsg_next(nlh, &left)) {
		nlh->nlmsg_seq = seq;
		nlh->nlmsg_pid = pid;
	}
}

static int
parse(uint32_t table, uint8_t family, struct seen *s, uint64_t *stale)
{
	return dump_parse(dgram, dlen, SEQ, PORT, table, family, on_route, s, stale);
}

static void
test_routes_of_the_table_reported(void **state)
{
	struct seen s = { .n = 0 };
	uint64_t stale = 0;
	(void)state;

	dlen = 0;
	add_route(AF_INET, "192.0.2.0", 24, 100, 12, 0, 0);
	add_route(AF_INET, "198.51.100.0", 24, 100, 4, 0, 0);  /* static: reported, with its protocol */
	add_route(AF_INET, "203.0.113.0", 24, 100, 12, 20, 0);
	add_route(AF_INET, "", 0, 100, 12, 0, 0);                /* default route */
	add_route(AF_INET, "192.0.2.0", 24, 200, 12, 0, 0);      /* other table: ignored */
	add_route(AF_INET6, "2001:db8::", 32, 100, 12, 0, 0);    /* other family: ignored */
	stamp(SEQ, PORT);
	assert_int_equal(parse(100, PS_FAM_V4, &s, &stale), 0);
	assert_int_equal(s.n, 4);
	assert_int_equal(stale, 0);
	assert_int_equal(s.k[0].plen, 24);
	assert_int_equal(s.k[0].prefix.b[0], 192);
	assert_int_equal(s.k[1].protocol, 4);
	assert_int_equal(s.k[2].metric, 20);
	assert_int_equal(s.k[3].plen, 0);

	/* The dump's last datagram ends with DONE. */
	dlen = 0;
	s.n = 0;
	add_route(AF_INET6, "2001:db8:1::", 48, 100, 12, 1024, 0);
	add_done(0);
	stamp(SEQ, PORT);
	assert_int_equal(parse(100, PS_FAM_V6, &s, &stale), 1);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.k[0].metric, 1024);
}

/*
 * Replies to an earlier request (the rest of an abandoned dump, its DONE) or
 * to another socket are not this dump's: skipped and counted, and a stale DONE
 * does not end it.
 */
static void
test_replies_matched_to_request(void **state)
{
	struct seen s = { .n = 0 };
	uint64_t stale = 0;
	(void)state;

	dlen = 0;
	add_route(AF_INET, "192.0.2.0", 24, 100, 12, 0, 0);
	add_done(0);
	stamp(SEQ - 1, PORT); /* the earlier dump's last routes and its DONE */
	assert_int_equal(parse(100, PS_FAM_V4, &s, &stale), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(stale, 2);

	dlen = 0;
	add_route(AF_INET, "198.51.100.0", 24, 100, 12, 0, 0);
	add_done(0);
	stamp(SEQ, PORT + 1); /* right sequence, another socket's */
	assert_int_equal(parse(100, PS_FAM_V4, &s, &stale), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(stale, 4);

	/* A stale DUMP_INTR or error says nothing about this dump either. */
	dlen = 0;
	add_route(AF_INET, "198.51.100.0", 24, 100, 12, 0, NLM_F_DUMP_INTR);
	stamp(SEQ + 1, PORT);
	assert_int_equal(parse(100, PS_FAM_V4, &s, &stale), 0);
	assert_int_equal(stale, 5);
}

static void
test_interrupted_dump_refused(void **state)
{
	struct seen s = { .n = 0 };
	(void)state;

	dlen = 0;
	add_route(AF_INET, "192.0.2.0", 24, 100, 12, 0, 0);
	add_route(AF_INET, "203.0.113.0", 24, 100, 12, 0, NLM_F_DUMP_INTR);
	stamp(SEQ, PORT);
	assert_int_equal(parse(100, PS_FAM_V4, &s, NULL), -EINTR);
	/* DONE can carry the flag too. */
	dlen = 0;
	add_done(NLM_F_DUMP_INTR);
	stamp(SEQ, PORT);
	assert_int_equal(parse(100, PS_FAM_V4, &s, NULL), -EINTR);
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
	e->error = -EBUSY;
	dlen = nlh->nlmsg_len;
	stamp(SEQ, PORT);
	assert_int_equal(parse(100, PS_FAM_V4, &s, NULL), -EBUSY);

	/* A route whose destination is not 4 bytes long in an IPv4 dump. */
	dlen = 0;
	add_route(AF_INET6, "2001:db8::", 32, 100, 12, 0, 0);
	((struct rtmsg *)mnl_nlmsg_get_payload((struct nlmsghdr *)dgram))->rtm_family = AF_INET;
	((struct rtmsg *)mnl_nlmsg_get_payload((struct nlmsghdr *)dgram))->rtm_dst_len = 24;
	stamp(SEQ, PORT);
	assert_int_equal(parse(100, PS_FAM_V4, &s, NULL), -EIO);

	/* A datagram cut inside a message. */
	dlen = 0;
	add_route(AF_INET, "192.0.2.0", 24, 100, 12, 0, 0);
	stamp(SEQ, PORT);
	assert_int_equal(dump_parse(dgram, dlen - 3, SEQ, PORT, 100, PS_FAM_V4, on_route, &s, NULL), -EIO);
	assert_int_equal(s.n, 0);
}

/* ---- the socket, over the fake kernel ---- */

static uv_loop_t loop;
static unsigned n_routes, n_ends;
static int last_end;

static void
count_route(const struct nlmsghdr *nlh, const struct kmsg_rt *kr, void *ctx)
{
	(void)nlh;
	(void)kr;
	(void)ctx;
	n_routes++;
}

static void
count_end(int result, void *ctx)
{
	(void)ctx;
	n_ends++;
	last_end = result;
}

static const struct dump_hooks hooks = { .route = count_route, .end = count_end };

static void
deliver(void)
{
	while (kf_dump_pending() && dump_running())
		dump_poll();
}

static int
sock_setup(void **state)
{
	(void)state;
	log_init("test", true, LOG_LVL_WARN);
	n_routes = n_ends = 0;
	last_end = 1;
	uv_loop_init(&loop);
	if (dump_init(&loop) < 0)
		return -1;
	kf_dump_install();
	return 0;
}

static int
sock_teardown(void **state)
{
	(void)state;
	dump_close();
	kf_dump_uninstall();
	uv_run(&loop, UV_RUN_NOWAIT); /* the close callbacks */
	assert_int_equal(uv_loop_close(&loop), 0);
	return 0;
}

static void
test_good_dump(void **state)
{
	struct nlbuild *b;
	struct dump_stats st;
	(void)state;

	assert_int_equal(dump_start(100, PS_FAM_V4, 12, &hooks, NULL), 0);
	assert_int_equal(kf_dump_requests, 1);
	assert_int_equal(kf_dump_last_table, 100);
	assert_int_equal(kf_dump_last_protocol, 12);
	assert_int_equal(dump_start(101, PS_FAM_V4, 12, &hooks, NULL), -EBUSY);
	b = kf_dump_reply();
	nlb_route(b, AF_INET, "192.0.2.0", 24, 100, 12, 0, 0);
	b = kf_dump_reply();
	nlb_route(b, AF_INET, "198.51.100.0", 24, 100, 12, 0, 0);
	nlb_done(b, 0);
	deliver();
	assert_int_equal(n_routes, 2);
	assert_int_equal(n_ends, 1);
	assert_int_equal(last_end, 0);
	assert_false(dump_running());
	dump_get_stats(&st);
	assert_int_equal(st.reopened, 0); /* a dump read to its DONE leaves the socket clean */
}

/*
 * Interrupted mid-way: the kernel would go on sending the old dump (and answer
 * the next request with EBUSY). The socket is replaced; the old dump's rest,
 * its DONE included, cannot end the next one.
 */
static void
test_abandoned_dump_replaces_the_socket(void **state)
{
	uint32_t port = dump_portid();
	struct dump_stats st;
	struct nlbuild *b;
	(void)state;

	assert_int_equal(dump_start(100, PS_FAM_V4, 12, &hooks, NULL), 0);
	b = kf_dump_reply();
	nlb_route(b, AF_INET, "192.0.2.0", 24, 100, 12, 0, NLM_F_DUMP_INTR);
	deliver();
	assert_int_equal(n_ends, 1);
	assert_int_equal(last_end, -EINTR);
	dump_get_stats(&st);
	assert_int_equal(st.reopened, 1);
	assert_int_not_equal(dump_portid(), port);

	/* The next dump: the old one's DONE (old sequence, old port) comes first. */
	assert_int_equal(dump_start(100, PS_FAM_V4, 12, &hooks, NULL), 0);
	b = kf_dump_reply_as((uint32_t)-1, port);
	nlb_route(b, AF_INET, "203.0.113.0", 24, 100, 12, 0, 0);
	nlb_done(b, 0);
	b = kf_dump_reply();
	nlb_route(b, AF_INET, "198.51.100.0", 24, 100, 12, 0, 0);
	deliver();
	assert_int_equal(n_ends, 1); /* not ended by the stale DONE */
	assert_int_equal(n_routes, 1); /* nor given the stale route */
	b = kf_dump_reply();
	nlb_done(b, 0);
	deliver();
	assert_int_equal(n_ends, 2);
	assert_int_equal(last_end, 0);
	dump_get_stats(&st);
	assert_int_equal(st.stale, 2);
}

/* The kernel answers EBUSY, or replies were lost (ENOBUFS), or a reply is cut: each ends the dump and replaces the socket. */
static void
test_errors_end_the_dump(void **state)
{
	struct dump_stats st;
	struct nlbuild *b;
	struct nlmsghdr *nlh;
	struct nlmsgerr *e;
	(void)state;

	assert_int_equal(dump_start(100, PS_FAM_V4, 12, &hooks, NULL), 0);
	b = kf_dump_reply();
	nlh = mnl_nlmsg_put_header(b->buf);
	nlh->nlmsg_type = NLMSG_ERROR;
	e = mnl_nlmsg_put_extra_header(nlh, sizeof(*e));
	e->error = -EBUSY;
	b->len = nlh->nlmsg_len;
	deliver();
	assert_int_equal(last_end, -EBUSY);

	assert_int_equal(dump_start(100, PS_FAM_V4, 12, &hooks, NULL), 0);
	b = kf_dump_reply();
	nlb_route(b, AF_INET, "192.0.2.0", 24, 100, 12, 0, 0);
	kf_dump_fail(ENOBUFS);
	deliver();
	assert_int_equal(last_end, -ENOBUFS);

	assert_int_equal(dump_start(100, PS_FAM_V4, 12, &hooks, NULL), 0);
	b = kf_dump_reply();
	nlb_route(b, AF_INET, "192.0.2.0", 24, 100, 12, 0, 0);
	b->len -= 3; /* cut inside the message */
	deliver();
	assert_int_equal(last_end, -EIO);
	dump_get_stats(&st);
	assert_int_equal(st.reopened, 3);
	assert_int_equal(n_ends, 3);
}

/* A send that fails: dump_start says so, and no end comes. Abandon: no end either. */
static void
test_send_failure_and_abandon(void **state)
{
	struct dump_stats st;
	(void)state;

	kf_dump_send_errno = ENOBUFS;
	assert_int_equal(dump_start(100, PS_FAM_V4, 12, &hooks, NULL), -ENOBUFS);
	assert_false(dump_running());
	assert_int_equal(dump_start(100, PS_FAM_V4, 12, &hooks, NULL), 0);
	dump_abandon();
	assert_false(dump_running());
	assert_int_equal(n_ends, 0);
	dump_get_stats(&st);
	assert_int_equal(st.reopened, 1);
	assert_int_equal(dump_start(100, PS_FAM_V4, 12, &hooks, NULL), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routes_of_the_table_reported),
		cmocka_unit_test(test_replies_matched_to_request),
		cmocka_unit_test(test_interrupted_dump_refused),
		cmocka_unit_test(test_error_and_malformed),
		cmocka_unit_test_setup_teardown(test_good_dump, sock_setup, sock_teardown),
		cmocka_unit_test_setup_teardown(test_abandoned_dump_replaces_the_socket, sock_setup,
		    sock_teardown),
		cmocka_unit_test_setup_teardown(test_errors_end_the_dump, sock_setup, sock_teardown),
		cmocka_unit_test_setup_teardown(test_send_failure_and_abandon, sock_setup, sock_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
