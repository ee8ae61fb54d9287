/*
 * bgp: BGP ingest (bgp.h). fibd is a passive, receive-only speaker: it
 * listens, a configured peer connects, fibd sends its OPEN at once, and the
 * session goes OpenSent -> OpenConfirm (the peer's OPEN was good: KEEPALIVE
 * sent) -> Established (the peer's KEEPALIVE) -> closed (RFC 4271 8). A new
 * connection from a peer replaces its session: the peer has restarted.
 *
 * Input is decoded at most BGP_DECODE_NS per callback: a session with input
 * left stops reading and an idle handle goes on (as feed.c does). An UPDATE
 * is parsed whole first (bgp_msg.c checks every prefix) and then applied
 * prefix by prefix, so it may span callbacks; its prefixes point into the
 * session's buffer, which is not moved meanwhile.
 *
 * A prefix becomes a route of the peer's owner (owner.c; client bgp:NAME) in
 * the peer's table and metric, through the BGP next hop alone: the kernel
 * picks the device (routes without `dev`; nl_send.c). With ADD-PATH the
 * session keeps each prefix's paths, and the route has one nexthop per
 * distinct next hop among them (ECMP).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bgp.h"
#include "bgp_msg.h"
#include "health.h"
#include "log.h"
#include "owner.h"

#define BGP_HOLD_TIME 90
#define BGP_OPEN_WAIT_S 240 /* the hold timer until the peer's OPEN (RFC 4271 8: large) */
#define BGP_GR_TIME 120     /* the restart time fibd's OPEN states */
#define BGP_DECODE_NS 2000000ull
#define BGP_BUF (3u * BGP_EXT_MSG_MAX) /* a message being applied, and the next ones read */
#define BGP_PATHS_MAX 1024 /* paths of one prefix (ADD-PATH) */
#define BGP_CLOSE_WAIT_MS 5000 /* for a last NOTIFICATION to be written */

enum state { S_OPENSENT, S_OPENCONFIRM, S_ESTABLISHED, S_CLOSING };

static const char *const state_names[] = { "open sent", "open confirm", "established", "closing" };

/* One path of a prefix (ADD-PATH): its identifier and next hop. */
struct path {
	uint32_t id;
	uint8_t fam;
	union ps_addr gw;
};

/* A prefix's paths, in a session's hash table. */
struct pentry {
	struct pentry *next;
	uint32_t hash;
	uint8_t fam, plen;
	uint16_t n, cap;
	union ps_addr addr;
	struct path p[];
};

struct peer;

struct session {
	uv_tcp_t tcp;
	uv_timer_t hold, keepalive, stale;
	unsigned handles; /* open: the session is freed when the last one has closed */
	struct peer *peer; /* NULL for a connection refused, and once closing */
	enum state state;
	char addr[INET6_ADDRSTRLEN];
	uint16_t hold_time;
	size_t max; /* the longest message the peer may send */
	struct bgp_session_caps caps;
	bool gr;
	uint16_t gr_time;
	bool eor[BGP_NFAM]; /* End-of-RIB seen, or the family not carried */
	bool fed;           /* the feed ended (End-of-RIB of every family, or stale_time) */
	struct owner *owner;
	uint8_t *buf;
	size_t len, off;
	bool busy;
	struct session *busy_next;
	bool in_update;
	struct bgp_update upd;
	unsigned run;
	struct pentry **ptab;
	uint32_t pbuckets, pentries;
	unsigned writes;
	bool close_after_write;
	struct session *next;
};

struct peer {
	struct conf_bgp_peer c;
	struct session *s;
	bool seen; /* in the configuration being applied */
	uint64_t updates, prefixes, withdrawn, sessions, refused;
	uint64_t up_since_ms;
	char last_error[160];
};

static struct {
	uv_loop_t *loop;
	int fds[CONF_BGP_LISTEN_MAX];
	struct conf_bgp_listen listen[CONF_BGP_LISTEN_MAX];
	unsigned n_listen;
	uv_tcp_t listeners[CONF_BGP_LISTEN_MAX];
	unsigned n_listeners;
	struct bgp_local local;
	struct peer *peers[CONF_BGP_PEERS_MAX];
	unsigned n_peers;
	struct session *sessions;
	struct session *busy;
	uv_idle_t decoder;
	bool decoder_on, closing, started;
	struct ps_route pr; /* large: one, reused */
} bg;

/*
 * What becomes of an established session's routes when it ends. Graceful
 * restart (RFC 4724) applies when the connection is lost without a
 * NOTIFICATION either way: the peer may be restarting.
 */
enum end {
	END_LOST,     /* no NOTIFICATION: kept for the peer's restart time (if it has graceful restart) */
	END_NOTIFIED, /* a NOTIFICATION sent or received: withdrawn, unless the peer persists */
	END_WITHDRAW, /* its configuration changed or went: withdrawn */
};

