/*
 * table: path-compressed binary tries of prefixes, one per (kernel table, family).
 *
 * A node is a prefix (bits beyond plen zero). Its child[b] holds prefixes longer
 * than it whose bit at position plen is b. Nodes that hold no routes exist only
 * where two subtrees branch ("glue"); removing the last route of a node removes
 * the node, or turns it into glue if it still branches, and collapses a glue
 * parent left with one child. So there are fewer than 2n nodes for n prefixes and
 * insert, lookup and delete visit at most plen + 1 nodes.
 *
 * IPv4 tables start with a stride: an array of 65536 subtries, one per /16,
 * holding the prefixes of length 16 and more; shorter prefixes live in the
 * table's root trie. A full table's IPv4 routes are mostly /24../22, so an insert
 * or lookup then visits a handful of nodes below its /16 instead of twenty-odd
 * from the root: in a table far larger than the CPU's caches each visit is a
 * cache miss, and they were most of fibd's own time (perf, 500k routes). The
 * array costs 256 KiB per IPv4 table.
 *
 * Links between nodes, from a node to its routes, between routes and from a
 * route to its node are 32-bit slab references (slab_ref), not pointers: a full
 * table has about 1.7 nodes per prefix, and a node of 17 bytes (IPv4) or 29
 * (IPv6) fits a slot of 24 or 32 where pointers needed 32 or 48.
 *
 * Ordered walks are pre-order (a prefix before its more-specifics, child 0 before
 * child 1), which is address order then length, as `ip route` sorts. For IPv4 the
 * root trie's walk is merged with the /16 subtries in address order: a shorter
 * prefix comes before every /16 subtrie at or after its address.
 */
#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "slab.h"
#include "table.h"

/* A node's prefix is 4 bytes in IPv4 tables and 16 in IPv6 ones: two slabs. */
struct tnode {
	uint32_t child[2]; /* in the node slab of the table's family */
	uint32_t routes;   /* in table_route_slab: the first of the prefix's routes */
	uint8_t plen;
	uint8_t prefix[]; /* bits past plen are zero */
};

#define NODE_SIZE(alen) (offsetof(struct tnode, prefix) + (alen))

#define STRIDE_BITS 16
#define STRIDE_SIZE (1u << STRIDE_BITS)

static struct rtable *tables[TABLE_MAX];
static unsigned n_tables;
bool table_decouple_new;
struct slab *table_route_slab;
static struct slab *node_slab4;
static struct slab *node_slab6;

int
table_init(void)
{
	table_route_slab = slab_new(sizeof(struct route), "routes", 0);
	node_slab4 = slab_new(NODE_SIZE(4), "IPv4 trie nodes", 0);
	node_slab6 = slab_new(NODE_SIZE(16), "IPv6 trie nodes", 0);
	if (!table_route_slab || !node_slab4 || !node_slab6)
		return -ENOMEM;
	return 0;
}

void
table_shutdown(void)
{
	for (unsigned i = 0; i < n_tables; i++) {
		free(tables[i]->stride);
		free(tables[i]);
	}
	n_tables = 0;
	table_route_slab = slab_destroy(table_route_slab);
	node_slab4 = slab_destroy(node_slab4);
	node_slab6 = slab_destroy(node_slab6);
}

struct rtable *
table_get(uint32_t id, uint8_t family, bool create)
{
	struct rtable *t;

	for (unsigned i = 0; i < n_tables; i++)
		if (tables[i]->id == id && tables[i]->family == family)
			return tables[i];
	if (!create || n_tables >= TABLE_MAX)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	if (family == PS_FAM_V4 && !(t->stride = calloc(STRIDE_SIZE, sizeof(*t->stride)))) {
		free(t);
		return NULL;
	}
	t->id = id;
	t->family = family;
	t->decoupled = table_decouple_new;
	t->idx = (uint16_t)n_tables;
	tables[n_tables++] = t;
	return t;
}

struct rtable *
table_at(uint16_t idx)
{
	return idx < n_tables ? tables[idx] : NULL;
}

unsigned
table_count(void)
{
	return n_tables;
}

