/*
 * bird-glue's pending set (bird-glue/proto/common/pending.c), outside BIRD:
 * FIFO order with markers, coalescing in place, the pending limit, whole
 * messages per take, long messages and what an entry holds itself, IPv4 keys,
 * the peak memory, growing a step at a time, the chunks entries live in, and a
 * long random run against a model that grows and drains the hash many times
 * (lookups after removals from its runs).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include <proto-shim/enc.h>
#include <proto-shim/msg.h>

#include "nest/bird.h"
#include "lib/resource.h"
#include "proto/fibd/pending.h"

#define HASH_MIN 10 /* FIBD_HASH_MIN: the hash's order when nothing is pending */
#define NO_LIMIT 0xffffffffu

/* Each test's pool, freed after it as BIRD frees a protocol's pool. */
static pool *P;

static int
setup(void **state)
{
	(void)state;
	P = fake_pool_new();
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	fake_pool_free(P);
	return 0;
}

struct key {
	u8 fam, plen;
	byte prefix[16];
	u32 metric;
};

/* Key k: distinct k give distinct keys; IPv4 and IPv6, lengths and metrics vary. */
static struct key
key_of(uint k)
{
	struct key key;

	memset(&key, 0, sizeof(key));
	key.fam = k & 1 ? 6 : 4;
	key.plen = (u8)(8 + k % 25);
	key.prefix[0] = (byte)(k >> 24);
	key.prefix[1] = (byte)(k >> 16);
	key.prefix[2] = (byte)(k >> 8);
	key.prefix[3] = (byte)k;
	key.metric = k % 3;
	return key;
}

static int
put(struct fibd_pending *q, uint limit, uint k, const char *msg)
{
	struct key key = key_of(k);

	return fibd_pending_route(q, limit, key.fam, key.plen, key.prefix, key.metric,
	    (const byte *)msg, (uint)strlen(msg));
}

static void
mark(struct fibd_pending *q, const char *msg)
{
	fibd_pending_mark(q, (const byte *)msg, (uint)strlen(msg));
}

/* Everything pending, as one string. */
static char *
take_all(struct fibd_pending *q)
{
	static char buf[1 << 16];
	uint len = fibd_pending_take(q, (byte *)buf, sizeof(buf) - 1);

	buf[len] = 0;
	return buf;
}

/* Flush: every chunk is empty again (kept, or the one being filled); then unmap them. */
static void
flush_and_free(struct fibd_pending *q)
{
	fibd_pending_flush(q);
	assert_true(fibd_pending_empty(q));
	assert_int_equal(q->chunks, q->n_kept + !!q->fill);
	fibd_pending_free(q);
	assert_int_equal(q->chunks, 0);
}

static void
test_fifo_markers_and_coalescing(void **state)
{
	struct fibd_pending q;

	(void)state;
	fibd_pending_init(&q, P);
	assert_true(fibd_pending_empty(&q));
	assert_int_equal(put(&q, NO_LIMIT, 1, "A1 "), 0);
	assert_int_equal(put(&q, NO_LIMIT, 2, "B1 "), 0);
	mark(&q, "END ");
	assert_int_equal(put(&q, NO_LIMIT, 1, "A2 "), 0); /* replaces A1, before END */
	assert_int_equal(put(&q, NO_LIMIT, 3, "C1 "), 0);
	assert_int_equal(put(&q, NO_LIMIT, 2, "B2-longer "), 0);
	assert_int_equal(q.routes, 3);
	assert_int_equal(q.coalesced, 2);
	assert_int_equal(q.bytes, strlen("A2 B2-longer END C1 "));
	assert_string_equal(take_all(&q), "A2 B2-longer END C1 ");
	assert_true(fibd_pending_empty(&q));
	assert_int_equal(q.routes, 0);
	assert_int_equal(q.bytes, 0);
	/* Taken keys are new again: they go to the tail. */
	assert_int_equal(put(&q, NO_LIMIT, 3, "C2 "), 0);
	assert_int_equal(put(&q, NO_LIMIT, 1, "A3 "), 0);
	assert_string_equal(take_all(&q), "C2 A3 ");
	assert_int_equal(q.peak, 3);
	flush_and_free(&q);
}