static void session_end(struct session *s, const struct bgp_error *notify, enum end how, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void decode(struct session *s);

/* ---- addresses ---- */

static void
addr_text(int family, const uint8_t *addr, char *text)
{
	inet_ntop(family, addr, text, INET6_ADDRSTRLEN);
}

/* A peer's address from a socket address (an IPv4-mapped IPv6 one as IPv4). */
static int
sockaddr_peer(const struct sockaddr_storage *ss, uint8_t *addr)
{
	memset(addr, 0, 16);
	if (ss->ss_family == AF_INET) {
		memcpy(addr, &((const struct sockaddr_in *)ss)->sin_addr, 4);
		return AF_INET;
	}
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			memcpy(addr, a->s6_addr + 12, 4);
			return AF_INET;
		}
		memcpy(addr, a, 16);
		return AF_INET6;
	}
	return -1;
}

static struct peer *
peer_by_addr(int family, const uint8_t *addr)
{
	for (unsigned i = 0; i < bg.n_peers; i++)
		if (bg.peers[i]->c.family == family && !memcmp(bg.peers[i]->c.addr, addr, 16))
			return bg.peers[i];
	return NULL;
}

/* TCP MD5 signatures (RFC 2385) of a peer's connections, on the listening sockets of its family. */
static void
set_md5(const struct conf_bgp_peer *p, bool on)
{
	struct tcp_md5sig sig;

	if (!p->md5[0])
		return;
	memset(&sig, 0, sizeof(sig));
	if (p->family == AF_INET) {
		struct sockaddr_in *sa = (struct sockaddr_in *)&sig.tcpm_addr;
		sa->sin_family = AF_INET;
		memcpy(&sa->sin_addr, p->addr, 4);
	} else {
		struct sockaddr_in6 *sa = (struct sockaddr_in6 *)&sig.tcpm_addr;
		sa->sin6_family = AF_INET6;
		memcpy(&sa->sin6_addr, p->addr, 16);
	}
	if (on) {
		sig.tcpm_keylen = (uint16_t)strlen(p->md5);
		memcpy(sig.tcpm_key, p->md5, sig.tcpm_keylen);
	}
	for (unsigned i = 0; i < bg.n_listen; i++)
		if (bg.listen[i].family == p->family && bg.fds[i] >= 0 &&
		    setsockopt(bg.fds[i], IPPROTO_TCP, TCP_MD5SIG, &sig, sizeof(sig)) < 0 && on)
			log_warn_errno(-errno, "bgp %s: cannot set its TCP MD5 key", p->name);
}

/* ---- writing ---- */

struct wreq {
	uv_write_t req;
	struct session *s;
	uint8_t data[];
};

static void close_handles(struct session *s);

static void
on_written(uv_write_t *req, int status)
{
	struct wreq *w = (struct wreq *)req;
	struct session *s = w->s;

	free(w);
	s->writes--;
	if (status < 0 && s->state != S_CLOSING)
		session_end(s, NULL, END_LOST, "cannot write to the peer: %s", uv_strerror(status));
	if (s->close_after_write && !s->writes)
		close_handles(s);
}

static void
send_bytes(struct session *s, const uint8_t *p, size_t n)
{
	struct wreq *w;
	uv_buf_t b;

	if (uv_is_closing((uv_handle_t *)&s->tcp) || !(w = malloc(sizeof(*w) + n)))
		return;
	memcpy(w->data, p, n);
	w->s = s;
	b = uv_buf_init((char *)w->data, (unsigned)n);
	if (uv_write(&w->req, (uv_stream_t *)&s->tcp, &b, 1, on_written) < 0) {
		free(w);
		return;
	}
	s->writes++;
}

static void
send_keepalive(struct session *s)
{
	uint8_t m[BGP_HDR_LEN];

	send_bytes(s, m, bgp_keepalive_build(m));
}

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

static void
paths_free(struct session *s)
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

static void
announce(struct session *s, const struct bgp_prefix *p, const union ps_addr *gw, uint8_t gw_fam)
{
	struct path one = { .fam = gw_fam, .gw = *gw };
	struct pentry *e;

	if (!s->caps.addpath[p->fam]) {
		install(s, p, &one, 1);
	} else if ((e = paths_set(s, p, gw, gw_fam))) {
		install(s, p, e->p, e->n);
	}
}

static void
withdraw(struct session *s, const struct bgp_prefix *p)
{
	struct pentry *e;

	if (s->caps.addpath[p->fam] && (e = paths_del(s, p)))
		install(s, p, e->p, e->n); /* the paths left */
	else
		withdraw_key(s, p);
}

/* ---- the feed ---- */

static void
feed_complete(struct session *s, const char *why)
{
	if (s->fed)
		return;
	s->fed = true;
	uv_timer_stop(&s->stale);
	log_info("bgp %s: %s: the feed is complete; routes it no longer sends go", s->peer->c.name, why);
	owner_feed_end(s->owner);
}