static unsigned
bit_at(const uint8_t *a, unsigned pos)
{
	return (a[pos / 8] >> (7 - pos % 8)) & 1;
}

static unsigned
alen_of(const struct rtable *t)
{
	return t->family == PS_FAM_V4 ? 4 : 16;
}

static struct slab *
node_slab(const struct rtable *t)
{
	return t->family == PS_FAM_V4 ? node_slab4 : node_slab6;
}

static struct tnode *
nd(const struct slab *ns, uint32_t ref)
{
	return slab_deref(ns, ref);
}

static struct route *
routes_of(const struct tnode *n)
{
	return slab_deref(table_route_slab, n->routes);
}

uint32_t
route_ref(const struct route *r)
{
	return slab_ref(table_route_slab, r);
}

/* The node holding r's prefix. */
static struct tnode *
node_of(const struct route *r)
{
	return slab_at(node_slab(tables[r->rt]), r->node);
}

static unsigned
stride_index(const uint8_t *a)
{
	return (unsigned)a[0] << 8 | a[1];
}

/* The trie a prefix lives in: its /16's for IPv4 prefixes of 16 bits or more. */
static uint32_t *
root_link(struct rtable *t, const union ps_addr *prefix, unsigned plen)
{
	if (t->stride && plen >= STRIDE_BITS)
		return &t->stride[stride_index(prefix->b)];
	return &t->root;
}

/*
 * Length of the common leading bits of a and b, at most max, 32 bits at a time:
 * a node's prefix holds only its table's address length, so max never reaches
 * past it.
 */
static unsigned
common_bits(const uint8_t *a, const uint8_t *b, unsigned max)
{
	for (unsigned i = 0; i * 8 < max; i += 4) {
		uint32_t x, y, d;
		memcpy(&x, a + i, 4);
		memcpy(&y, b + i, 4);
		d = be32toh(x ^ y);
		if (d) {
			unsigned n = i * 8 + (unsigned)__builtin_clz(d);
			return n < max ? n : max;
		}
	}
	return max;
}

/* a's first alen bytes with the bits from len on cleared. */
static void
masked(uint8_t *dst, const union ps_addr *a, unsigned len, unsigned alen)
{
	memset(dst, 0, alen);
	memcpy(dst, a->b, len / 8);
	if (len % 8)
		dst[len / 8] = a->b[len / 8] & (uint8_t)(0xff00u >> (len % 8));
}

static struct tnode *
node_new(struct rtable *t, const union ps_addr *prefix, unsigned plen)
{
	struct tnode *n = slab_alloc(node_slab(t));

	if (!n)
		return NULL;
	n->child[0] = n->child[1] = 0;
	n->routes = 0;
	masked(n->prefix, prefix, plen, alen_of(t));
	n->plen = (uint8_t)plen;
	t->n_nodes++;
	return n;
}

static struct tnode *
node_find(struct rtable *t, const union ps_addr *prefix, unsigned plen)
{
	const struct slab *ns = node_slab(t);
	struct tnode *n = nd(ns, *root_link(t, prefix, plen));

	while (n) {
		if (n->plen > plen || common_bits(n->prefix, prefix->b, n->plen) < n->plen)
			return NULL;
		if (n->plen == plen)
			return n;
		n = nd(ns, n->child[bit_at(prefix->b, n->plen)]);
	}
	return NULL;
}

/* The node for prefix/plen, made (with any glue needed) if absent. */
static struct tnode *
node_get(struct rtable *t, const union ps_addr *prefix, unsigned plen)
{
	struct slab *ns = node_slab(t);
	uint32_t *link = root_link(t, prefix, plen);
	struct tnode *n, *leaf, *glue;

	while ((n = nd(ns, *link))) {
		unsigned common = common_bits(n->prefix, prefix->b, n->plen < plen ? n->plen : plen);
		if (common < n->plen) {
			/* prefix leaves n's path at bit `common`: a new node goes above n. */
			if (common == plen) {
				if (!(leaf = node_new(t, prefix, plen)))
					return NULL;
				leaf->child[bit_at(n->prefix, plen)] = *link;
				*link = slab_ref(ns, leaf);
				return leaf;
			}
			if (!(glue = node_new(t, prefix, common)))
				return NULL;
			if (!(leaf = node_new(t, prefix, plen))) {
				slab_free(ns, glue);
				t->n_nodes--;
				return NULL;
			}
			glue->child[bit_at(n->prefix, common)] = *link;
			glue->child[bit_at(prefix->b, common)] = slab_ref(ns, leaf);
			*link = slab_ref(ns, glue);
			return leaf;
		}
		if (n->plen == plen)
			return n;
		link = &n->child[bit_at(prefix->b, n->plen)];
	}
	if ((n = node_new(t, prefix, plen)))
		*link = slab_ref(ns, n);
	return n;
}

