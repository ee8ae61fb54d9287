/*
 * rattr: the intern table of route attributes, a chained hash table that doubles
 * when its load passes 1. Entries are compared field by field on the wire form
 * (ifindex is a cache, not part of identity). Few distinct sets exist in practice
 * (about one per BGP neighbor and route type), so each is a plain malloc.
 *
 * Routes name a set by a 32-bit id, an index into rattr_by_id; freed ids are
 * reused first, so the index stays as long as the most sets alive at once.
 */
#include <stdlib.h>
#include <string.h>

#include <linux/rtnetlink.h>

#include "rattr.h"

static struct rattr **buckets;
static uint32_t n_buckets;
static uint64_t n_entries;
static uint64_t n_bytes;
static void (*free_hook)(struct rattr *a);

struct rattr **rattr_by_id;
static uint32_t *free_ids; /* a stack of ids to reuse; as long as rattr_by_id */
static uint32_t n_free;
static uint32_t n_ids; /* ids handed out so far, 0 included */
static uint32_t cap_ids;
static struct rattr unknown = { .refs = 1 };

/* Give a an id. False on allocation failure. */
static bool
take_id(struct rattr *a)
{
	if (n_free) {
		a->id = free_ids[--n_free];
	} else {
		if (n_ids == cap_ids) {
			uint32_t cap = cap_ids ? cap_ids * 2 : 64;
			struct rattr **b = realloc(rattr_by_id, cap * sizeof(*b));
			uint32_t *f;
			if (!b)
				return false;
			rattr_by_id = b;
			if (!(f = realloc(free_ids, cap * sizeof(*f))))
				return false;
			free_ids = f;
			cap_ids = cap;
			if (!n_ids)
				rattr_by_id[n_ids++] = NULL;
		}
		a->id = n_ids++;
	}
	rattr_by_id[a->id] = a;
	return true;
}

static void
drop_id(struct rattr *a)
{
	rattr_by_id[a->id] = NULL;
	free_ids[n_free++] = a->id;
	a->id = 0;
}

struct rattr *
rattr_unknown(void)
{
	if (!unknown.id && !take_id(&unknown))
		return NULL;
	unknown.refs++;
	return &unknown;
}

void
rattr_set_free_hook(void (*hook)(struct rattr *a))
{
	free_hook = hook;
}

