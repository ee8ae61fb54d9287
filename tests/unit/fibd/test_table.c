/*
 * table and rattr tests: the trie against a plain sorted model (lookup, ordered
 * walk, more-specifics, longest match, removal down to an empty trie), keys that
 * differ only in tos or metric, node counts, and interning of route attributes.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rattr.h"
#include "slab.h"
#include "table.h"

struct mkey {
	union ps_addr p;
	uint8_t plen;
	uint32_t metric;
	struct route *r;
	int live;
};

static unsigned
alen(unsigned fam)
{
	return fam == PS_FAM_V4 ? 4 : 16;
}

static void
mask(union ps_addr *a, unsigned plen)
{
	for (unsigned bit = plen; bit < 128; bit++)
		a->b[bit / 8] &= (uint8_t)~(0x80u >> (bit % 8));
}

static int
cmp_key(const void *x, const void *y)
{
	const struct mkey *a = x, *b = y;
	int c = memcmp(a->p.b, b->p.b, 16);
	if (c)
		return c;
	return (int)a->plen - (int)b->plen;
}

/* Random prefixes clustered so that they nest and share paths. */
static void
random_key(struct mkey *k, unsigned fam, unsigned *seed)
{
	unsigned bits = alen(fam) * 8;
	memset(k, 0, sizeof(*k));
	for (unsigned i = 0; i < alen(fam); i++)
		k->p.b[i] = (uint8_t)rand_r(seed);
	k->p.b[0] = (uint8_t)(rand_r(seed) % 4); /* few top-level subtrees */
	if (rand_r(seed) % 3 == 0)
		k->plen = (uint8_t)((unsigned)rand_r(seed) % (bits + 1));
	else if (bits == 32)
		k->plen = (uint8_t)(16 + rand_r(seed) % 9);
	else
		k->plen = (uint8_t)(32 + rand_r(seed) % 33);
	mask(&k->p, k->plen);
}

struct walk_ctx {
	struct mkey *expect;
	unsigned n;
	unsigned at;
};

static int
walk_check(struct route *r, void *vctx)
{
	struct walk_ctx *c = vctx;
	union ps_addr p;

	if (c->at >= c->n)
		fail_msg("walk returned more routes than the model has");
	route_prefix(r, &p);
	if (memcmp(p.b, c->expect[c->at].p.b, 16) ||
	    route_plen(r) != c->expect[c->at].plen)
		fail_msg("walk order differs at %u", c->at);
	c->at++;
	return 0;
}