static void
test_limit_refuses_only_new_keys(void **state)
{
	struct fibd_pending q;

	(void)state;
	fibd_pending_init(&q, P);
	assert_int_equal(put(&q, 2, 1, "A1 "), 0);
	assert_int_equal(put(&q, 2, 2, "B1 "), 0);
	assert_int_equal(put(&q, 2, 3, "C1 "), -1);
	assert_int_equal(put(&q, 2, 1, "A2 "), 0);
	mark(&q, "M "); /* markers do not count */
	assert_int_equal(q.routes, 2);
	assert_string_equal(take_all(&q), "A2 B1 M ");
	assert_int_equal(put(&q, 2, 3, "C1 "), 0);
	flush_and_free(&q);
}

static void
test_take_moves_whole_messages(void **state)
{
	struct fibd_pending q;
	byte buf[16];

	(void)state;
	fibd_pending_init(&q, P);
	put(&q, NO_LIMIT, 1, "0123456789");
	put(&q, NO_LIMIT, 2, "abcdef");
	assert_int_equal(fibd_pending_take(&q, buf, 9), 0);
	assert_int_equal(fibd_pending_take(&q, buf, 15), 10);
	assert_memory_equal(buf, "0123456789", 10);
	assert_int_equal(q.routes, 1);
	assert_int_equal(fibd_pending_take(&q, buf, 6), 6);
	assert_memory_equal(buf, "abcdef", 6);
	assert_true(fibd_pending_empty(&q));
	flush_and_free(&q);
}

/* Messages longer than an entry holds: kept apart, replaced both ways, freed. */
static void
test_long_messages(void **state)
{
	struct fibd_pending q;
	char a[300], b[200];
	long blocks;

	(void)state;
	memset(a, 'a', sizeof(a) - 1);
	a[sizeof(a) - 1] = 0;
	memset(b, 'b', sizeof(b) - 1);
	b[sizeof(b) - 1] = 0;
	fibd_pending_init(&q, P);
	blocks = fake_mb_live;
	put(&q, NO_LIMIT, 1, a);
	assert_int_equal(fake_mb_live, blocks + 1);
	put(&q, NO_LIMIT, 1, "short");
	assert_int_equal(fake_mb_live, blocks);
	put(&q, NO_LIMIT, 1, b);
	put(&q, NO_LIMIT, 2, a);
	mark(&q, a);
	assert_int_equal(fake_mb_live, blocks + 3);
	assert_int_equal(q.bytes, strlen(b) + 2 * strlen(a));
	{
		char want[1024];
		snprintf(want, sizeof(want), "%s%s%s", b, a, a);
		assert_string_equal(take_all(&q), want);
	}
	assert_int_equal(fake_mb_live, blocks);
	assert_int_equal(q.bytes, 0);
	put(&q, NO_LIMIT, 3, a);
	flush_and_free(&q);
	assert_int_equal(fake_mb_live, blocks);
}

/*
 * The glue's encoding of a route with one next hop through a 15-character
 * interface name, as a host route with an onlink next hop and a metric in the
 * key: about the longest message of a route with one next hop.
 */
static uint
long_route(byte *out, uint cap, u8 fam, u32 metric)
{
	static struct ps_msg m;
	struct ps_nexthop *nh = &m.u.route.nh[0];
	struct ps_buf b;
	uint len;

	memset(&m, 0, sizeof(m));
	m.type = PS_ROUTE;
	m.u.route.key.family = fam;
	m.u.route.key.plen = fam == PS_FAM_V4 ? 32 : 128;
	m.u.route.key.prefix.b[0] = fam == PS_FAM_V4 ? 10 : 0x20;
	m.u.route.key.has = PS_KEY_METRIC;
	m.u.route.key.metric = metric;
	m.u.route.type = PS_RT_UNICAST;
	m.u.route.n_nexthops = 1;
	nh->gw_family = fam;
	nh->gw.b[0] = fam == PS_FAM_V4 ? 10 : 0x20;
	nh->gw.b[3] = 1;
	nh->weight = 1;
	nh->flags = PS_NH_ONLINK;
	strcpy(nh->ifname, "enp129s0f1.1000");
	ps_buf_init(&b);
	assert_true(ps_enc_msg(&b, &m, NULL) > 0);
	len = (uint)b.len;
	assert_true(len <= cap);
	memcpy(out, b.data, len);
	ps_buf_release(&b);
	return len;
}