static void
end_of_rib(struct session *s, uint8_t fam)
{
	s->eor[fam] = true;
	if (s->eor[BGP_V4] && s->eor[BGP_V6])
		feed_complete(s, "End-of-RIB of every family");
}

static void
on_stale(uv_timer_t *t)
{
	struct session *s = t->data;

	if (s->state == S_ESTABLISHED)
		feed_complete(s, "no End-of-RIB within its stale_time");
}

static void
established(struct session *s)
{
	struct peer *pe = s->peer;
	char name[PS_NAME_MAX + 1];
	struct owner *o;

	snprintf(name, sizeof(name), BGP_CLIENT_PREFIX "%s", pe->c.name);
	if (!(o = owner_get(name))) {
		session_end(s, &(struct bgp_error){ .code = BGP_E_CEASE, .subcode = BGP_E_CEASE_RESOURCES },
		    END_NOTIFIED, "too many client names (%d)", OWNERS_MAX);
		return;
	}
	if (o->session) {
		session_end(s, &(struct bgp_error){ .code = BGP_E_CEASE, .subcode = BGP_E_CEASE_REJECTED },
		    END_NOTIFIED, "client name %s is in use by a connected feed session", name);
		return;
	}
	s->owner = o;
	s->state = S_ESTABLISHED;
	owner_session_back(o, s, -1, -1, s->gr ? s->gr_time : 0, pe->c.persist);
	owner_set_quiet(o, true);
	owner_feed_begin(o, o->generation + 1);
	pe->sessions++;
	pe->up_since_ms = uv_now(bg.loop);
	pe->last_error[0] = '\0';
	log_info("bgp %s: established with %s, AS %u, %s; IPv4 %s, IPv6 %s%s%s", pe->c.name, s->addr,
	    pe->c.as, s->caps.ibgp ? "internal" : "external", s->caps.fam[BGP_V4] ? "yes" : "no",
	    s->caps.fam[BGP_V6] ? "yes" : "no", s->gr ? ", graceful restart" : "",
	    s->caps.addpath[BGP_V4] || s->caps.addpath[BGP_V6] ? ", ADD-PATH" : "");
	if (s->eor[BGP_V4] && s->eor[BGP_V6])
		feed_complete(s, "no family to wait for");
	else if (pe->c.stale_time)
		uv_timer_start(&s->stale, on_stale, (uint64_t)pe->c.stale_time * 1000, 0);
}

/* ---- session end ---- */

static void
on_handle_closed(uv_handle_t *h)
{
	struct session *s = h->data, **link;

	if (--s->handles)
		return;
	for (link = &bg.sessions; *link != s; link = &(*link)->next)
		;
	*link = s->next;
	paths_free(s);
	free(s->buf);
	free(s);
}

static void
close_handles(struct session *s)
{
	s->close_after_write = false;
	uv_close((uv_handle_t *)&s->tcp, on_handle_closed);
	uv_close((uv_handle_t *)&s->hold, on_handle_closed);
	uv_close((uv_handle_t *)&s->keepalive, on_handle_closed);
	uv_close((uv_handle_t *)&s->stale, on_handle_closed);
}

static void
on_close_wait(uv_timer_t *t)
{
	struct session *s = t->data;

	if (s->close_after_write)
		close_handles(s); /* the writes still queued fail (ECANCELED) and are freed */
}

static void
unbusy(struct session *s)
{
	struct session **link;

	if (!s->busy)
		return;
	for (link = &bg.busy; *link && *link != s; link = &(*link)->busy_next)
		;
	if (*link)
		*link = s->busy_next;
	s->busy = false;
}

/*
 * The session ends: the NOTIFICATION notify (if any) is sent, and the handles
 * close once it is written. An established session's routes: as how says.
 */
static void
session_end(struct session *s, const struct bgp_error *notify, enum end how, const char *fmt, ...)
{
	struct peer *pe = s->peer;
	char why[160];
	va_list ap;

	if (s->state == S_CLOSING)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (notify) {
		uint8_t m[BGP_HDR_LEN + 2 + sizeof(notify->data)];
		send_bytes(s, m, bgp_notification_build(m, notify));
	}
	if (pe && pe->s == s) {
		log_info("bgp %s: session with %s ends: %s%s", pe->c.name, s->addr, why,
		    notify ? " (NOTIFICATION sent)" : "");
		snprintf(pe->last_error, sizeof(pe->last_error), "%s", why);
		pe->s = NULL;
		pe->up_since_ms = 0;
	} else if (pe) {
		log_info("bgp %s: a second connection from %s closed: %s", pe->c.name, s->addr, why);
	}
	if (s->owner) {
		if (how != END_LOST || !s->gr)
			s->owner->stale_time = 0;
		if (how == END_WITHDRAW)
			s->owner->persist = false;
		owner_session_gone(s->owner);
		s->owner = NULL;
	}
	s->peer = NULL;
	s->state = S_CLOSING;
	s->in_update = false;
	unbusy(s);
	uv_read_stop((uv_stream_t *)&s->tcp);
	uv_timer_stop(&s->hold);
	uv_timer_stop(&s->keepalive);
	uv_timer_stop(&s->stale);
	paths_free(s);
	if (s->writes) {
		/* The NOTIFICATION goes out first, unless the peer takes nothing for a while. */
		s->close_after_write = true;
		uv_timer_start(&s->hold, on_close_wait, BGP_CLOSE_WAIT_MS, 0);
	} else {
		close_handles(s);
	}
}