static void
run_model(unsigned fam, unsigned n, unsigned seed)
{
	struct rtable *t = table_get(100 + fam, (uint8_t)fam, true);
	struct mkey *keys = calloc(n, sizeof(*keys));
	struct mkey *sorted = calloc(n, sizeof(*sorted));
	unsigned live = 0, m;
	struct walk_ctx wc;

	assert_non_null(t);
	assert_non_null(keys);
	for (unsigned i = 0; i < n; i++) {
		struct route *r;
		random_key(&keys[i], fam, &seed);
		r = table_lookup(t, &keys[i].p, keys[i].plen, 0, 0);
		keys[i].r = table_insert(t, &keys[i].p, keys[i].plen, 0, 0);
		assert_non_null(keys[i].r);
		if (r) {
			assert_ptr_equal(r, keys[i].r); /* a duplicate key finds the same entry */
			continue;
		}
		keys[i].r->owner = 1; /* keep it alive */
		keys[i].live = 1;
		live++;
	}
	assert_int_equal(t->n_routes, live);
	assert_true(t->n_nodes < 2 * live);

	/* Ordered walk equals the sorted model. */
	m = 0;
	for (unsigned i = 0; i < n; i++)
		if (keys[i].live)
			sorted[m++] = keys[i];
	qsort(sorted, m, sizeof(*sorted), cmp_key);
	wc = (struct walk_ctx){ sorted, m, 0 };
	assert_int_equal(table_walk(t, NULL, 0, walk_check, &wc), 0);
	assert_int_equal(wc.at, m);

	/*
	 * A walk resumed after a key (in the table or not) yields exactly the
	 * model's keys after it, in order.
	 */
	for (unsigned q = 0; q < 200; q++) {
		struct mkey k;
		unsigned from = 0;
		if (q % 2) {
			k = sorted[(unsigned)rand_r(&seed) % m];
		} else {
			random_key(&k, fam, &seed);
		}
		while (from < m && cmp_key(&sorted[from], &k) <= 0)
			from++;
		wc = (struct walk_ctx){ sorted + from, m - from, 0 };
		assert_int_equal(table_walk_after(t, &k.p, k.plen, walk_check, &wc), 0);
		assert_int_equal(wc.at, m - from);
	}

	/* More-specifics of a few prefixes equal the model's filtered list. */
	for (unsigned q = 0; q < 50; q++) {
		struct mkey within = sorted[(unsigned)rand_r(&seed) % m];
		struct mkey *sub = calloc(m, sizeof(*sub));
		unsigned k = 0;
		within.plen = (uint8_t)(within.plen / 2);
		mask(&within.p, within.plen);
		for (unsigned i = 0; i < m; i++) {
			union ps_addr a = sorted[i].p;
			mask(&a, within.plen);
			if (sorted[i].plen >= within.plen && !memcmp(a.b, within.p.b, 16))
				sub[k++] = sorted[i];
		}
		wc = (struct walk_ctx){ sub, k, 0 };
		assert_int_equal(table_walk(t, &within.p, within.plen, walk_check, &wc), 0);
		assert_int_equal(wc.at, k);
		free(sub);
	}

	/* Longest match of host addresses equals the model's. */
	for (unsigned q = 0; q < 200; q++) {
		union ps_addr a = sorted[(unsigned)rand_r(&seed) % m].p;
		struct route *got, *want = NULL;
		int best = -1;
		a.b[alen(fam) - 1] ^= (uint8_t)rand_r(&seed);
		for (unsigned i = 0; i < m; i++) {
			union ps_addr x = a;
			mask(&x, sorted[i].plen);
			if (!memcmp(x.b, sorted[i].p.b, 16) && sorted[i].plen > best) {
				best = sorted[i].plen;
				want = sorted[i].r;
			}
		}
		got = table_longest(t, &a, (uint8_t)(alen(fam) * 8));
		assert_ptr_equal(got, want);
	}

	/* Remove in random order; lookups of the rest keep working; the trie empties. */
	for (unsigned i = n; i-- > 1;) {
		unsigned j = (unsigned)rand_r(&seed) % (i + 1);
		struct mkey tmp = keys[i];
		keys[i] = keys[j];
		keys[j] = tmp;
	}
	for (unsigned i = 0; i < n; i++) {
		if (!keys[i].live)
			continue;
		keys[i].r->owner = OWNER_NONE;
		assert_true(table_release(keys[i].r));
		keys[i].live = 0;
		assert_null(table_lookup(t, &keys[i].p, keys[i].plen, 0, 0));
		if (i % 97 == 0)
			for (unsigned k = i + 1; k < n; k++)
				if (keys[k].live)
					assert_ptr_equal(table_lookup(t, &keys[k].p, keys[k].plen, 0, 0),
					    keys[k].r);
	}
	assert_int_equal(t->n_routes, 0);
	assert_int_equal(t->n_nodes, 0);
	assert_int_equal(t->root, 0);
	free(keys);
	free(sorted);
}

static void
test_trie_v4(void **state)
{
	(void)state;
	run_model(PS_FAM_V4, 20000, 1);
}

static void
test_trie_v6(void **state)
{
	(void)state;
	run_model(PS_FAM_V6, 20000, 2);
}

/* The edges: /0, host routes, one prefix inside another, siblings. */
static void
test_trie_edges(void **state)
{
	struct rtable *t = table_get(7, PS_FAM_V4, true);
	union ps_addr a = { .b = { 0 } }, b = { .b = { 192, 0, 2, 0 } }, c = { .b = { 192, 0, 2, 128 } };
	union ps_addr h = { .b = { 192, 0, 2, 200 } };
	struct route *r0, *r24, *r25, *r32, *rm;
	(void)state;

	r0 = table_insert(t, &a, 0, 0, 0);
	r24 = table_insert(t, &b, 24, 0, 0);
	r25 = table_insert(t, &c, 25, 0, 0);
	r32 = table_insert(t, &h, 32, 0, 0);
	/* same prefix, other metric and tos: distinct routes */
	rm = table_insert(t, &b, 24, 0, 10);
	assert_ptr_not_equal(rm, r24);
	assert_ptr_not_equal(table_insert(t, &b, 24, 4, 0), r24);
	assert_ptr_equal(table_lookup(t, &b, 24, 0, 10), rm);
	assert_null(table_lookup(t, &b, 23, 0, 0));
	assert_int_equal(t->n_routes, 6);
	assert_ptr_equal(table_longest(t, &h, 32), r32);
	{
		union ps_addr x = { .b = { 192, 0, 2, 130 } };
		union ps_addr y = { .b = { 192, 0, 2, 5 } };
		union ps_addr z = { .b = { 10, 0, 0, 1 } };
		assert_ptr_equal(table_longest(t, &x, 32), r25);
		assert_true(table_longest(t, &y, 32)->node == r24->node);
		assert_ptr_equal(table_longest(t, &z, 32), r0);
	}
	/* release refuses a route that is still wanted, owned or installed */
	r24->owner = 3;
	assert_false(table_release(r24));
	r24->owner = OWNER_NONE;
	r24->flags = R_QUEUED;
	assert_false(table_release(r24));
	r24->flags = 0;
	assert_true(table_release(r24));
	assert_ptr_equal(table_lookup(t, &c, 25, 0, 0), r25);
	assert_true(table_release(r0));
	assert_true(table_release(r25));
	assert_true(table_release(r32));
	assert_true(table_release(rm));
	assert_true(table_release(table_lookup(t, &b, 24, 4, 0)));
	assert_int_equal(t->n_nodes, 0);
	assert_ptr_equal(table_get(7, PS_FAM_V4, false), t);
	assert_null(table_get(7, PS_FAM_V6, false));
}