/*
 * What an entry holds itself: such a route, for IPv4 with any metric (49
 * bytes), for IPv6 with one up to 65535 (72 bytes; 74 past that take a block).
 * Longer messages take a block of their own, every length past the first that
 * does; each comes back as it went in.
 */
static void
test_inline_room(void **state)
{
	struct fibd_pending q;
	byte msg[160], back[160];
	byte prefix[16] = { 10, 1, 2 };

	(void)state;
	fibd_pending_init(&q, P);
	for (u8 fam = PS_FAM_V4; fam <= PS_FAM_V6; fam += 2) {
		long blocks = fake_mb_live;
		uint len = long_route(msg, sizeof(msg), fam, fam == PS_FAM_V4 ? 0xffffffffu : 65535);
		int outside = 0;

		assert_int_equal(len, fam == PS_FAM_V4 ? 49 : 72);
		assert_int_equal(fibd_pending_route(&q, NO_LIMIT, fam, 24, prefix, 0, msg, len), 0);
		assert_int_equal(fake_mb_live, blocks);
		assert_int_equal(fibd_pending_take(&q, back, sizeof(back)), len);
		assert_memory_equal(back, msg, len);
		if (fam == PS_FAM_V6) {
			/* The room is no larger than the IPv6 entry needs. */
			len = long_route(msg, sizeof(msg), fam, 65536);
			assert_int_equal(len, 74);
			fibd_pending_route(&q, NO_LIMIT, fam, 24, prefix, 0, msg, len);
			assert_int_equal(fake_mb_live, blocks + 1);
			assert_int_equal(fibd_pending_take(&q, back, sizeof(back)), len);
			assert_memory_equal(back, msg, len);
		}
		for (len = 1; len < sizeof(msg); len++) {
			for (uint i = 0; i < len; i++)
				msg[i] = (byte)(len + i);
			assert_int_equal(fibd_pending_route(&q, NO_LIMIT, fam, 24, prefix, 0, msg, len), 0);
			if (fake_mb_live != blocks) {
				assert_int_equal(fake_mb_live, blocks + 1);
				outside = 1;
			} else
				assert_false(outside);
			assert_int_equal(fibd_pending_take(&q, back, sizeof(back)), len);
			assert_memory_equal(back, msg, len);
			assert_int_equal(fake_mb_live, blocks);
		}
		assert_true(outside);
	}
	flush_and_free(&q);
}

/* An IPv4 key is its first 4 bytes: what follows them does not count. */
static void
test_ipv4_key_is_four_bytes(void **state)
{
	struct fibd_pending q;
	byte a[16] = { 192, 0, 2, 0 }, b[16] = { 192, 0, 2, 0, 0xff, 0xff };

	(void)state;
	fibd_pending_init(&q, P);
	fibd_pending_route(&q, NO_LIMIT, 4, 24, a, 0, (const byte *)"a ", 2);
	fibd_pending_route(&q, NO_LIMIT, 4, 24, b, 0, (const byte *)"b ", 2);
	fibd_pending_route(&q, NO_LIMIT, 6, 24, a, 0, (const byte *)"c ", 2);
	fibd_pending_route(&q, NO_LIMIT, 6, 24, b, 0, (const byte *)"d ", 2);
	assert_int_equal(q.routes, 3);
	assert_string_equal(take_all(&q), "b c d ");
	flush_and_free(&q);
}

/* The peak memory counts the entries pending at the peak, not every one since. */
static void
test_peak_memory(void **state)
{
	struct fibd_pending q, q6;
	u64 first;

	(void)state;
	fibd_pending_init(&q, P);
	for (uint k = 0; k < 2000; k++)
		put(&q, NO_LIMIT, k * 2, "v4 ");
	first = q.peak_mem;
	take_all(&q);
	for (uint k = 0; k < 2001; k++)
		put(&q, NO_LIMIT, k * 2, "v4 ");
	assert_int_equal(q.peak, 2001);
	assert_true(q.peak_mem > first);
	assert_true(q.peak_mem < first + 256);
	flush_and_free(&q);
	/* 80 bytes an IPv4 entry, and a hash and a pointer a slot of 4096 (3/4 full at most). */
	assert_int_equal(first, 2000 * 80 + (sizeof(u32) + sizeof(void *)) * 4096);
	/* An IPv6 entry is larger (its prefix alone takes 12 bytes more). */
	fibd_pending_init(&q6, P);
	for (uint k = 0; k < 2000; k++)
		put(&q6, NO_LIMIT, k * 2 + 1, "v6 ");
	assert_true(q6.peak_mem >= first + 2000 * 12);
	flush_and_free(&q6);
}