/* Remove a node that holds no routes, collapsing what is no longer needed. */
static void
node_prune(struct rtable *t, const union ps_addr *prefix, unsigned plen)
{
	struct slab *ns = node_slab(t);
	uint32_t *path[130];
	uint32_t *link = root_link(t, prefix, plen);
	unsigned depth = 0;
	struct tnode *n;

	while ((n = nd(ns, *link)) && n->plen < plen) {
		path[depth++] = link;
		link = &n->child[bit_at(prefix->b, n->plen)];
	}
	if (!n || n->plen != plen || n->routes)
		return;
	path[depth] = link;
	/* Walk up: drop empty nodes, splice out nodes with one child. */
	for (;;) {
		n = slab_at(ns, *path[depth]);
		if (n->routes || (n->child[0] && n->child[1]))
			break;
		*path[depth] = n->child[0] ? n->child[0] : n->child[1];
		slab_free(ns, n);
		t->n_nodes--;
		if (depth == 0)
			break;
		depth--;
	}
}

struct route *
table_lookup(struct rtable *t, const union ps_addr *prefix, uint8_t plen, uint8_t tos,
    uint32_t metric)
{
	struct tnode *n = node_find(t, prefix, plen);

	if (!n)
		return NULL;
	for (struct route *r = routes_of(n); r; r = route_at(r->next))
		if (r->tos == tos && r->metric == metric)
			return r;
	return NULL;
}

struct route *
table_insert(struct rtable *t, const union ps_addr *prefix, uint8_t plen, uint8_t tos,
    uint32_t metric)
{
	struct tnode *n = node_get(t, prefix, plen);
	struct route *r;

	if (!n)
		return NULL;
	for (r = routes_of(n); r; r = route_at(r->next))
		if (r->tos == tos && r->metric == metric)
			return r;
	r = slab_alloc(table_route_slab);
	if (!r) {
		if (!n->routes)
			node_prune(t, prefix, plen);
		return NULL;
	}
	memset(r, 0, sizeof(*r));
	r->node = slab_ref(node_slab(t), n);
	r->metric = metric;
	r->tos = tos;
	r->rt = t->idx;
	r->owner = OWNER_NONE;
	r->next = n->routes;
	n->routes = route_ref(r);
	t->n_routes++;
	return r;
}

bool
table_release(struct route *r)
{
	struct rtable *t = tables[r->rt];
	struct tnode *n = node_of(r);
	struct route *prev;
	union ps_addr prefix;

	if (r->owner != OWNER_NONE || r->want || r->have ||
	    (r->flags & (R_QUEUED | R_INFLIGHT | R_STATUSQ | R_PARKED | R_PENDING)))
		return false;
	if ((prev = routes_of(n)) == r) {
		n->routes = r->next;
	} else {
		while (route_at(prev->next) != r)
			prev = route_at(prev->next);
		prev->next = r->next;
	}
	t->n_routes--;
	if (r->flags & R_FAILED)
		t->n_failed--;
	if (r->flags & R_WAITING)
		t->n_waiting--;
	route_prefix(r, &prefix);
	slab_free(table_route_slab, r);
	if (!n->routes)
		node_prune(t, &prefix, n->plen);
	return true;
}

void
route_set_want(struct route *r, struct rattr *a)
{
	struct rtable *t = tables[r->rt];

	assert(!a || a->id);
	t->n_desired += (a != NULL) - (r->want != 0);
	rattr_unref(route_want(r));
	r->want = rattr_id(a);
}

