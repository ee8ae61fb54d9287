/*
 * feed session tests, over a real Unix socket on a libuv loop, with the netlink
 * writer replaced by tests/fakes/nl_fake.c: the session state machine (HELLO
 * first, generations, errors that close only the bad session), the coalescing
 * of changes (desired state is the queue), the mark-and-sweep of a new
 * generation, key conflicts between clients, the PING barrier, a session
 * closed, not left waiting, when fibd has no memory for it or for its reply,
 * and learn refresh marks only to the learners that asked.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>
#include <proto-shim/dec.h>
#include <proto-shim/enc.h>

#include "feed.h"
#include "log.h"
#include "nl.h"
#include "owner.h"
#include "reply.h"
#include "nl_fake.h"
#include "table.h"

static uv_loop_t loop;

/* calloc, wrapped (tests/meson.build): fails the next calloc_fail calls. */
void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
static int calloc_fail;

void *
__wrap_calloc(size_t n, size_t size)
{
	if (calloc_fail > 0) {
		calloc_fail--;
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(n, size);
}
/*
 * realloc, wrapped (tests/meson.build): while realloc_fail is set, growing a
 * buffer from nothing fails (an output buffer's first bytes: a reply that
 * cannot be encoded).
 */
void *__real_realloc(void *p, size_t size);
void *__wrap_realloc(void *p, size_t size);
static bool realloc_fail;

void *
__wrap_realloc(void *p, size_t size)
{
	if (realloc_fail && !p) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_realloc(p, size);
}

static char sock_path[108];
static struct feed_config cfg;

struct client {
	int fd;
	struct ps_dec *dec;
	int closed;
};

static void
spin(void)
{
	for (int i = 0; i < 30; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
}

/* A connected, nonblocking socket to fibd (the loop has not run yet). */
static int
client_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	strcpy(sa.sun_path, sock_path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

static void
client_open(struct client *c)
{
	memset(c, 0, sizeof(*c));
	c->fd = client_connect();
	c->dec = ps_dec_new(0);
	spin();
}

static void
client_close(struct client *c)
{
	close(c->fd);
	ps_dec_free(c->dec);
	spin();
}

static void
client_send(struct client *c, const struct ps_msg *m)
{
	struct ps_buf b;

	ps_buf_init(&b);
	assert_true(ps_enc_msg(&b, m, NULL) > 0);
	assert_int_equal(write(c->fd, b.data, b.len), (ssize_t)b.len);
	ps_buf_release(&b);
	spin();
}

static void
client_send_raw(struct client *c, const void *p, size_t n)
{
	assert_int_equal(write(c->fd, p, n), (ssize_t)n);
	spin();
}

/* The next message from fibd, or NULL if none is waiting (c->closed set on EOF). */
static const struct ps_msg *
client_next(struct client *c)
{
	const struct ps_msg *m;

	spin();
	for (;;) {
		void *buf;
		size_t room;
		ssize_t n;
		if (ps_dec_next(c->dec, &m) == 1)
			return m;
		assert_int_equal(ps_dec_reserve(c->dec, 0, &buf, &room), 0);
		n = read(c->fd, buf, room);
		if (n == 0)
			c->closed = 1;
		if (n <= 0)
			return NULL;
		ps_dec_commit(c->dec, (size_t)n);
	}
}

static const struct ps_msg *
expect(struct client *c, unsigned type)
{
	const struct ps_msg *m = client_next(c);

	if (!m)
		fail_msg("expected %s, got nothing", ps_msg_type_name(type));
	if (m->type != type) {
		char text[512];
		ps_msg_format(m, text, sizeof(text));
		fail_msg("expected %s, got %s", ps_msg_type_name(type), text);
	}
	return m;
}

/* The next message that is not a ROUTE_STATUS (results are not the point here). */
static const struct ps_msg *
next_after_results(struct client *c)
{
	const struct ps_msg *m;

	do
		m = client_next(c);
	while (m && m->type == PS_ROUTE_STATUS);
	if (!m)
		fail_msg("expected a message after the results, got nothing");
	return m;
}

/* The client names fibd has seen in this test run (they outlive sessions there). */
static char names[32][PS_NAME_MAX + 1];
static unsigned n_names;

static int
known_name(const char *name)
{
	for (unsigned i = 0; i < n_names; i++)
		if (!strcmp(names[i], name))
			return 1;
	return 0;
}

static void
remember_name(const char *name)
{
	snprintf(names[n_names++ % 32], sizeof(names[0]), "%s", name);
}

/* A HELLO of version 1 for table 100, to add to. */
static void
hello_msg(struct ps_msg *m, const char *name, int role)
{
	memset(m, 0, sizeof(*m));
	m->type = PS_HELLO;
	m->u.hello.n_versions = 1;
	m->u.hello.versions[0] = 1;
	m->u.hello.role = (uint8_t)role;
	snprintf(m->u.hello.name, sizeof(m->u.hello.name), "%s", name);
	m->u.hello.has = PS_HELLO_TABLE;
	m->u.hello.table = 100;
}

/* HELLO for table 100; stale is the stale time, or -1 for persist. */
static void
hello_with(struct client *c, const char *name, int role, int stale)
{
	struct ps_msg m;

	hello_msg(&m, name, role);
	m.u.hello.has |= PS_HELLO_STALE;
	if (stale < 0) {
		m.u.hello.has |= PS_HELLO_PERSIST;
		m.u.hello.persist = 1;
	} else {
		m.u.hello.stale_time = (uint32_t)stale;
	}
	client_send(c, &m);
}

/* The usual client: routes stay for a minute after it goes. */
static void
hello(struct client *c, const char *name, int role)
{
	hello_with(c, name, role, 60);
}

/* Connect a feed client; a name fibd does not know gets a REFEED after WELCOME. */
static void
connect_feed_with(struct client *c, const char *name, int stale)
{
	client_open(c);
	hello_with(c, name, PS_ROLE_FEED, stale);
	expect(c, PS_WELCOME);
	if (!known_name(name)) {
		expect(c, PS_REFEED);
		remember_name(name);
	}
}

static void
connect_feed(struct client *c, const char *name)
{
	connect_feed_with(c, name, 60);
}

static void
send_route(struct client *c, uint8_t third_octet, uint8_t gw_last)
{
	struct ps_msg m;

	memset(&m, 0, offsetof(struct ps_msg, u) + offsetof(struct ps_route, nh));
	m.type = PS_ROUTE;
	m.u.route.key.family = PS_FAM_V4;
	m.u.route.key.plen = 24;
	m.u.route.key.prefix.b[0] = 192;
	m.u.route.key.prefix.b[2] = third_octet;
	m.u.route.type = PS_RT_UNICAST;
	m.u.route.n_nexthops = 1;
	memset(&m.u.route.nh[0], 0, sizeof(m.u.route.nh[0]));
	m.u.route.nh[0].gw_family = PS_FAM_V4;
	m.u.route.nh[0].gw.b[0] = 198;
	m.u.route.nh[0].gw.b[1] = 51;
	m.u.route.nh[0].gw.b[2] = 100;
	m.u.route.nh[0].gw.b[3] = gw_last;
	m.u.route.nh[0].weight = 1;
	client_send(c, &m);
}

static void
send_simple(struct client *c, unsigned type, uint64_t v)
{
	struct ps_msg m;

	memset(&m, 0, sizeof(m));
	m.type = (uint8_t)type;
	m.u.generation = v; /* generation, token: the same union slot */
	client_send(c, &m);
}

/* Complete the queued writes, then let fibd send the results (once per iteration). */
static unsigned
complete(int err)
{
	unsigned n = fake_nl_complete(err);
	spin();
	return n;
}

static struct route *
kernel_key(uint8_t third_octet)
{
	union ps_addr p = { .b = { 192, 0, third_octet, 0 } };
	struct rtable *t = table_get(100, PS_FAM_V4, false);
	return t ? table_lookup(t, &p, 24, 0, 0) : NULL;
}

static int
setup(void **state)
{
	(void)state;
	log_init("test", true, LOG_LVL_WARN);
	signal(SIGPIPE, SIG_IGN); /* as fibd's main does: a closed peer is an error, not a death */
	snprintf(sock_path, sizeof(sock_path), "/tmp/fibd-unit-%d.sock", getpid());
	cfg.socket_path = sock_path;
	cfg.protocol = 12;
	cfg.server_id = "fibd-test";
	cfg.boot_epoch = 1;
	uv_loop_init(&loop);
	if (table_init() < 0 || nl_init(&loop, 12, &(const struct nl_hooks){ .done = owner_route_done }) < 0 ||
	    owner_init(&loop, &(const struct owner_hooks){ .ready = feed_wake }) < 0)
		return -1;
	reply_set_wake(feed_wake);
	return feed_init(&loop, &cfg);
}

static int
teardown(void **state)
{
	(void)state;
	owner_close();
	feed_close();
	spin();
	return 0;
}

static void
test_hello_must_come_first(void **state)
{
	struct client c;
	const struct ps_msg *m;
	(void)state;

	client_open(&c);
	send_simple(&c, PS_PING, 5);
	m = expect(&c, PS_ERROR);
	assert_int_equal(m->u.error.code, PS_E_STATE);
	assert_null(client_next(&c));
	assert_true(c.closed);
	client_close(&c);
}

static void
test_version_refused(void **state)
{
	struct client c;
	struct ps_msg m;
	(void)state;

	client_open(&c);
	memset(&m, 0, sizeof(m));
	m.type = PS_HELLO;
	m.u.hello.n_versions = 1;
	m.u.hello.versions[0] = 9;
	m.u.hello.role = PS_ROLE_FEED;
	strcpy(m.u.hello.name, "future");
	client_send(&c, &m);
	assert_int_equal(expect(&c, PS_ERROR)->u.error.code, PS_E_VERSION);
	client_close(&c);
}

static void
send_withdraw(struct client *c, uint8_t third_octet)
{
	struct ps_msg m;

	memset(&m, 0, sizeof(m));
	m.type = PS_WITHDRAW;
	m.u.withdraw.family = PS_FAM_V4;
	m.u.withdraw.plen = 24;
	m.u.withdraw.prefix.b[0] = 192;
	m.u.withdraw.prefix.b[2] = third_octet;
	client_send(c, &m);
}

extern unsigned sync_fake_tables_changed;

/*
 * Ten changes to one prefix before the writer runs cost one write, of the last
 * state. The first made the table, and sync heard of it (for the monitor).
 */
static void
test_changes_coalesce(void **state)
{
	unsigned made = sync_fake_tables_changed;
	struct client c;
	struct route *r;
	unsigned writes;
	(void)state;

	assert_null(table_get(100, PS_FAM_V4, false));
	connect_feed(&c, "coalesce");
	writes = fake_nl_writes;
	for (uint8_t gw = 1; gw <= 10; gw++)
		send_route(&c, 1, gw);
	r = kernel_key(1);
	assert_non_null(r);
	assert_int_equal(sync_fake_tables_changed - made, 1);
	assert_true(r->flags & R_QUEUED);
	assert_int_equal(complete(0), 1);
	assert_int_equal(fake_nl_writes - writes, 1);
	assert_int_equal(route_have(r)->nh[0].gw.b[3], 10);
	/* A result comes back for it. */
	{
		const struct ps_msg *m = expect(&c, PS_ROUTE_STATUS);
		assert_int_equal(m->u.status.n, 1);
		assert_int_equal(m->u.status.e[0].state, PS_RS_INSTALLED);
		assert_int_equal(m->u.status.e[0].key.table, 100);
	}
	/* The same state again is no change at all. */
	send_route(&c, 1, 10);
	assert_false(r->flags & R_QUEUED);
	/* Route then withdraw before the write: nothing reaches the kernel. */
	writes = fake_nl_writes;
	send_route(&c, 2, 1);
	send_withdraw(&c, 2);
	complete(0);
	assert_int_equal(fake_nl_writes, writes);
	assert_null(kernel_key(2)); /* forgotten */
	client_close(&c);
}

/*
 * HELLO results = failures: INSTALLED and REMOVED results are counted, not
 * sent; a failure still comes back as a result, with the counts so far.
 */
static void
test_failures_only(void **state)
{
	struct client c;
	struct ps_msg h;
	const struct ps_msg *m;
	(void)state;

	client_open(&c);
	hello_msg(&h, "failures", PS_ROLE_FEED);
	h.u.hello.has |= PS_HELLO_RESULTS;
	h.u.hello.results = PS_RESULTS_FAILURES;
	client_send(&c, &h);
	expect(&c, PS_WELCOME);
	expect(&c, PS_REFEED);
	remember_name("failures");

	for (uint8_t i = 1; i <= 3; i++)
		send_route(&c, 30 + i, 1);
	assert_int_equal(complete(0), 3);
	m = expect(&c, PS_ROUTE_STATUS);
	assert_int_equal(m->u.status.n, 0);
	assert_true(m->u.status.has & PS_STATUS_COUNTS);
	assert_int_equal(m->u.status.installed, 3);
	assert_int_equal(m->u.status.removed, 0);
	assert_null(client_next(&c)); /* one message for the three */

	/* A withdraw is counted; a failure is a result, with the counts. */
	send_withdraw(&c, 31);
	assert_int_equal(complete(0), 1);
	m = expect(&c, PS_ROUTE_STATUS);
	assert_int_equal(m->u.status.n, 0);
	assert_int_equal(m->u.status.removed, 1);
	send_route(&c, 34, 1);
	assert_int_equal(complete(ENETUNREACH), 1);
	m = expect(&c, PS_ROUTE_STATUS);
	assert_int_equal(m->u.status.n, 1);
	assert_int_equal(m->u.status.e[0].state, PS_RS_FAILED);
	assert_int_equal(m->u.status.e[0].error, ENETUNREACH);
	assert_int_equal(m->u.status.e[0].key.prefix.b[2], 34);
	assert_int_equal(m->u.status.removed, 1);
	assert_int_equal(m->u.status.installed, 3);
	client_close(&c);
}

/* FEED_END prunes what the new generation did not send; a bad generation is an error. */
static void
test_generation_sweep(void **state)
{
	struct client c;
	const struct ps_msg *m;
	(void)state;

	connect_feed(&c, "sweep");
	send_simple(&c, PS_FEED_BEGIN, 1);
	send_route(&c, 10, 1);
	send_route(&c, 11, 1);
	send_route(&c, 12, 1);
	send_simple(&c, PS_FEED_END, 1);
	complete(0);
	assert_non_null(route_have(kernel_key(11)));

	send_simple(&c, PS_FEED_BEGIN, 2);
	send_route(&c, 11, 1);
	send_simple(&c, PS_FEED_END, 2);
	assert_null(route_want(kernel_key(10)));
	assert_null(route_want(kernel_key(12)));
	assert_non_null(route_want(kernel_key(11)));
	complete(0);
	assert_null(kernel_key(10));
	assert_null(kernel_key(12));
	assert_non_null(kernel_key(11));

	/* FEED_END of another generation closes the session with STATE. */
	send_simple(&c, PS_FEED_BEGIN, 3);
	send_simple(&c, PS_FEED_END, 4);
	m = next_after_results(&c);
	assert_int_equal(m->type, PS_ERROR);
	assert_int_equal(m->u.error.code, PS_E_STATE);
	assert_string_equal(m->u.error.field, "generation");
	client_close(&c);
	/* Its routes stay, owned by the name, after the session is gone. */
	assert_non_null(kernel_key(11));
	assert_non_null(route_want(kernel_key(11)));
}

/* Write all of b, letting fibd read as it goes (the socket buffer is finite). */
static void
write_all(struct client *c, const struct ps_buf *b)
{
	for (size_t off = 0; off < b->len;) {
		ssize_t n = send(c->fd, b->data + off, b->len - off, MSG_NOSIGNAL);
		if (n > 0)
			off += (size_t)n;
		else if (errno != EAGAIN)
			fail_msg("write: %s", strerror(errno));
		uv_run(&loop, UV_RUN_NOWAIT);
	}
}

/*
 * The sweep after FEED_END withdraws at most OWNER_SWEEP_BUDGET routes per loop
 * iteration, however many there are (a budget counted down in a loop condition
 * once wrapped around and let one callback sweep everything).
 */
static void
test_sweep_is_bounded(void **state)
{
	const unsigned n = 2 * OWNER_SWEEP_BUDGET + 100;
	struct client c;
	struct ps_buf b;
	static struct ps_msg m;
	unsigned before, most = 0;
	(void)state;

	connect_feed(&c, "bounded");
	send_simple(&c, PS_FEED_BEGIN, 1);
	ps_buf_init(&b);
	for (unsigned i = 0; i < n; i++) {
		memset(&m, 0, offsetof(struct ps_msg, u) + offsetof(struct ps_route, nh));
		m.type = PS_ROUTE;
		m.u.route.key.family = PS_FAM_V4;
		m.u.route.key.plen = 24;
		m.u.route.key.prefix.b[0] = 10;
		m.u.route.key.prefix.b[1] = (uint8_t)(i >> 8);
		m.u.route.key.prefix.b[2] = (uint8_t)i;
		m.u.route.type = PS_RT_BLACKHOLE;
		assert_true(ps_enc_msg(&b, &m, NULL) > 0);
	}
	write_all(&c, &b);
	send_simple(&c, PS_FEED_END, 1);
	while (fake_nl_complete(0))
		spin();

	/* A new generation without any of them: the sweep withdraws all n. */
	b.len = 0;
	memset(&m, 0, sizeof(m));
	m.type = PS_FEED_BEGIN;
	m.u.generation = 2;
	assert_true(ps_enc_msg(&b, &m, NULL) > 0);
	m.type = PS_FEED_END;
	assert_true(ps_enc_msg(&b, &m, NULL) > 0);
	before = fake_nl_enqueues;
	write_all(&c, &b);
	for (int i = 0; i < 100 && fake_nl_enqueues - before < n; i++) {
		unsigned was = fake_nl_enqueues;
		uv_run(&loop, UV_RUN_NOWAIT);
		if (fake_nl_enqueues - was > most)
			most = fake_nl_enqueues - was;
	}
	assert_int_equal(fake_nl_enqueues - before, n);
	assert_true(most <= OWNER_SWEEP_BUDGET);
	ps_buf_release(&b);
	complete(0);
	client_close(&c);
}

/* Two clients, one key: the first keeps it, the second is told who owns it. */
static void
test_key_conflict(void **state)
{
	struct client a, b;
	const struct ps_msg *m;
	(void)state;

	connect_feed(&a, "first");
	send_route(&a, 20, 1);
	complete(0);
	connect_feed(&b, "second");
	send_route(&b, 20, 2);
	m = expect(&b, PS_ROUTE_STATUS);
	assert_int_equal(m->u.status.e[0].state, PS_RS_REJECTED);
	assert_int_equal(m->u.status.e[0].error, EEXIST);
	assert_non_null(memmem(m->u.status.e[0].text.ptr, m->u.status.e[0].text.len, "first", 5));
	assert_int_equal(route_want(kernel_key(20))->nh[0].gw.b[3], 1);

	/* One connected session per name. */
	{
		struct client dup;
		client_open(&dup);
		hello(&dup, "first", PS_ROLE_FEED);
		assert_int_equal(expect(&dup, PS_ERROR)->u.error.code, PS_E_CONFLICT);
		client_close(&dup);
	}
	client_close(&a);
	client_close(&b);
}

/* A PING is answered only when everything before it is written. */
static void
test_ping_barrier(void **state)
{
	struct client c;
	const struct ps_msg *m;
	(void)state;

	connect_feed(&c, "barrier");
	send_route(&c, 30, 1);
	send_route(&c, 31, 1);
	send_simple(&c, PS_PING, 77);
	assert_null(client_next(&c)); /* not yet */
	complete(0);
	m = next_after_results(&c);
	assert_int_equal(m->type, PS_PONG);
	assert_true(m->u.token == 77);
	/* With nothing pending, at once. */
	send_simple(&c, PS_PING, 78);
	assert_true(expect(&c, PS_PONG)->u.token == 78);
	client_close(&c);
}

/* A malformed message closes that session with the reason; another carries on. */
static void
test_malformed_session_isolated(void **state)
{
	struct client good, bad;
	const struct ps_msg *m;
	/* ROUTE 192.0.2.0/33: a valid frame whose prefix length is out of range */
	static const uint8_t bad_route[] = { 0x92, 0x0a, 0x84, 0x02, 0x04, 0x03, 0xc4, 0x04, 192, 0,
		2, 0, 0x04, 33, 0x08, 0x91, 0x81, 0x02, 0xa2, 'v', 'a' };
	(void)state;

	connect_feed(&good, "good");
	connect_feed(&bad, "bad");
	send_route(&bad, 40, 1); /* accepted before the bad message: stays */
	client_send_raw(&bad, bad_route, sizeof(bad_route));
	m = expect(&bad, PS_ERROR);
	assert_int_equal(m->u.error.code, PS_E_FIELD);
	assert_string_equal(m->u.error.field, "plen");
	assert_null(client_next(&bad));
	assert_true(bad.closed);
	assert_non_null(kernel_key(40));
	assert_non_null(route_want(kernel_key(40)));

	send_route(&good, 41, 1);
	complete(0);
	assert_non_null(route_have(kernel_key(41)));
	send_simple(&good, PS_PING, 1);
	m = next_after_results(&good);
	assert_int_equal(m->type, PS_PONG);
	client_close(&good);
	client_close(&bad);
}

/* Control sessions get answers; feed messages there are refused. */
static void
test_control_session(void **state)
{
	struct client c;
	struct ps_msg m;
	(void)state;

	client_open(&c);
	hello(&c, "fibctl", PS_ROLE_CONTROL);
	expect(&c, PS_WELCOME);
	memset(&m, 0, sizeof(m));
	m.type = PS_CTL_REQUEST;
	m.u.ctl_request.req = 9;
	strcpy(m.u.ctl_request.cmd, "status");
	client_send(&c, &m);
	assert_int_equal(expect(&c, PS_CTL_END)->u.ctl_end.req, 9);
	send_route(&c, 50, 1);
	assert_int_equal(expect(&c, PS_ERROR)->u.error.code, PS_E_STATE);
	client_close(&c);
}

/* Without a stale time, a client's routes go with its session. */
static void
test_disconnect_without_stale_time(void **state)
{
	struct client c;
	(void)state;

	connect_feed_with(&c, "transient", 0);
	send_route(&c, 60, 1);
	complete(0);
	assert_non_null(route_have(kernel_key(60)));
	client_close(&c);
	assert_null(route_want(kernel_key(60))); /* withdrawn */
	complete(0);
	assert_null(kernel_key(60));
}

/* With persist, they stay until a new feed under the name says otherwise. */
static void
test_persist(void **state)
{
	struct client c;
	(void)state;

	connect_feed_with(&c, "keeper", -1);
	send_route(&c, 61, 1);
	complete(0);
	client_close(&c);
	assert_non_null(route_want(kernel_key(61)));
	connect_feed_with(&c, "keeper", -1);
	send_simple(&c, PS_FEED_BEGIN, 1);
	send_simple(&c, PS_FEED_END, 1);
	assert_null(route_want(kernel_key(61)));
	complete(0);
	assert_null(kernel_key(61));
	client_close(&c);
}

/* A stale time: the routes wait for the client, then go when it does not return. */
static void
test_stale_time(void **state)
{
	struct client c;
	uint64_t t0;
	(void)state;

	connect_feed_with(&c, "graceful", 1);
	send_route(&c, 62, 1);
	complete(0);
	client_close(&c);
	assert_non_null(route_want(kernel_key(62)));
	/* Back in time: its routes are its own again, nothing withdrawn. */
	connect_feed_with(&c, "graceful", 1);
	t0 = uv_now(&loop);
	while (uv_now(&loop) - t0 < 1500) {
		uv_run(&loop, UV_RUN_NOWAIT);
		uv_update_time(&loop);
	}
	assert_non_null(route_want(kernel_key(62)));
	client_close(&c);
	/* Not back: withdrawn once the stale time is over. */
	t0 = uv_now(&loop);
	while (uv_now(&loop) - t0 < 2500 && route_want(kernel_key(62))) {
		uv_run(&loop, UV_RUN_ONCE);
		uv_update_time(&loop);
	}
	assert_null(route_want(kernel_key(62)));
	complete(0);
	assert_null(kernel_key(62));
}

/* Who may do what, from a peer's credentials alone. */
static void
test_access_of(void **state)
{
	const gid_t none[] = { 0 }, some[] = { 27, 100, 4 };
	struct feed_access open = { 0 };
	struct feed_access groups = { .read_set = true, .read_gid = 100, .admin_set = true, .admin_gid = 4 };
	(void)state;

	/* No group configured: root, fibd's own user and group only. */
	assert_int_equal(access_of(0, 0, none, 0, 107, 107, &open), ACCESS_ADMIN);
	assert_int_equal(access_of(107, 107, none, 0, 107, 107, &open), ACCESS_ADMIN);
	assert_int_equal(access_of(1000, 1000, some, 3, 107, 107, &open), ACCESS_NONE);
	/* fibd's own group, which the socket's mode 0660 lets in. */
	assert_int_equal(access_of(1000, 107, none, 0, 107, 107, &open), ACCESS_ADMIN);
	assert_int_equal(access_of(1000, 1000, some, 3, 107, 27, &open), ACCESS_ADMIN);
	/* The groups, as the peer's group or a supplementary one. */
	assert_int_equal(access_of(1000, 100, none, 0, 107, 107, &groups), ACCESS_READ);
	assert_int_equal(access_of(1000, 1000, some, 2, 107, 107, &groups), ACCESS_READ);
	assert_int_equal(access_of(1000, 1000, some, 3, 107, 107, &groups), ACCESS_ADMIN);
	assert_int_equal(access_of(1000, 4, none, 0, 107, 107, &groups), ACCESS_ADMIN);
	assert_int_equal(access_of(1000, 1000, some, 1, 107, 107, &groups), ACCESS_NONE);
	assert_int_equal(access_of(65534, 65534, none, 0, 107, 107, &groups), ACCESS_NONE);
}

/*
 * No memory for a session: the connection is closed at once, and the listener
 * keeps accepting (libuv stops watching it until a connection it handed over
 * is accepted). Two at once: the second waits for the spare handle, and is
 * served if memory is back by then.
 */
static void
test_no_memory_for_a_session(void **state)
{
	struct client a, b, c;
	(void)state;

	/* Decoders first: the test's own callocs are wrapped too. */
	client_open(&a);
	client_open(&b);
	close(a.fd);
	close(b.fd);
	a.fd = client_connect();
	b.fd = client_connect();
	calloc_fail = 2;
	spin();
	assert_int_equal(calloc_fail, 0);
	assert_null(client_next(&a));
	assert_true(a.closed);
	/* b waited for the spare handle; by then there was memory again: served. */
	hello(&b, "after-oom-b", PS_ROLE_CONTROL);
	expect(&b, PS_WELCOME);
	client_close(&a);
	client_close(&b);
	/* The next one is served as usual. */
	client_open(&c);
	hello(&c, "after-oom", PS_ROLE_CONTROL);
	expect(&c, PS_WELCOME);
	client_close(&c);
}

/*
 * A PONG fibd has no memory to encode: the client would wait for it for
 * ever, so the session is closed instead; the next client is served.
 */
static void
test_reply_not_encoded(void **state)
{
	struct client c, d;
	struct ps_msg ping = { .type = PS_PING, .u.token = 5 };
	const struct ps_msg *m;
	struct ps_buf b;
	(void)state;

	connect_feed(&c, "no-pong"); /* its WELCOME went out; the PONG needs a new buffer */
	ps_buf_init(&b);
	assert_true(ps_enc_msg(&b, &ping, NULL) > 0);
	realloc_fail = true;
	client_send_raw(&c, b.data, b.len);
	realloc_fail = false;
	ps_buf_release(&b);
	while ((m = client_next(&c)))
		assert_int_not_equal(m->type, PS_PONG);
	assert_true(c.closed);
	client_close(&c);
	connect_feed(&d, "after");
	send_simple(&d, PS_PING, 6);
	assert_true(expect(&d, PS_PONG)->u.token == 6);
	client_close(&d);
}

/* Client names beginning bgp: belong to BGP peers: a feed session may not take one. */
static void
test_bgp_names_reserved(void **state)
{
	struct client c;
	const struct ps_msg *m;
	(void)state;

	client_open(&c);
	hello(&c, "bgp:rs1", PS_ROLE_FEED);
	m = expect(&c, PS_ERROR);
	assert_int_equal(m->u.error.code, PS_E_FIELD);
	assert_string_equal(m->u.error.field, "name");
	client_close(&c);
}

/* A learning feed client of table 100, IPv4 only, that asks for refresh marks or not. */
static void
connect_learner(struct client *c, const char *name, bool refresh)
{
	struct ps_msg m;

	client_open(c);
	hello_msg(&m, name, PS_ROLE_FEED);
	m.u.hello.has |= PS_HELLO_LEARN | PS_HELLO_FAMILIES | (refresh ? PS_HELLO_REFRESH : 0);
	m.u.hello.learn = 1;
	m.u.hello.refresh = refresh;
	m.u.hello.families = PS_HELLO_FAM_V4;
	client_send(c, &m);
	expect(c, PS_WELCOME);
	expect(c, PS_REFEED);
}

/*
 * A learn dump's refresh marks go to the sessions that learn its table and
 * family and asked for them (HELLO refresh); LEARN to every learner of it.
 */
static void
test_learn_refresh_marks(void **state)
{
	struct client a, b, c;
	struct ps_route r;
	const struct ps_msg *m;
	(void)state;

	connect_learner(&a, "learn-marks", true);
	connect_learner(&b, "learn-plain", false);
	connect_feed(&c, "learn-none");

	feed_learn_refresh(100, PS_FAM_V4, PS_REFRESH_BEGIN);
	feed_learn_refresh(100, PS_FAM_V6, PS_REFRESH_BEGIN); /* a family none learns */
	feed_learn_refresh(101, PS_FAM_V4, PS_REFRESH_BEGIN); /* another table */
	memset(&r, 0, offsetof(struct ps_route, nh));
	r.key.has = PS_KEY_TABLE | PS_KEY_METRIC | PS_KEY_TOS;
	r.key.table = 100;
	r.key.family = PS_FAM_V4;
	r.key.plen = 24;
	r.key.prefix.b[0] = 203;
	r.type = PS_RT_BLACKHOLE;
	r.has = PS_RA_PROTOCOL;
	r.protocol = 4;
	r.learn_op = PS_LEARN_ADD;
	feed_learn(&r);
	feed_learn_refresh(100, PS_FAM_V4, PS_REFRESH_END);

	m = expect(&a, PS_LEARN_REFRESH);
	assert_int_equal(m->u.refresh.table, 100);
	assert_int_equal(m->u.refresh.family, PS_FAM_V4);
	assert_int_equal(m->u.refresh.phase, PS_REFRESH_BEGIN);
	assert_int_equal(expect(&a, PS_LEARN)->u.route.key.prefix.b[0], 203);
	assert_int_equal(expect(&a, PS_LEARN_REFRESH)->u.refresh.phase, PS_REFRESH_END);
	assert_null(client_next(&a));

	assert_int_equal(expect(&b, PS_LEARN)->u.route.key.prefix.b[0], 203);
	assert_null(client_next(&b));
	assert_null(client_next(&c));
	client_close(&a);
	client_close(&b);
	client_close(&c);
}

extern struct rtable *sync_fake_claimed[16];
extern unsigned sync_fake_n_claimed;

struct fed_line {
	uint32_t table;
	uint8_t family;
	char name[PS_NAME_MAX + 1];
};
static struct fed_line fed_lines[16];
static unsigned n_fed_lines;

static void
collect_fed(uint32_t table, uint8_t family, const char *client, void *ctx)
{
	(void)ctx;
	if (n_fed_lines < 16) {
		fed_lines[n_fed_lines].table = table;
		fed_lines[n_fed_lines].family = family;
		snprintf(fed_lines[n_fed_lines].name, sizeof(fed_lines[0].name), "%s", client);
	}
	n_fed_lines++;
}

static bool
fed_listed(uint32_t table, const char *name)
{
	for (unsigned i = 0; i < n_fed_lines && i < 16; i++)
		if (fed_lines[i].table == table && !strcmp(fed_lines[i].name, name))
			return true;
	return false;
}

/*
 * After a restart (the state file named the clients that fed each table), a
 * table's unclaimed routes go once every one of its clients has ended a feed
 * (docs/design.md, invariant 8): not when one of two has, and not for a table that
 * still waits for a client that has not come back.
 */
static void
test_restart_claims(void **state)
{
	struct client a, b;
	struct rtable *t100, *t200;
	(void)state;

	t100 = table_get(100, PS_FAM_V4, true);
	t200 = table_get(200, PS_FAM_V4, true);
	owner_await(100, PS_FAM_V4, "back-a");
	owner_await(100, PS_FAM_V4, "back-b");
	owner_await(200, PS_FAM_V4, "back-b");
	owner_await(200, PS_FAM_V4, "never");
	sync_fake_n_claimed = 0;

	/* The state file keeps the clients still awaited, though none is connected. */
	n_fed_lines = 0;
	owner_each_fed(collect_fed, NULL);
	assert_true(fed_listed(100, "back-a") && fed_listed(100, "back-b"));
	assert_true(fed_listed(200, "back-b") && fed_listed(200, "never"));

	connect_feed(&a, "back-a");
	send_simple(&a, PS_FEED_BEGIN, 1);
	send_route(&a, 50, 1);
	send_simple(&a, PS_FEED_END, 1);
	complete(0);
	assert_int_equal(sync_fake_n_claimed, 0); /* back-b still owes table 100 */

	connect_feed(&b, "back-b");
	send_simple(&b, PS_FEED_BEGIN, 7);
	send_route(&b, 51, 1);
	send_simple(&b, PS_FEED_END, 7);
	complete(0);
	assert_int_equal(sync_fake_n_claimed, 1); /* table 100; 200 still waits for "never" */
	assert_ptr_equal(sync_fake_claimed[0], t100);

	/* A second feed claims nothing more. */
	send_simple(&b, PS_FEED_BEGIN, 8);
	send_route(&b, 51, 1);
	send_simple(&b, PS_FEED_END, 8);
	complete(0);
	assert_int_equal(sync_fake_n_claimed, 1);

	n_fed_lines = 0;
	owner_each_fed(collect_fed, NULL);
	assert_true(fed_listed(100, "back-a") && fed_listed(100, "back-b"));
	assert_true(fed_listed(200, "never")); /* the next fibd waits for it too */
	assert_false(fed_listed(200, "back-a"));
	(void)t200;
	client_close(&a);
	client_close(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hello_must_come_first),
		cmocka_unit_test(test_access_of),
		cmocka_unit_test(test_version_refused),
		cmocka_unit_test(test_changes_coalesce),
		cmocka_unit_test(test_failures_only),
		cmocka_unit_test(test_generation_sweep),
		cmocka_unit_test(test_sweep_is_bounded),
		cmocka_unit_test(test_key_conflict),
		cmocka_unit_test(test_ping_barrier),
		cmocka_unit_test(test_malformed_session_isolated),
		cmocka_unit_test(test_control_session),
		cmocka_unit_test(test_disconnect_without_stale_time),
		cmocka_unit_test(test_persist),
		cmocka_unit_test(test_stale_time),
		cmocka_unit_test(test_restart_claims),
		cmocka_unit_test(test_no_memory_for_a_session),
		cmocka_unit_test(test_reply_not_encoded),
		cmocka_unit_test(test_bgp_names_reserved),
		cmocka_unit_test(test_learn_refresh_marks),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