/*
 * The hash grows a step at a time (pending.c, "Growing"): for a while the keys
 * are in two hashes, and each is found in either, changed in place, and taken
 * out of either.
 */
static void
test_grows_a_step_at_a_time(void **state)
{
	struct fibd_pending q;
	static char want[1 << 16];
	char msg[32];
	byte buf[20]; /* the 10 oldest: few moving steps before the changes below */
	uint n = 0, first = 0, len = 0;

	(void)state;
	fibd_pending_init(&q, P);
	/* Until the keys move from a hash of 2^11 slots into one of 2^12. */
	while (q.old.order != HASH_MIN + 1) {
		snprintf(msg, sizeof(msg), "%u ", n);
		assert_int_equal(put(&q, NO_LIMIT, n++, msg), 0);
	}
	assert_int_equal(q.cur.order, HASH_MIN + 2);
	assert_int_equal(q.routes, n);
	/* The oldest out, most of them from the old hash. */
	len = fibd_pending_take(&q, buf, sizeof(buf));
	for (uint at = 0; at < len; first++)
		at += (uint)snprintf(msg, sizeof(msg), "%u ", first);
	assert_int_equal(q.routes, n - first);
	assert_int_equal(q.old.order, HASH_MIN + 1); /* still moving */
	/* A key taken out is new again, not found where it was. */
	assert_int_equal(put(&q, NO_LIMIT, 0, "again "), 0);
	assert_int_equal(q.routes, n - first + 1);
	/* Every other key changed in place, wherever it is. */
	for (uint k = first + 1; k < n; k += 2) {
		snprintf(msg, sizeof(msg), "u%u ", k);
		assert_int_equal(put(&q, NO_LIMIT, k, msg), 0);
	}
	assert_int_equal(q.routes, n - first + 1);
	assert_int_equal(q.coalesced, (n - first) / 2);
	assert_int_equal(q.old.order, 0); /* moved by now */
	len = 0;
	for (uint k = first; k < n; k++)
		len += (uint)snprintf(want + len, sizeof(want) - len, (k - first) % 2 ? "u%u " : "%u ", k);
	snprintf(want + len, sizeof(want) - len, "again ");
	assert_string_equal(take_all(&q), want);
	assert_int_equal(q.routes, 0);
	flush_and_free(&q);
}

/* A flush forgets every key: the same keys are new again, in the hash anew. */
static void
test_flush_then_same_keys(void **state)
{
	struct fibd_pending q;
	char msg[32];

	(void)state;
	fibd_pending_init(&q, P);
	for (uint k = 0; k < 5000; k++) {
		snprintf(msg, sizeof(msg), "%u ", k);
		assert_int_equal(put(&q, NO_LIMIT, k, msg), 0);
	}
	mark(&q, "M ");
	assert_true(q.cur.order > HASH_MIN);
	fibd_pending_flush(&q);
	assert_true(fibd_pending_empty(&q));
	assert_int_equal(q.cur.order, HASH_MIN);
	assert_int_equal(q.routes, 0);
	assert_int_equal(q.bytes, 0);
	assert_int_equal(q.chunks, q.n_kept + 1);
	put(&q, NO_LIMIT, 7, "a ");
	put(&q, NO_LIMIT, 4999, "b ");
	put(&q, NO_LIMIT, 7, "c ");
	assert_int_equal(q.routes, 2);
	assert_string_equal(take_all(&q), "c b ");
	assert_int_equal(q.peak, 5000);
	flush_and_free(&q);
}

/* The hash shrinks once no route is pending, even with markers still queued. */
static void
test_shrinks_with_markers_left(void **state)
{
	struct fibd_pending q;
	char msg[32];
	byte buf[64];

	(void)state;
	fibd_pending_init(&q, P);
	for (uint k = 0; k < 3000; k++) {
		snprintf(msg, sizeof(msg), "%u ", k);
		put(&q, NO_LIMIT, k, msg);
	}
	mark(&q, "M1 ");
	mark(&q, "M2 ");
	assert_true(q.cur.order > HASH_MIN);
	while (q.routes)
		assert_true(fibd_pending_take(&q, buf, 5) > 0);
	assert_false(fibd_pending_empty(&q));
	assert_int_equal(q.cur.order, HASH_MIN);
	assert_int_equal(fibd_pending_take(&q, buf, 3), 3);
	assert_memory_equal(buf, "M1 ", 3);
	flush_and_free(&q);
}