void
route_set_have(struct route *r, struct rattr *a)
{
	assert(!a || a->id);
	rattr_unref(route_have(r));
	r->have = rattr_id(a);
}

void
route_prefix(const struct route *r, union ps_addr *ret)
{
	memset(ret, 0, sizeof(*ret));
	memcpy(ret->b, node_of(r)->prefix, alen_of(tables[r->rt]));
}

uint8_t
route_plen(const struct route *r)
{
	return node_of(r)->plen;
}

static int
walk_node(const struct slab *ns, struct tnode *n, table_walk_cb cb, void *ctx)
{
	/* Recursion depth is bounded by the prefix length (at most 129 levels). */
	while (n) {
		int rc;
		for (struct route *r = routes_of(n), *next; r; r = next) {
			next = route_at(r->next);
			if ((rc = cb(r, ctx)))
				return rc;
		}
		if (n->child[0] && n->child[1]) {
			if ((rc = walk_node(ns, nd(ns, n->child[0]), cb, ctx)))
				return rc;
			n = nd(ns, n->child[1]);
		} else {
			n = nd(ns, n->child[0] ? n->child[0] : n->child[1]);
		}
	}
	return 0;
}

/* The first node at or below n that lies inside within/len, or NULL. */
static struct tnode *
descend_within(const struct slab *ns, struct tnode *n, const union ps_addr *within, unsigned len)
{
	while (n && n->plen < len) {
		if (common_bits(n->prefix, within->b, n->plen) < n->plen)
			return NULL;
		n = nd(ns, n->child[bit_at(within->b, n->plen)]);
	}
	if (!n || common_bits(n->prefix, within->b, len) < len)
		return NULL;
	return n;
}

/*
 * The IPv4 merge: the root trie's prefixes (all shorter than /16) in order, each
 * after the /16 subtries whose addresses lie before it. *next_bucket is the first
 * subtrie not yet walked; end bounds them.
 */
struct merge {
	struct rtable *t;
	unsigned next_bucket;
	unsigned end;
	table_walk_cb cb;
	void *ctx;
};

static int
flush_buckets(struct merge *m, unsigned upto)
{
	int rc;

	for (; m->next_bucket < upto && m->next_bucket < m->end; m->next_bucket++)
		if (m->t->stride[m->next_bucket] &&
		    (rc = walk_node(node_slab4, nd(node_slab4, m->t->stride[m->next_bucket]), m->cb, m->ctx)))
			return rc;
	return 0;
}

static int
merge_cb(struct route *r, void *vctx)
{
	struct merge *m = vctx;
	int rc;

	if ((rc = flush_buckets(m, stride_index(node_of(r)->prefix))))
		return rc;
	return m->cb(r, m->ctx);
}

int
table_walk(struct rtable *t, const union ps_addr *within, uint8_t within_len, table_walk_cb cb,
    void *ctx)
{
	struct merge m = { t, 0, STRIDE_SIZE, cb, ctx };
	const struct slab *ns = node_slab(t);
	struct tnode *n;
	int rc;

	if (!t->stride)
		return (n = within ? descend_within(ns, nd(ns, t->root), within, within_len) : nd(ns, t->root))
		    ? walk_node(ns, n, cb, ctx)
		    : 0;
	if (within && within_len >= STRIDE_BITS)
		return (n = descend_within(ns, nd(ns, t->stride[stride_index(within->b)]), within, within_len))
		    ? walk_node(ns, n, cb, ctx)
		    : 0;
	if (within) {
		m.next_bucket = stride_index(within->b);
		m.end = m.next_bucket + (1u << (STRIDE_BITS - within_len));
		n = descend_within(ns, nd(ns, t->root), within, within_len);
	} else {
		n = nd(ns, t->root);
	}
	if (n && (rc = walk_node(ns, n, merge_cb, &m)))
		return rc;
	return flush_buckets(&m, m.end);
}

/*
 * Resuming a walk: the nodes of n's subtree that come after the key K (bits of
 * `after`, length klen) in walk order. A node after K has its whole subtree
 * after K (its extensions sort after it, and K is neither among them nor
 * between); a node not on K's path that sorts before K has its whole subtree
 * before K; so only the nodes on K's path are looked into, and the work is the
 * path's length plus what is walked.
 */
