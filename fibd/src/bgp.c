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
 * distinct next hop among them (ECMP): bgp_rib.c. Listening sockets, peers,
 * reload and status: bgp_peer.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "bgp-internal.h"
#include "health.h"
#include "log.h"

const char *const bgp_state_names[] = { "open sent", "open confirm", "established", "closing" };

static void decode(struct session *s);

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
		bgp_session_end(s, NULL, END_LOST, "cannot write to the peer: %s", uv_strerror(status));
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
		bgp_session_end(s, &(struct bgp_error){ .code = BGP_E_CEASE, .subcode = BGP_E_CEASE_RESOURCES },
		    END_NOTIFIED, "too many client names (%d)", OWNERS_MAX);
		return;
	}
	if (o->session) {
		bgp_session_end(s, &(struct bgp_error){ .code = BGP_E_CEASE, .subcode = BGP_E_CEASE_REJECTED },
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
	/*
	 * fibd announces nothing, so its initial update is done at once: a peer
	 * with graceful restart is told so (RFC 4724 4.2: a receiving speaker MUST
	 * send End-of-RIB, even with no routes). A restarting peer that defers its
	 * own updates until its peers' End-of-RIB would otherwise wait its whole
	 * deferral time with fibd.
	 */
	if (s->peer_gr_cap)
		for (int f = 0; f < BGP_NFAM; f++)
			if (s->caps.fam[f]) {
				uint8_t m[BGP_EOR_MAX];
				send_bytes(s, m, bgp_eor_build(m, f));
			}
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
	bgp_paths_free(s);
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
void
bgp_session_end(struct session *s, const struct bgp_error *notify, enum end how, const char *fmt, ...)
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
	bgp_paths_free(s);
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

	bgp_session_end(s, &(struct bgp_error){ .code = BGP_E_HOLD }, END_NOTIFIED, "hold timer expired (%u s)",
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
		bgp_session_end(s, &e, END_NOTIFIED, "bad OPEN: %s", e.why);
		return;
	}
	if (o.as != pe->c.as) {
		uint8_t as[2] = { (uint8_t)(o.my_as >> 8), (uint8_t)o.my_as };
		e = (struct bgp_error){ .code = BGP_E_OPEN, .subcode = BGP_E_OPEN_PEER_AS, .len = 2 };
		memcpy(e.data, as, 2);
		bgp_session_end(s, &e, END_NOTIFIED, "the peer says AS %u; bgp_peer says %u", o.as, pe->c.as);
		return;
	}
	if (o.as == bg.local.as && o.router_id == bg.local.router_id) {
		bgp_session_end(s, &(struct bgp_error){ .code = BGP_E_OPEN, .subcode = BGP_E_OPEN_ID }, END_NOTIFIED,
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
			bgp_session_end(s, &(struct bgp_error){ .code = BGP_E_CEASE, .subcode = BGP_E_CEASE_COLLISION },
			    END_NOTIFIED, "a session with the peer is established (collision)");
			return;
		}
		if (old)
			bgp_session_end(old, NULL, END_LOST, "the peer connected again with a valid OPEN: it restarted");
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
	s->peer_gr_cap = o.gr;
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
		bgp_session_end(s, &e, END_NOTIFIED, "bad UPDATE: %s", e.why);
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
			bgp_withdraw(s, &p);
		else
			bgp_announce(s, &p, &u->nh[ri], u->nh_family[ri]);
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
	bgp_session_end(s, &(struct bgp_error){ .code = BGP_E_FSM, .subcode = (uint8_t)(s->state + 1) }, END_NOTIFIED,
	    "message type %u in state %s", type, bgp_state_names[s->state]);
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
		bgp_session_end(s, NULL, END_NOTIFIED, "the peer sent a NOTIFICATION: %s", text);
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
			bgp_session_end(s, &e, END_NOTIFIED, "bad message header: %s", e.why);
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
		bgp_session_end(s, NULL, END_LOST, "%s", n == UV_EOF ? "the peer closed the connection"
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

void
bgp_on_connection(uv_stream_t *server, int status)
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
	bgp_addr_text(family, addr, s->addr);
	pe = bg.closing ? NULL : bgp_peer_by_addr(family, addr);
	if (!pe) {
		log_warn("bgp: connection from %s refused: no bgp_peer has this address", s->addr);
		s->state = S_OPENSENT; /* so that session_end sends its NOTIFICATION */
		bgp_session_end(s, &(struct bgp_error){ .code = BGP_E_CEASE, .subcode = BGP_E_CEASE_REJECTED },
		    END_NOTIFIED, "not a configured peer");
		return;
	}
	if (!(s->buf = malloc(BGP_BUF))) {
		bgp_session_end(s, &(struct bgp_error){ .code = BGP_E_CEASE, .subcode = BGP_E_CEASE_RESOURCES },
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

