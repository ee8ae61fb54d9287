/*
 * bgp_rib: a BGP session's prefixes as the peer's routes (bgp-internal.h).
 * A prefix becomes a route of the peer's owner in its table and metric,
 * through the BGP next hop alone (the kernel picks the device). With ADD-PATH
 * the session keeps each prefix's paths in a hash table, and the route has one
 * nexthop per distinct next hop among them.
 */
#include <stdlib.h>
#include <string.h>

#include "bgp-internal.h"
#include "log.h"

/* ---- ADD-PATH: a prefix's paths ---- */

static uint32_t
prefix_hash(const struct bgp_prefix *p)
{
	uint32_t h = 2166136261u ^ p->fam;

	h = (h ^ p->plen) * 16777619u;
	for (unsigned i = 0; i < (p->fam == BGP_V4 ? 4u : 16u); i++)
		h = (h ^ p->addr.b[i]) * 16777619u;
	return h;
}

static struct pentry **
paths_find(struct session *s, const struct bgp_prefix *p, uint32_t h)
{
	struct pentry **link;

	if (!s->pbuckets)
		return NULL;
	for (link = &s->ptab[h & (s->pbuckets - 1)]; *link; link = &(*link)->next)
		if ((*link)->hash == h && (*link)->fam == p->fam && (*link)->plen == p->plen &&
		    !memcmp((*link)->addr.b, p->addr.b, 16))
			return link;
	return link;
}

static void
paths_grow(struct session *s)
{
	uint32_t nb = s->pbuckets ? s->pbuckets * 2 : 1024;
	struct pentry **t = calloc(nb, sizeof(*t));

	if (!t)
		return; /* longer chains; still right */
	for (uint32_t i = 0; i < s->pbuckets; i++)
		for (struct pentry *e = s->ptab[i], *next; e; e = next) {
			next = e->next;
			e->next = t[e->hash & (nb - 1)];
			t[e->hash & (nb - 1)] = e;
		}
	free(s->ptab);
	s->ptab = t;
	s->pbuckets = nb;
}

void
bgp_paths_free(struct session *s)
{
	for (uint32_t i = 0; i < s->pbuckets; i++)
		for (struct pentry *e = s->ptab[i], *next; e; e = next) {
			next = e->next;
			free(e);
		}
	free(s->ptab);
	s->ptab = NULL;
	s->pbuckets = s->pentries = 0;
}

/* Path p->path_id of p now goes through gw; the prefix's entry, or NULL when out of memory. */
static struct pentry *
paths_set(struct session *s, const struct bgp_prefix *p, const union ps_addr *gw, uint8_t gw_fam)
{
	uint32_t h = prefix_hash(p);
	struct pentry **link, *e;

	if (s->pentries >= s->pbuckets)
		paths_grow(s);
	if (!(link = paths_find(s, p, h)))
		return NULL;
	if (!(e = *link)) {
		if (!(e = calloc(1, sizeof(*e) + 2 * sizeof(e->p[0]))))
			return NULL;
		e->hash = h;
		e->fam = p->fam;
		e->plen = p->plen;
		e->addr = p->addr;
		e->cap = 2;
		*link = e;
		s->pentries++;
	}
	for (unsigned i = 0; i < e->n; i++)
		if (e->p[i].id == p->path_id) {
			e->p[i].fam = gw_fam;
			e->p[i].gw = *gw;
			return e;
		}
	if (e->n == e->cap) {
		struct pentry *bigger;
		if (e->cap >= BGP_PATHS_MAX)
			return e; /* the path is not taken; the others stay */
		if (!(bigger = realloc(e, sizeof(*e) + 2u * e->cap * sizeof(e->p[0]))))
			return e;
		e = *link = bigger;
		e->cap = (uint16_t)(e->cap * 2);
	}
	e->p[e->n].id = p->path_id;
	e->p[e->n].fam = gw_fam;
	e->p[e->n].gw = *gw;
	e->n++;
	return e;
}