static uint32_t
mix(uint32_t h, const void *data, size_t len)
{
	const uint8_t *p = data;

	/* FNV-1a: small keys, good enough spread, no dependency. */
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

/*
 * A nexthop's weight as the kernel keeps it: a route with one nexthop has no
 * weight (nl.c writes none, and a dump reads 1), so it counts as 1. Otherwise
 * a client's single path of weight 9 would differ from the kernel's for ever.
 */
static uint16_t
weight_of(const struct ps_route *r, unsigned i)
{
	return r->n_nexthops == 1 ? 1 : r->nh[i].weight;
}

static uint32_t
hash_route(const struct ps_route *r)
{
	uint32_t h = 2166136261u;
	uint8_t head[4] = { r->key.family, r->type, (uint8_t)(r->has & 0xf), r->scope };

	h = mix(h, head, sizeof(head));
	h = mix(h, &r->n_nexthops, sizeof(r->n_nexthops));
	if (r->has & PS_RA_PREFSRC)
		h = mix(h, r->prefsrc.b, 16);
	if (r->has & PS_RA_REALM)
		h = mix(h, &r->realm, sizeof(r->realm));
	if (r->has & PS_RA_MTU)
		h = mix(h, &r->mtu, sizeof(r->mtu));
	for (unsigned i = 0; i < r->n_nexthops; i++) {
		const struct ps_nexthop *nh = &r->nh[i];
		uint16_t w = weight_of(r, i);
		h = mix(h, nh->gw.b, 16);
		h = mix(h, &nh->gw_family, 1);
		h = mix(h, &nh->flags, 1);
		h = mix(h, &w, 2);
		h = mix(h, nh->ifname, strnlen(nh->ifname, sizeof(nh->ifname)));
	}
	return h;
}

static bool
same(const struct rattr *a, const struct ps_route *r)
{
	uint8_t has = (uint8_t)(r->has & (PS_RA_PREFSRC | PS_RA_REALM | PS_RA_SCOPE | PS_RA_MTU));

	if (a->family != r->key.family || a->type != r->type || a->has != has ||
	    a->n_nh != r->n_nexthops)
		return false;
	if ((has & PS_RA_PREFSRC) && memcmp(a->prefsrc.b, r->prefsrc.b, 16))
		return false;
	if (((has & PS_RA_REALM) && a->realm != r->realm) ||
	    ((has & PS_RA_SCOPE) && a->scope != r->scope) || ((has & PS_RA_MTU) && a->mtu != r->mtu))
		return false;
	for (unsigned i = 0; i < a->n_nh; i++) {
		const struct rnh *x = &a->nh[i];
		const struct ps_nexthop *y = &r->nh[i];
		if (x->gw_family != y->gw_family || x->flags != y->flags || x->weight != weight_of(r, i) ||
		    memcmp(x->gw.b, y->gw.b, 16) || strncmp(x->ifname, y->ifname, PS_IFNAMSIZ))
			return false;
	}
	return true;
}

/* The scope a route has in the kernel: its own, or the one fibd writes by default (nl.c). */
static uint8_t
scope_of(const struct rattr *a)
{
	bool any_gw = false;

	if (a->has & PS_RA_SCOPE)
		return a->scope;
	for (unsigned i = 0; i < a->n_nh; i++)
		any_gw |= a->nh[i].gw_family != 0;
	return a->type == PS_RT_UNICAST && !any_gw ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
}

bool
rattr_fulfils(const struct rattr *have, const struct rattr *want)
{
	uint8_t opt = PS_RA_PREFSRC | PS_RA_MTU;

	if (have == want)
		return true;
	if (!have || !want || have->family != want->family || have->type != want->type ||
	    have->n_nh != want->n_nh || (have->has & opt) != (want->has & opt))
		return false;
	/* IPv6 has no route scopes: the kernel ignores what is written. */
	if (want->family == PS_FAM_V4 && scope_of(have) != scope_of(want))
		return false;
	if (((want->has & PS_RA_PREFSRC) && memcmp(have->prefsrc.b, want->prefsrc.b, 16)) ||
	    rattr_realm(have) != rattr_realm(want) ||
	    ((want->has & PS_RA_MTU) && have->mtu != want->mtu))
		return false;
	for (unsigned i = 0; i < want->n_nh; i++) {
		const struct rnh *x = &have->nh[i], *y = &want->nh[i];
		if (x->gw_family != y->gw_family || x->flags != y->flags || x->weight != y->weight ||
		    memcmp(x->gw.b, y->gw.b, 16))
			return false;
		/* A nexthop given by its gateway alone: the kernel picked the device. */
		if (y->ifname[0] && strncmp(x->ifname, y->ifname, PS_IFNAMSIZ))
			return false;
	}
	return true;
}

static void
grow(void)
{
	uint32_t nb = n_buckets ? n_buckets * 2 : 64;
	struct rattr **b = calloc(nb, sizeof(*b));

	if (!b)
		return; /* keep the longer chains; still correct */
	for (uint32_t i = 0; i < n_buckets; i++) {
		struct rattr *a = buckets[i];
		while (a) {
			struct rattr *next = a->hnext;
			a->hnext = b[a->hash & (nb - 1)];
			b[a->hash & (nb - 1)] = a;
			a = next;
		}
	}
	free(buckets);
	buckets = b;
	n_buckets = nb;
}

struct rattr *
rattr_intern(const struct ps_route *r)
{
	uint32_t h = hash_route(r);
	struct rattr *a;
	size_t size;

	if (n_entries >= n_buckets)
		grow();
	if (!n_buckets)
		return NULL;
	for (a = buckets[h & (n_buckets - 1)]; a; a = a->hnext)
		if (a->hash == h && same(a, r)) {
			a->refs++;
			return a;
		}
	size = sizeof(*a) + r->n_nexthops * sizeof(a->nh[0]);
	a = calloc(1, size);
	if (!a)
		return NULL;
	if (!take_id(a)) {
		free(a);
		return NULL;
	}
	a->hash = h;
	a->refs = 1;
	a->family = r->key.family;
	a->type = r->type;
	a->has = (uint8_t)(r->has & (PS_RA_PREFSRC | PS_RA_REALM | PS_RA_SCOPE | PS_RA_MTU));
	a->scope = r->scope;
	a->realm = r->realm;
	a->mtu = r->mtu;
	a->prefsrc = r->prefsrc;
	a->n_nh = r->n_nexthops;
	for (unsigned i = 0; i < r->n_nexthops; i++) {
		a->nh[i].gw = r->nh[i].gw;
		a->nh[i].gw_family = r->nh[i].gw_family;
		a->nh[i].flags = r->nh[i].flags;
		a->nh[i].weight = weight_of(r, i);
		memcpy(a->nh[i].ifname, r->nh[i].ifname, PS_IFNAMSIZ);
	}
	a->hnext = buckets[h & (n_buckets - 1)];
	buckets[h & (n_buckets - 1)] = a;
	n_entries++;
	n_bytes += size;
	return a;
}

struct rattr *
rattr_ref(struct rattr *a)
{
	if (a)
		a->refs++;
	return a;
}

struct rattr *
rattr_unref(struct rattr *a)
{
	struct rattr **link;

	if (!a || --a->refs > 0)
		return NULL;
	for (link = &buckets[a->hash & (n_buckets - 1)]; *link != a; link = &(*link)->hnext)
		;
	*link = a->hnext;
	if (free_hook)
		free_hook(a);
	n_entries--;
	n_bytes -= sizeof(*a) + a->n_nh * sizeof(a->nh[0]);
	drop_id(a);
	free(a);
	return NULL;
}

void
rattr_for_each(void (*cb)(struct rattr *a, void *ctx), void *ctx)
{
	for (uint32_t i = 0; i < n_buckets; i++)
		for (struct rattr *a = buckets[i], *next; a; a = next) {
			next = a->hnext;
			cb(a, ctx);
		}
}

uint64_t
rattr_count(void)
{
	return n_entries;
}

uint64_t
rattr_bytes(void)
{
	return n_bytes + n_buckets * sizeof(*buckets) + cap_ids * (sizeof(*rattr_by_id) + sizeof(*free_ids));
}

void
rattr_shutdown(void)
{
	free(buckets);
	buckets = NULL;
	n_buckets = 0;
	free(rattr_by_id);
	free(free_ids);
	rattr_by_id = NULL;
	free_ids = NULL;
	n_ids = cap_ids = n_free = 0;
	unknown.id = 0;
}