/* ---- timers ---- */

static void
on_hold(uv_timer_t *t)
{
	struct session *s = t->data;

	session_end(s, &(struct bgp_error){ .code = BGP_E_HOLD }, END_NOTIFIED, "hold timer expired (%u s)",
	    s->state == S_ESTABLISHED || s->hold_time ? s->hold_time : BGP_OPEN_WAIT_S);
}

static void
on_keepalive(uv_timer_t *t)
{
	send_keepalive(t->data);
}

static void
restart_hold(struct session *s)
{
	if (s->state == S_OPENSENT || (s->state == S_OPENCONFIRM && !s->hold_time))
		uv_timer_start(&s->hold, on_hold, BGP_OPEN_WAIT_S * 1000ull, 0);
	else if (s->hold_time)
		uv_timer_start(&s->hold, on_hold, s->hold_time * 1000ull, 0);
	else
		uv_timer_stop(&s->hold);
}

/* ---- messages ---- */

static void
on_open(struct session *s, const uint8_t *body, size_t len)
{
	struct peer *pe = s->peer;
	struct bgp_open o;
	struct bgp_error e;

	if (bgp_open_parse(body, len, &o, &e) < 0) {
		session_end(s, &e, END_NOTIFIED, "bad OPEN: %s", e.why);
		return;
	}
	if (o.as != pe->c.as) {
		uint8_t as[2] = { (uint8_t)(o.my_as >> 8), (uint8_t)o.my_as };
		e = (struct bgp_error){ .code = BGP_E_OPEN, .subcode = BGP_E_OPEN_PEER_AS, .len = 2 };
		memcpy(e.data, as, 2);
		session_end(s, &e, END_NOTIFIED, "the peer says AS %u; bgp_peer says %u", o.as, pe->c.as);
		return;
	}
	if (o.as == bg.local.as && o.router_id == bg.local.router_id) {
		session_end(s, &(struct bgp_error){ .code = BGP_E_OPEN, .subcode = BGP_E_OPEN_ID }, END_NOTIFIED,
		    "the peer's router id is fibd's own");
		return;
	}
	if (pe->s != s) {
		/*
		 * A second connection: a peer that restarted (graceful restart: its new
		 * OPEN replaces the session, RFC 4724 4.2), or a collision: an
		 * established session stays, the new connection goes (RFC 4271 6.8).
		 * Decided only on a valid OPEN: a connection alone changes nothing.
		 */
		struct session *old = pe->s;
		if (old && old->state == S_ESTABLISHED && !o.gr) {
			session_end(s, &(struct bgp_error){ .code = BGP_E_CEASE, .subcode = BGP_E_CEASE_COLLISION },
			    END_NOTIFIED, "a session with the peer is established (collision)");
			return;
		}
		if (old)
			session_end(old, NULL, END_LOST, "the peer connected again with a valid OPEN: it restarted");
		pe->s = s;
	}
	s->hold_time = o.hold_time < BGP_HOLD_TIME ? o.hold_time : BGP_HOLD_TIME;
	s->caps.as4 = o.as4;
	s->caps.ibgp = o.as == bg.local.as;
	s->caps.fam[BGP_V4] = o.any_mp ? o.mp[BGP_V4] : true; /* none: IPv4 unicast (RFC 4760 8) */
	s->caps.fam[BGP_V6] = o.mp[BGP_V6];
	s->caps.ext_nh_v4 = true; /* fibd's OPEN offers it: the peer may use it */
	for (int f = 0; f < BGP_NFAM; f++) {
		s->caps.addpath[f] = s->caps.fam[f] && (o.addpath[f] & BGP_ADDPATH_SEND);
		s->eor[f] = !s->caps.fam[f];
	}
	s->max = o.ext_msg ? BGP_EXT_MSG_MAX : BGP_MSG_MAX;
	/* Graceful restart for the session's routes: the peer preserves every family it carries. */
	s->gr = o.gr;
	for (int f = 0; f < BGP_NFAM; f++)
		if (s->caps.fam[f] && !o.gr_fam[f])
			s->gr = false;
	s->gr_time = o.gr_time;
	send_keepalive(s);
	s->state = S_OPENCONFIRM;
	restart_hold(s);
	if (s->hold_time)
		uv_timer_start(&s->keepalive, on_keepalive, s->hold_time * 1000ull / 3, s->hold_time * 1000ull / 3);
}