static void
route_with(struct ps_route *r, const char *gw, const char *dev, unsigned weight)
{
	memset(r, 0, offsetof(struct ps_route, nh));
	r->key.family = PS_FAM_V4;
	r->type = PS_RT_UNICAST;
	r->n_nexthops = 1;
	memset(&r->nh[0], 0, sizeof(r->nh[0]));
	r->nh[0].gw_family = PS_FAM_V4;
	inet_pton(AF_INET, gw, r->nh[0].gw.b);
	snprintf(r->nh[0].ifname, sizeof(r->nh[0].ifname), "%s", dev);
	r->nh[0].weight = (uint16_t)weight;
}

static void
test_rattr_interning(void **state)
{
	static struct ps_route r;
	struct rattr *a, *b, *b2, *c, *d;
	uint64_t base = rattr_count();
	(void)state;

	route_with(&r, "198.51.100.1", "veth0", 1);
	a = rattr_intern(&r);
	b = rattr_intern(&r);
	assert_ptr_equal(a, b);
	assert_int_equal(a->refs, 2);
	/* One nexthop has no weight in the kernel: weight 9 is the same set. */
	route_with(&r, "198.51.100.1", "veth0", 9);
	assert_ptr_equal(rattr_intern(&r), a);
	assert_int_equal(a->nh[0].weight, 1);
	rattr_unref(a);
	/* With two, weights make the difference. */
	route_with(&r, "198.51.100.1", "veth0", 1);
	r.n_nexthops = 2;
	r.nh[1] = r.nh[0];
	r.nh[1].gw.b[3] = 2;
	r.nh[1].weight = 2;
	c = rattr_intern(&r);
	r.nh[1].weight = 3;
	b2 = rattr_intern(&r);
	assert_ptr_not_equal(b2, c);
	assert_int_equal(b2->nh[1].weight, 3);
	rattr_unref(b2);
	assert_ptr_not_equal(a, c);
	route_with(&r, "198.51.100.1", "veth0", 1);
	r.has = PS_RA_MTU;
	r.mtu = 1400;
	d = rattr_intern(&r);
	assert_ptr_not_equal(a, d);
	assert_int_equal(rattr_count(), base + 3);
	/* many routes sharing one nexthop set share one entry */
	for (int i = 0; i < 100000; i++) {
		route_with(&r, "198.51.100.1", "veth0", 1);
		assert_ptr_equal(rattr_intern(&r), a);
	}
	assert_int_equal(a->refs, 100002);
	for (int i = 0; i < 100000; i++)
		rattr_unref(a);
	rattr_unref(a);
	rattr_unref(b);
	rattr_unref(c);
	rattr_unref(d);
	assert_int_equal(rattr_count(), base);
	/* distinct sets: the table grows and stays consistent */
	{
		struct rattr *many[5000];
		for (int i = 0; i < 5000; i++) {
			char gw[32];
			snprintf(gw, sizeof(gw), "10.%d.%d.1", i / 250, i % 250);
			route_with(&r, gw, "veth1", 1);
			many[i] = rattr_intern(&r);
		}
		for (int i = 0; i < 5000; i++) {
			char gw[32];
			snprintf(gw, sizeof(gw), "10.%d.%d.1", i / 250, i % 250);
			route_with(&r, gw, "veth1", 1);
			assert_ptr_equal(rattr_intern(&r), many[i]);
			rattr_unref(many[i]);
			rattr_unref(many[i]);
		}
	}
	assert_int_equal(rattr_count(), base);
}