/* Path p->path_id of p is withdrawn: the prefix's entry, or NULL if it has no path left. */
static struct pentry *
paths_del(struct session *s, const struct bgp_prefix *p)
{
	struct pentry **link = paths_find(s, p, prefix_hash(p)), *e;

	if (!link || !(e = *link))
		return NULL;
	for (unsigned i = 0; i < e->n; i++)
		if (e->p[i].id == p->path_id) {
			e->p[i] = e->p[--e->n];
			break;
		}
	if (e->n)
		return e;
	*link = e->next;
	free(e);
	s->pentries--;
	return NULL;
}

/* ---- routes ---- */

static uint32_t
route_metric(const struct session *s, const struct bgp_prefix *p)
{
	/* IPv6 metric 0 is 1024, as the kernel has it (and feed.c). */
	return p->fam == BGP_V6 && !s->peer->c.metric ? 1024 : s->peer->c.metric;
}

static int
cmp_nh(const void *a, const void *b)
{
	const struct ps_nexthop *x = a, *y = b;

	if (x->gw_family != y->gw_family)
		return x->gw_family - y->gw_family;
	return memcmp(x->gw.b, y->gw.b, 16);
}

/* The prefix through the next hops given (n of them), as the peer's route. */
static void
install(struct session *s, const struct bgp_prefix *p, const struct path *paths, unsigned n)
{
	static struct ps_nexthop all[BGP_PATHS_MAX];
	struct ps_route *pr = &bg.pr;
	char why[128];

	memset(pr, 0, offsetof(struct ps_route, nh));
	pr->key.family = p->fam == BGP_V4 ? PS_FAM_V4 : PS_FAM_V6;
	pr->key.plen = p->plen;
	pr->key.prefix = p->addr;
	pr->type = PS_RT_UNICAST;
	for (unsigned i = 0; i < n; i++) {
		memset(&all[i], 0, sizeof(all[i]));
		all[i].gw = paths[i].gw;
		all[i].gw_family = paths[i].fam;
		all[i].weight = 1;
	}
	/* One nexthop per distinct next hop, in a fixed order: the same set, the same route. */
	qsort(all, n, sizeof(all[0]), cmp_nh);
	pr->n_nexthops = 0;
	for (unsigned i = 0; i < n && pr->n_nexthops < PS_NEXTHOPS_MAX; i++)
		if (!pr->n_nexthops || cmp_nh(&pr->nh[pr->n_nexthops - 1], &all[i]))
			pr->nh[pr->n_nexthops++] = all[i];
	if (owner_route(s->owner, s->peer->c.table, route_metric(s, p), pr, why, sizeof(why))) {
		if (!s->peer->refused++)
			log_warn("bgp %s: a route refused (%s); further refusals are counted", s->peer->c.name,
			    why);
	}
}

static void
withdraw_key(struct session *s, const struct bgp_prefix *p)
{
	struct ps_key k = { .family = p->fam == BGP_V4 ? PS_FAM_V4 : PS_FAM_V6, .plen = p->plen,
		.prefix = p->addr };

	owner_withdraw(s->owner, s->peer->c.table, route_metric(s, p), &k);
}

void
bgp_announce(struct session *s, const struct bgp_prefix *p, const union ps_addr *gw, uint8_t gw_fam)
{
	struct path one = { .fam = gw_fam, .gw = *gw };
	struct pentry *e;

	if (!s->caps.addpath[p->fam]) {
		install(s, p, &one, 1);
	} else if ((e = paths_set(s, p, gw, gw_fam))) {
		install(s, p, e->p, e->n);
	}
}

void
bgp_withdraw(struct session *s, const struct bgp_prefix *p)
{
	struct pentry *e;

	if (s->caps.addpath[p->fam] && (e = paths_del(s, p)))
		install(s, p, e->p, e->n); /* the paths left */
	else
		withdraw_key(s, p);
}