static void
on_update(struct session *s, const uint8_t *body, size_t len)
{
	struct peer *pe = s->peer;
	struct bgp_error e;

	if (bgp_update_parse(body, len, &s->caps, &s->upd, &e) < 0) {
		session_end(s, &e, END_NOTIFIED, "bad UPDATE: %s", e.why);
		return;
	}
	pe->updates++;
	if (s->upd.withdraw) {
		pe->withdrawn++;
		/* Logged at the 1st, 2nd, 4th, 8th ... : a peer sending many is told, not echoed. */
		if (!(pe->withdrawn & (pe->withdrawn - 1)))
			log_warn("bgp %s: UPDATE taken as a withdrawal of its routes (RFC 7606; %llu so far): %s",
			    pe->c.name, (unsigned long long)pe->withdrawn, s->upd.why);
	}
	s->in_update = true;
	s->run = 0;
}

/* Apply the UPDATE being read, until done (true) or the time is up (false). */
static bool
update_step(struct session *s, uint64_t deadline)
{
	struct bgp_update *u = &s->upd;
	unsigned n = 0;

	while (s->run < u->n_withdrawn + u->n_reach) {
		bool gone = s->run < u->n_withdrawn;
		unsigned ri = s->run - u->n_withdrawn;
		struct bgp_nlri *run = gone ? &u->withdrawn[s->run] : &u->reach[ri];
		struct bgp_prefix p;
		if (!bgp_nlri_next(run, &p)) {
			s->run++;
			continue;
		}
		if (gone || u->withdraw)
			withdraw(s, &p);
		else
			announce(s, &p, &u->nh[ri], u->nh_family[ri]);
		s->peer->prefixes++;
		if ((++n & 63) == 0 && uv_hrtime() >= deadline)
			return false;
	}
	s->in_update = false;
	if (u->eor)
		end_of_rib(s, u->eor_fam);
	return true;
}

static void
fsm_error(struct session *s, uint8_t type)
{
	/* RFC 6608: unexpected message in OpenSent (1), OpenConfirm (2), Established (3). */
	session_end(s, &(struct bgp_error){ .code = BGP_E_FSM, .subcode = (uint8_t)(s->state + 1) }, END_NOTIFIED,
	    "message type %u in state %s", type, state_names[s->state]);
}

static void
message(struct session *s, uint8_t type, const uint8_t *body, size_t len)
{
	restart_hold(s);
	switch (type) {
	case BGP_OPEN:
		if (s->state != S_OPENSENT)
			fsm_error(s, type);
		else
			on_open(s, body, len);
		break;
	case BGP_KEEPALIVE:
		if (s->state == S_OPENSENT)
			fsm_error(s, type);
		else if (s->state == S_OPENCONFIRM)
			established(s);
		break;
	case BGP_UPDATE:
		if (s->state != S_ESTABLISHED)
			fsm_error(s, type);
		else
			on_update(s, body, len);
		break;
	case BGP_NOTIFICATION: {
		uint8_t code, sub;
		char text[300];
		bgp_notification_parse(body, len, &code, &sub, text, sizeof(text));
		session_end(s, NULL, END_NOTIFIED, "the peer sent a NOTIFICATION: %s", text);
		break;
	}
	case BGP_ROUTE_REFRESH:
		if (s->state != S_ESTABLISHED)
			fsm_error(s, type);
		/* else: fibd announces nothing, so it has nothing to send again */
		break;
	}
}

/* ---- reading ---- */

static void
on_decode(uv_idle_t *h)
{
	struct session *list = bg.busy;
	uint64_t t0 = health_cb_begin();
	(void)h;

	bg.busy = NULL;
	while (list) {
		struct session *s = list;
		list = s->busy_next;
		s->busy = false;
		if (s->state != S_CLOSING)
			decode(s);
	}
	if (!bg.busy) {
		uv_idle_stop(&bg.decoder);
		bg.decoder_on = false;
	}
	health_cb_end(t0, "bgp decode");
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf);

/* Input left: stop reading and go on from the idle handle. */
static void
set_busy(struct session *s)
{
	uv_read_stop((uv_stream_t *)&s->tcp);
	if (s->busy)
		return;
	s->busy = true;
	s->busy_next = bg.busy;
	bg.busy = s;
	if (!bg.decoder_on) {
		uv_idle_start(&bg.decoder, on_decode);
		bg.decoder_on = true;
	}
}