static int
walk_after(const struct slab *ns, struct tnode *n, const uint8_t *after, unsigned klen, table_walk_cb cb,
    void *ctx)
{
	int rc;

	while (n) {
		unsigned c = common_bits(n->prefix, after, n->plen < klen ? n->plen : klen);
		if (c < (n->plen < klen ? n->plen : klen))
			/* They differ at bit c: n's side decides for its whole subtree. */
			return bit_at(n->prefix, c) ? walk_node(ns, n, cb, ctx) : 0;
		if (n->plen > klen)
			return walk_node(ns, n, cb, ctx); /* an extension of K: after it */
		/* n is K or a prefix of K: not after it; its children may hold later keys. */
		if (n->plen == klen) {
			/* n is K: all below it are extensions of K, after it. */
			if (n->child[0] && (rc = walk_node(ns, nd(ns, n->child[0]), cb, ctx)))
				return rc;
			return n->child[1] ? walk_node(ns, nd(ns, n->child[1]), cb, ctx) : 0;
		}
		if (bit_at(after, n->plen)) {
			n = nd(ns, n->child[1]); /* everything under child 0 sorts before K */
		} else {
			if (n->child[0] && (rc = walk_after(ns, nd(ns, n->child[0]), after, klen, cb, ctx)))
				return rc;
			return n->child[1] ? walk_node(ns, nd(ns, n->child[1]), cb, ctx) : 0;
		}
	}
	return 0;
}

int
table_walk_after(struct rtable *t, const union ps_addr *after, uint8_t after_len, table_walk_cb cb,
    void *ctx)
{
	struct merge m = { t, 0, STRIDE_SIZE, cb, ctx };
	const struct slab *ns = node_slab(t);
	int rc;

	if (!after)
		return table_walk(t, NULL, 0, cb, ctx);
	if (!t->stride)
		return walk_after(ns, nd(ns, t->root), after->b, after_len, cb, ctx);
	/* Subtries before K's /16 sort before it; K's own is resumed inside. */
	m.next_bucket = stride_index(after->b);
	if (after_len >= STRIDE_BITS) {
		if ((rc = walk_after(ns, nd(ns, t->stride[m.next_bucket]), after->b, after_len, cb, ctx)))
			return rc;
		m.next_bucket++;
	}
	if ((rc = walk_after(ns, nd(ns, t->root), after->b, after_len, merge_cb, &m)))
		return rc;
	return flush_buckets(&m, m.end);
}

static struct tnode *
longest_in(const struct slab *ns, struct tnode *n, const union ps_addr *addr, unsigned len)
{
	struct tnode *best = NULL;

	while (n && n->plen <= len && common_bits(n->prefix, addr->b, n->plen) >= n->plen) {
		if (n->routes)
			best = n;
		if (n->plen == len)
			break;
		n = nd(ns, n->child[bit_at(addr->b, n->plen)]);
	}
	return best;
}

struct route *
table_longest(struct rtable *t, const union ps_addr *addr, uint8_t len)
{
	const struct slab *ns = node_slab(t);
	struct tnode *best = NULL;

	if (t->stride && len >= STRIDE_BITS)
		best = longest_in(ns, nd(ns, t->stride[stride_index(addr->b)]), addr, len);
	if (!best)
		best = longest_in(ns, nd(ns, t->root), addr, len);
	return best ? routes_of(best) : NULL;
}

void
table_slab_stats(struct slab_stats *ret_routes, struct slab_stats *ret_nodes4,
    struct slab_stats *ret_nodes6)
{
	slab_get_stats(table_route_slab, ret_routes);
	slab_get_stats(node_slab4, ret_nodes4);
	slab_get_stats(node_slab6, ret_nodes6);
}

bool
table_slab_cleanup(void)
{
	slab_cleanup(table_route_slab);
	slab_cleanup(node_slab4);
	slab_cleanup(node_slab6);
	return table_slab_cleanup_pending();
}

bool
table_slab_cleanup_pending(void)
{
	return slab_cleanup_pending(table_route_slab) || slab_cleanup_pending(node_slab4) ||
	    slab_cleanup_pending(node_slab6);
}