/*
 * Entries live in chunks of 256 KiB (pending.c): empty ones stay mapped for
 * the next entries, and go back (trim) down to four. Freeing unmaps the rest,
 * also with entries still queued and their pool gone (BIRD 2 frees a
 * protocol's pool before its cleanup hook runs).
 */
static void
test_chunks(void **state)
{
	struct fibd_pending q;
	pool *own = fake_pool_new();
	char big[200];
	uint per_chunk = (FIBD_CHUNK - 16) / 80; /* a 16-byte header, 80-byte IPv4 entries */

	(void)state;
	fibd_pending_init(&q, own);
	for (uint k = 0; k < 7 * per_chunk; k++)
		put(&q, NO_LIMIT, k * 2, "v4 ");
	assert_int_equal(q.chunks, 7);
	put(&q, NO_LIMIT, 14 * per_chunk, "v4 ");
	assert_int_equal(q.chunks, 8);
	while (!fibd_pending_empty(&q))
		take_all(&q);
	/* All empty: the one being filled starts again from its beginning, the others are kept. */
	assert_int_equal(q.chunks, 8);
	assert_int_equal(q.n_kept, 7);
	assert_int_equal(fibd_pending_trim(&q, 0), 3);
	assert_int_equal(fibd_pending_trim(&q, 1), 2);
	assert_int_equal(q.chunks, 7);
	assert_int_equal(fibd_pending_trim(&q, UINT32_MAX), 0);
	assert_int_equal(q.chunks, 5);
	assert_int_equal(q.n_kept, 4);

	/* The next entries take the chunk being filled, then the kept ones, then new ones. */
	for (uint k = 0; k < 7 * per_chunk; k++)
		put(&q, NO_LIMIT, k * 2, "v4 ");
	assert_int_equal(q.chunks, 7);
	assert_int_equal(q.n_kept, 0);
	assert_int_equal(q.peak_chunks, 8);

	/* Freed with entries queued (IPv6, markers, long messages too) and the pool gone. */
	memset(big, 'x', sizeof(big) - 2);
	big[sizeof(big) - 2] = ' ';
	big[sizeof(big) - 1] = 0;
	for (uint k = 0; k < 1000; k++) {
		put(&q, NO_LIMIT, k * 2 + 1, k % 10 ? "v6 " : big);
		if (k % 100 == 0)
			mark(&q, "M ");
	}
	assert_int_equal(q.chunks, 8);
	{
		/* The chunks of the first and the last entry, and the one being filled. */
		void *was[3] = { (void *)((uintptr_t)q.head & ~(uintptr_t)(FIBD_CHUNK - 1)),
			(void *)((uintptr_t)q.tail & ~(uintptr_t)(FIBD_CHUNK - 1)), q.fill };
		fake_pool_free(own);
		fibd_pending_free(&q);
		assert_int_equal(q.chunks, 0);
		assert_true(fibd_pending_empty(&q));
		for (int i = 0; i < 3; i++) {
			errno = 0;
			assert_int_equal(msync(was[i], 4096, MS_ASYNC), -1); /* not mapped */
			assert_int_equal(errno, ENOMEM);
		}
	}
}

/*
 * The model: every message not yet taken, in order, each key at most once
 * outside markers; pos[k] is the model index of key k's pending message.
 */
struct model {
	uint *key;   /* key + 1, or 0 for a marker */
	uint *ver;   /* the message's version */
	uint head, tail;
	long *pos;   /* per key: index, or -1 */
};

static uint
msg_of(char *buf, uint k, uint ver)
{
	/* 8 to 140 bytes: most fit an entry, some do not. */
	uint len = (uint)snprintf(buf, 160, "<%u.%u", k, ver);
	uint want = 8 + (k * 7 + ver * 13) % 133;

	for (; len < want - 1; len++)
		buf[len] = (char)('a' + (k + len) % 26);
	buf[len++] = '>';
	return len;
}