static void
decode(struct session *s)
{
	uint64_t deadline = uv_hrtime() + BGP_DECODE_NS;

	while (s->state != S_CLOSING) {
		struct bgp_error e;
		uint8_t type;
		int n;
		if (s->in_update) {
			if (!update_step(s, deadline)) {
				set_busy(s);
				return;
			}
			continue;
		}
		if (uv_hrtime() >= deadline) {
			set_busy(s);
			return;
		}
		n = bgp_frame(s->buf + s->off, s->len - s->off, s->max, &type, &e);
		if (n < 0) {
			session_end(s, &e, END_NOTIFIED, "bad message header: %s", e.why);
			return;
		}
		if (n == 0)
			break;
		s->off += (size_t)n;
		message(s, type, s->buf + s->off - (size_t)n + BGP_HDR_LEN, (size_t)n - BGP_HDR_LEN);
	}
	if (s->state == S_CLOSING)
		return;
	/* Everything whole is applied: keep the rest at the start, and read on. */
	memmove(s->buf, s->buf + s->off, s->len - s->off);
	s->len -= s->off;
	s->off = 0;
	uv_read_start((uv_stream_t *)&s->tcp, on_alloc, on_read);
}

static void
on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct session *s = h->data;
	(void)suggested;

	*buf = uv_buf_init((char *)s->buf + s->len, (unsigned)(BGP_BUF - s->len));
}

static void
on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct session *s = st->data;
	uint64_t t0;
	(void)buf;

	if (n == 0)
		return;
	if (n < 0) {
		session_end(s, NULL, END_LOST, "%s", n == UV_EOF ? "the peer closed the connection"
							   : uv_strerror((int)n));
		return;
	}
	t0 = health_cb_begin();
	s->len += (size_t)n;
	decode(s);
	health_cb_end(t0, "bgp read");
}

/* ---- connections ---- */

static struct session *
session_new(void)
{
	struct session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	uv_tcp_init(bg.loop, &s->tcp);
	uv_timer_init(bg.loop, &s->hold);
	uv_timer_init(bg.loop, &s->keepalive);
	uv_timer_init(bg.loop, &s->stale);
	s->tcp.data = s->hold.data = s->keepalive.data = s->stale.data = s;
	s->handles = 4;
	s->max = BGP_MSG_MAX;
	s->next = bg.sessions;
	bg.sessions = s;
	return s;
}

static void
on_connection(uv_stream_t *server, int status)
{
	struct sockaddr_storage ss;
	int sslen = sizeof(ss), family;
	uint8_t addr[16], open[BGP_OPEN_OUT_MAX];
	struct session *s;
	struct peer *pe;

	if (status < 0)
		return;
	if (!(s = session_new())) {
		/* Accepted and closed at once: libuv watches the listener only once it was accepted. */
		static uv_tcp_t spare;
		if (!uv_is_active((uv_handle_t *)&spare) && !uv_is_closing((uv_handle_t *)&spare) &&
		    uv_tcp_init(bg.loop, &spare) == 0) {
			if (uv_accept(server, (uv_stream_t *)&spare) == 0)
				log_warn("bgp: out of memory for a session; the connection is closed");
			uv_close((uv_handle_t *)&spare, NULL);
		}
		return;
	}
	if (uv_accept(server, (uv_stream_t *)&s->tcp) < 0 ||
	    uv_tcp_getpeername(&s->tcp, (struct sockaddr *)&ss, &sslen) < 0 ||
	    (family = sockaddr_peer(&ss, addr)) < 0) {
		s->state = S_CLOSING;
		close_handles(s);
		return;
	}
	addr_text(family, addr, s->addr);
	pe = bg.closing ? NULL : peer_by_addr(family, addr);
	if (!pe) {
		log_warn("bgp: connection from %s refused: no bgp_peer has this address", s->addr);
		s->state = S_OPENSENT; /* so that session_end sends its NOTIFICATION */
		session_end(s, &(struct bgp_error){ .code = BGP_E_CEASE, .subcode = BGP_E_CEASE_REJECTED },
		    END_NOTIFIED, "not a configured peer");
		return;
	}
	if (!(s->buf = malloc(BGP_BUF))) {
		session_end(s, &(struct bgp_error){ .code = BGP_E_CEASE, .subcode = BGP_E_CEASE_RESOURCES },
		    END_NOTIFIED, "out of memory");
		return;
	}
	s->peer = pe;
	if (!pe->s)
		pe->s = s; /* else a second connection: its OPEN decides (on_open) */
	s->state = S_OPENSENT;
	uv_tcp_nodelay(&s->tcp, 1);
	send_bytes(s, open, bgp_open_build(open, &bg.local));
	restart_hold(s);
	uv_read_start((uv_stream_t *)&s->tcp, on_alloc, on_read);
	log_debug("bgp %s: connection from %s", pe->c.name, s->addr);
}

/* ---- setup ---- */