/*
 * What the kernel holds fulfils what a client asked for when it means the same
 * (docs/design.md, invariant 10): the device the kernel resolved for a gateway given
 * alone, the default scope written out, realm 0 (none), and an IPv6 route's
 * realm, which the kernel drops, are no difference.
 */
static void
test_rattr_fulfils(void **state)
{
	static struct ps_route r;
	struct rattr *want, *kern, *other_dev, *other_gw, *scoped, *mtu, *link_scope, *realm, *realm_b;
	struct rattr *realm0, *kern6, *realm6;
	(void)state;

	route_with(&r, "198.51.100.1", "", 1);
	want = rattr_intern(&r);
	route_with(&r, "198.51.100.1", "veth0", 1);
	kern = rattr_intern(&r);
	route_with(&r, "198.51.100.1", "veth1", 1);
	other_dev = rattr_intern(&r);
	route_with(&r, "198.51.100.9", "veth0", 1);
	other_gw = rattr_intern(&r);
	route_with(&r, "198.51.100.1", "", 1);
	r.has = PS_RA_SCOPE;
	r.scope = 0; /* universe, written out: the default for a gateway */
	scoped = rattr_intern(&r);
	r.scope = 253; /* link: not the default for a gateway */
	link_scope = rattr_intern(&r);
	route_with(&r, "198.51.100.1", "veth0", 1);
	r.has = PS_RA_MTU;
	r.mtu = 1400;
	mtu = rattr_intern(&r);
	r.has = PS_RA_REALM;
	r.realm = 5;
	realm = rattr_intern(&r);
	r.realm = 6;
	realm_b = rattr_intern(&r);
	r.realm = 0; /* none, written out */
	realm0 = rattr_intern(&r);
	/* IPv6, which has no realms: the kernel drops one written. */
	route_with(&r, "198.51.100.1", "veth0", 1);
	r.key.family = PS_FAM_V6;
	r.nh[0].gw_family = PS_FAM_V6;
	inet_pton(AF_INET6, "2001:db8:ff::1", r.nh[0].gw.b);
	kern6 = rattr_intern(&r);
	r.has = PS_RA_REALM;
	r.realm = 5;
	realm6 = rattr_intern(&r);

	assert_ptr_not_equal(want, kern);
	assert_true(rattr_fulfils(kern, want));       /* the device the kernel picked */
	assert_true(rattr_fulfils(other_dev, want));  /* whichever it is */
	assert_false(rattr_fulfils(want, kern));      /* a device asked for must be there */
	assert_false(rattr_fulfils(other_dev, kern)); /* and be that one */
	assert_false(rattr_fulfils(other_gw, want));
	assert_true(rattr_fulfils(kern, scoped));     /* default scope, written or not */
	assert_true(rattr_fulfils(scoped, want));
	assert_false(rattr_fulfils(kern, link_scope));
	assert_false(rattr_fulfils(kern, mtu));       /* an attribute the kernel lacks */
	assert_false(rattr_fulfils(mtu, kern));       /* or one nobody asked for */
	assert_true(rattr_fulfils(mtu, mtu));
	assert_false(rattr_fulfils(kern, realm));     /* an IPv4 realm the kernel lacks */
	assert_false(rattr_fulfils(realm, kern));     /* or has, asked by nobody */
	assert_false(rattr_fulfils(realm_b, realm));  /* or has another of */
	assert_true(rattr_fulfils(kern, realm0));     /* realm 0 is none */
	assert_true(rattr_fulfils(realm0, kern));
	assert_true(rattr_fulfils(kern6, realm6));    /* IPv6: none to have */
	assert_true(rattr_fulfils(realm6, kern6));
	assert_false(rattr_fulfils(kern, realm6));    /* (not another family's route) */
	assert_true(rattr_fulfils(NULL, NULL));
	assert_false(rattr_fulfils(NULL, want));
	assert_false(rattr_fulfils(kern, NULL));
	for (struct rattr **a = (struct rattr *[]){ want, kern, other_dev, other_gw, scoped, mtu,
		 link_scope, realm, realm_b, realm0, kern6, realm6, NULL }; *a; a++)
		rattr_unref(*a);
}

static int
setup(void **state)
{
	(void)state;
	return table_init();
}

static int
teardown(void **state)
{
	(void)state;
	table_shutdown();
	rattr_shutdown();
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trie_edges),
		cmocka_unit_test(test_trie_v4),
		cmocka_unit_test(test_trie_v6),
		cmocka_unit_test(test_rattr_interning),
		cmocka_unit_test(test_rattr_fulfils),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