static void
test_random_against_model(void **state)
{
	enum { KEYS = 40000, OPS = 600000 };
	struct fibd_pending q;
	struct model m;
	static byte out[1 << 15];
	char msg[160];
	uint seed = 12345, max_order = 0, top_order = 0, shrinks = 0, routes = 0;
	u64 bytes = 0;
	long blocks;

	(void)state;
	m.key = calloc(OPS + 1, sizeof(uint));
	m.ver = calloc(OPS + 1, sizeof(uint));
	m.pos = malloc(KEYS * sizeof(long));
	assert_non_null(m.key);
	assert_non_null(m.ver);
	assert_non_null(m.pos);
	for (uint k = 0; k < KEYS; k++)
		m.pos[k] = -1;
	m.head = m.tail = 0;
	fibd_pending_init(&q, P);
	blocks = fake_mb_live;

	for (uint op = 0; op < OPS; op++) {
		uint r = (seed = seed * 1103515245u + 12345u) >> 8;
		/* Phases: a load that grows the set, then a drain, and again. */
		int loading = (op / 100000) % 2 == 0;

		if (r % 1000 == 0) {
			mark(&q, "|");
			m.key[m.tail] = 0;
			m.ver[m.tail++] = 0;
			bytes++;
		} else if (r % 100 < (loading ? 98u : 20u)) {
			/* A change: a few hot keys, and many others. */
			uint k = r % 4 == 0 ? (r >> 4) % 64 : (r >> 4) % KEYS;
			uint ver = op;
			struct key key = key_of(k);
			uint len = msg_of(msg, k, ver);
			assert_int_equal(fibd_pending_route(&q, NO_LIMIT, key.fam, key.plen,
			    key.prefix, key.metric, (byte *)msg, len), 0);
			if (m.pos[k] >= 0) {
				char old[160];
				bytes -= msg_of(old, k, m.ver[m.pos[k]]);
				m.ver[m.pos[k]] = ver;
			} else {
				m.key[m.tail] = k + 1;
				m.ver[m.tail] = ver;
				m.pos[k] = m.tail++;
				routes++;
			}
			bytes += len;
		} else {
			uint room = 1 + (r >> 4) % 4000, len = fibd_pending_take(&q, out, room);
			uint at = 0;
			while (m.head < m.tail) {
				char want[160];
				uint k = m.key[m.head], wlen = k ? msg_of(want, k - 1, m.ver[m.head]) : 1;
				if (!k)
					want[0] = '|';
				if (at + wlen > room)
					break;
				assert_true(at + wlen <= len);
				assert_memory_equal(out + at, want, wlen);
				at += wlen;
				if (k) {
					m.pos[k - 1] = -1;
					routes--;
				}
				bytes -= wlen;
				m.head++;
			}
			assert_int_equal(at, len);
		}
		assert_int_equal(q.routes, routes);
		assert_int_equal(q.bytes, bytes);
		assert_int_equal(m.head == m.tail, fibd_pending_empty(&q));
		if (q.cur.order > max_order)
			max_order = q.cur.order;
		if (q.cur.order > top_order)
			top_order = q.cur.order;
		if (fibd_pending_empty(&q) && max_order > HASH_MIN) {
			assert_int_equal(q.cur.order, HASH_MIN);
			shrinks++;
			max_order = HASH_MIN;
		}
	}
	/* The hash grew four times at least and went back to the least more than once. */
	assert_true(top_order >= HASH_MIN + 4);
	assert_true(shrinks >= 2);
	assert_true(q.coalesced > 10000);
	fibd_pending_flush(&q);
	assert_int_equal(fake_mb_live, blocks); /* no long message's block left */
	assert_int_equal(q.routes, 0);
	assert_int_equal(q.bytes, 0);
	assert_int_equal(q.cur.order, HASH_MIN);
	assert_int_equal(q.chunks, q.n_kept + 1);
	fibd_pending_free(&q);
	assert_int_equal(q.chunks, 0);
	free(m.key);
	free(m.ver);
	free(m.pos);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fifo_markers_and_coalescing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limit_refuses_only_new_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_take_moves_whole_messages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_messages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inline_room, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ipv4_key_is_four_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peak_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_grows_a_step_at_a_time, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flush_then_same_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shrinks_with_markers_left, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chunks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_against_model, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