int
bgp_bind(const struct conf *c, char *err, size_t errlen)
{
	bg.n_listen = 0;
	for (unsigned i = 0; i < c->n_bgp_listen; i++) {
		const struct conf_bgp_listen *l = &c->bgp_listen[i];
		struct sockaddr_storage ss;
		socklen_t sslen;
		char text[INET6_ADDRSTRLEN];
		int one = 1, fd, r;

		memset(&ss, 0, sizeof(ss));
		if (l->family == AF_INET) {
			struct sockaddr_in *sa = (struct sockaddr_in *)&ss;
			sa->sin_family = AF_INET;
			sa->sin_port = htons(l->port);
			memcpy(&sa->sin_addr, l->addr, 4);
			sslen = sizeof(*sa);
		} else {
			struct sockaddr_in6 *sa = (struct sockaddr_in6 *)&ss;
			sa->sin6_family = AF_INET6;
			sa->sin6_port = htons(l->port);
			memcpy(&sa->sin6_addr, l->addr, 16);
			sslen = sizeof(*sa);
		}
		addr_text(l->family, l->addr, text);
		fd = socket(l->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
		    (l->family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
		    bind(fd, (struct sockaddr *)&ss, sslen) < 0) {
			r = -errno;
			snprintf(err, errlen, "bgp_listen %s %u: %s", text, l->port, strerror(errno));
			if (fd >= 0)
				close(fd);
			return r;
		}
		bg.listen[bg.n_listen] = *l;
		bg.fds[bg.n_listen++] = fd;
	}
	return 0;
}

static struct peer *
peer_new(const struct conf_bgp_peer *c)
{
	struct peer *pe = calloc(1, sizeof(*pe));

	if (!pe)
		return NULL;
	pe->c = *c;
	set_md5(&pe->c, true);
	return pe;
}

int
bgp_init(uv_loop_t *loop, const struct conf *c)
{
	int r;

	bg.loop = loop;
	bg.local = (struct bgp_local){ .as = c->bgp_as, .router_id = c->bgp_router_id,
		.hold_time = BGP_HOLD_TIME, .gr_time = BGP_GR_TIME };
	uv_idle_init(loop, &bg.decoder);
	bg.started = true;
	for (unsigned i = 0; i < c->n_bgp_peers && bg.n_peers < CONF_BGP_PEERS_MAX; i++)
		if ((bg.peers[bg.n_peers] = peer_new(&c->bgp_peers[i])))
			bg.n_peers++;
	for (unsigned i = 0; i < bg.n_listen; i++) {
		char text[INET6_ADDRSTRLEN];
		uv_tcp_t *l = &bg.listeners[bg.n_listeners];
		addr_text(bg.listen[i].family, bg.listen[i].addr, text);
		uv_tcp_init(loop, l);
		if ((r = uv_tcp_open(l, bg.fds[i])) < 0 || (r = uv_listen((uv_stream_t *)l, 16, on_connection)) < 0) {
			log_warn("bgp: cannot listen on %s port %u: %s", text, bg.listen[i].port, uv_strerror(r));
			uv_close((uv_handle_t *)l, NULL);
			return r;
		}
		bg.n_listeners++;
		log_info("bgp: listening on %s port %u, AS %u, router id %u.%u.%u.%u, %u peers", text,
		    bg.listen[i].port, bg.local.as, bg.local.router_id >> 24, (bg.local.router_id >> 16) & 255,
		    (bg.local.router_id >> 8) & 255, bg.local.router_id & 255, bg.n_peers);
	}
	return 0;
}

/* A peer leaves (removed, or changed in what its routes are): its session and its routes go. */
static void
peer_reset(struct peer *pe, uint8_t subcode, const char *why)
{
	char name[PS_NAME_MAX + 1];
	struct owner *o;

	for (struct session *s = bg.sessions; s; s = s->next)
		if (s->peer == pe && s != pe->s)
			session_end(s, &(struct bgp_error){ .code = BGP_E_CEASE, .subcode = subcode }, END_WITHDRAW,
			    "%s", why);
	if (pe->s)
		session_end(pe->s, &(struct bgp_error){ .code = BGP_E_CEASE, .subcode = subcode }, END_WITHDRAW, "%s", why);
	snprintf(name, sizeof(name), BGP_CLIENT_PREFIX "%s", pe->c.name);
	if ((o = owner_find(name)) && !o->session)
		owner_withdraw_all(o); /* routes kept for a restart, or persisting */
}

static bool
same_routes(const struct conf_bgp_peer *a, const struct conf_bgp_peer *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, 16) && a->as == b->as &&
	    a->table == b->table && a->metric == b->metric && !strcmp(a->md5, b->md5);
}

static const struct conf_bgp_peer *
conf_peer(const struct conf *c, const char *name)
{
	for (unsigned i = 0; i < c->n_bgp_peers; i++)
		if (!strcmp(c->bgp_peers[i].name, name))
			return &c->bgp_peers[i];
	return NULL;
}

static struct peer *
peer_by_name(const char *name)
{
	for (unsigned i = 0; i < bg.n_peers; i++)
		if (!strcmp(bg.peers[i]->c.name, name))
			return bg.peers[i];
	return NULL;
}

