/*
 * bgp_peer: the BGP ingest's listening sockets and peers (bgp-internal.h):
 * binding before privileges go, TCP MD5 keys, reload (peers added, changed,
 * removed), shutdown, and what status reports of each peer.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bgp-internal.h"
#include "log.h"

struct bgp_state bg;

/* ---- addresses ---- */

void
bgp_addr_text(int family, const uint8_t *addr, char *text)
{
	inet_ntop(family, addr, text, INET6_ADDRSTRLEN);
}

struct peer *
bgp_peer_by_addr(int family, const uint8_t *addr)
{
	for (unsigned i = 0; i < bg.n_peers; i++)
		if (bg.peers[i]->c.family == family && !memcmp(bg.peers[i]->c.addr, addr, 16))
			return bg.peers[i];
	return NULL;
}

/* TCP MD5 signatures (RFC 2385) of a peer's connections, on the listening sockets of its family. */
void
bgp_set_md5(const struct conf_bgp_peer *p, bool on)
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
		bgp_addr_text(l->family, l->addr, text);
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
	bgp_set_md5(&pe->c, true);
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
		bgp_addr_text(bg.listen[i].family, bg.listen[i].addr, text);
		uv_tcp_init(loop, l);
		if ((r = uv_tcp_open(l, bg.fds[i])) < 0 || (r = uv_listen((uv_stream_t *)l, 16, bgp_on_connection)) < 0) {
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
			bgp_session_end(s, &(struct bgp_error){ .code = BGP_E_CEASE, .subcode = subcode }, END_WITHDRAW,
			    "%s", why);
	if (pe->s)
		bgp_session_end(pe->s, &(struct bgp_error){ .code = BGP_E_CEASE, .subcode = subcode }, END_WITHDRAW, "%s", why);
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
		bgp_set_md5(&pe->c, false);
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
		bgp_session_end(s, &(struct bgp_error){ .code = BGP_E_CEASE, .subcode = BGP_E_CEASE_SHUTDOWN }, END_LOST,
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
	ret->state = pe->s ? bgp_state_names[pe->s->state] : "idle";
	bgp_addr_text(pe->c.family, pe->c.addr, ret->address);
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