/* persist or stale_time changed: no reset; a peer down whose routes persist no more loses them. */
static void
peer_retime(struct peer *pe, const struct conf_bgp_peer *nc)
{
	char name[PS_NAME_MAX + 1];
	struct owner *o;

	pe->c.stale_time = nc->stale_time;
	pe->c.persist = nc->persist;
	snprintf(name, sizeof(name), BGP_CLIENT_PREFIX "%s", pe->c.name);
	if (!(o = owner_find(name)))
		return;
	if (o->session) {
		if (pe->s && pe->s->owner == o)
			o->persist = nc->persist;
	} else if (o->persist && !nc->persist) {
		o->persist = false;
		if (!o->stale_until) {
			log_info("bgp %s: no longer persists; its routes are withdrawn", pe->c.name);
			owner_withdraw_all(o);
		}
	}
}

void
bgp_reconfigure(const struct conf *c)
{
	unsigned keep = 0;

	if (!bg.started)
		return;
	if (c->bgp_as != bg.local.as || c->bgp_router_id != bg.local.router_id ||
	    c->n_bgp_listen != bg.n_listen || memcmp(c->bgp_listen, bg.listen, bg.n_listen * sizeof(bg.listen[0])))
		log_warn("reload: bgp_listen, bgp_as and bgp_router_id change only with a restart");
	/*
	 * Leaving first: removed peers, and peers whose routes change, give their
	 * MD5 keys (an address may move to another line) and their slots back.
	 */
	for (unsigned i = 0; i < bg.n_peers; i++) {
		struct peer *pe = bg.peers[i];
		const struct conf_bgp_peer *nc = conf_peer(c, pe->c.name);
		pe->seen = nc && same_routes(&pe->c, nc);
		if (pe->seen) {
			bg.peers[keep++] = pe;
			continue;
		}
		set_md5(&pe->c, false);
		log_info("bgp %s: %s; its routes are withdrawn", pe->c.name,
		    nc ? "its bgp_peer line changed" : "removed");
		peer_reset(pe, nc ? BGP_E_CEASE_CONFIG : BGP_E_CEASE_DECONFIGURED,
		    nc ? "its bgp_peer line changed" : "its bgp_peer line is gone");
		free(pe);
	}
	bg.n_peers = keep;
	for (unsigned i = 0; i < c->n_bgp_peers; i++) {
		const struct conf_bgp_peer *nc = &c->bgp_peers[i];
		struct peer *pe = peer_by_name(nc->name);
		if (pe) {
			peer_retime(pe, nc);
			continue;
		}
		if (!bg.local.as || !bg.local.router_id) {
			log_warn("bgp %s: not added: bgp_as and bgp_router_id need a restart", nc->name);
			continue;
		}
		if (bg.n_peers == CONF_BGP_PEERS_MAX || !(pe = peer_new(nc))) {
			log_warn("bgp %s: not added: %s", nc->name,
			    bg.n_peers == CONF_BGP_PEERS_MAX ? "too many peers" : "out of memory");
			continue;
		}
		bg.peers[bg.n_peers++] = pe;
		log_info("bgp %s: %s", nc->name, "added");
	}
}

void
bgp_close(void)
{
	if (!bg.started)
		return;
	bg.closing = true;
	for (struct session *s = bg.sessions; s; s = s->next)
		session_end(s, &(struct bgp_error){ .code = BGP_E_CEASE, .subcode = BGP_E_CEASE_SHUTDOWN }, END_LOST,
		    "fibd stops"); /* owner_close went first: every route stays */
	for (unsigned i = 0; i < bg.n_listeners; i++)
		uv_close((uv_handle_t *)&bg.listeners[i], NULL);
	bg.n_listeners = 0;
	uv_close((uv_handle_t *)&bg.decoder, NULL);
	for (unsigned i = 0; i < bg.n_peers; i++)
		free(bg.peers[i]);
	bg.n_peers = 0;
	bg.started = false;
}

/* ---- status ---- */

unsigned
bgp_peer_count(void)
{
	return bg.n_peers;
}

int
bgp_peer_info_at(unsigned i, struct bgp_peer_info *ret)
{
	const struct peer *pe;

	if (i >= bg.n_peers)
		return -ENOENT;
	pe = bg.peers[i];
	memset(ret, 0, sizeof(*ret));
	ret->name = pe->c.name;
	ret->state = pe->s ? state_names[pe->s->state] : "idle";
	addr_text(pe->c.family, pe->c.addr, ret->address);
	ret->as = pe->c.as;
	ret->table = pe->c.table;
	ret->updates = pe->updates;
	ret->prefixes = pe->prefixes;
	ret->withdrawn = pe->withdrawn;
	ret->sessions = pe->sessions;
	ret->up_s = pe->up_since_ms ? (uv_now(bg.loop) - pe->up_since_ms) / 1000 : 0;
	ret->gr = pe->s && pe->s->gr;
	ret->addpath = pe->s && (pe->s->caps.addpath[BGP_V4] || pe->s->caps.addpath[BGP_V6]);
	snprintf(ret->last_error, sizeof(ret->last_error), "%s", pe->last_error);
	return 0;
}
