/*
 * feed: sessions on the Unix socket (front layer; docs/design.md): what they
 * read and the listener; what they send is feed_out.c.
 *
 * Session states: OPENING (until a valid HELLO), then FEED or CONTROL; CLOSING
 * once an ERROR is queued or the peer went away (nothing more is read; the handle
 * closes when the output is written). A session reads only while its output
 * backlog is under FEED_OUT_HIGH (backpressure), and decodes at most
 * FEED_DECODE_NS of input per callback: each message is O(prefix length) work.
 *
 * A feed session binds to the owner of its HELLO name (owner.c; one connected
 * session per name) and states routes for it; the owner tells the session
 * through its ready hook when results wait, and the session sends them once per
 * loop iteration, then the PONG of a PING once every result before it is out.
 * A control session's requests go to ctl.c; a streamed answer (dump, diff,
 * watch) is pulled from it as the socket drains.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <proto-shim/dec.h>

#include "access.h"
#include "bgp.h"
#include "ctl.h"
#include "feed-internal.h"
#include "health.h"
#include "learn.h"
#include "log.h"
#include "nl.h"
#include "owner.h"
#include "reply.h"
#include "sync.h"

struct feed_state fd;

/* ---- sessions: input ---- */

/* The key's table and metric after session defaults; IPv6 metric 0 is 1024, as the kernel has it. */
static void
resolve_key(const struct session *s, const struct ps_key *k, uint32_t *ret_table,
    uint32_t *ret_metric)
{
	*ret_table = (k->has & PS_KEY_TABLE) ? k->table : s->table;
	*ret_metric = (k->has & PS_KEY_METRIC) ? k->metric : s->metric;
	if (k->family == PS_FAM_V6 && *ret_metric == 0)
		*ret_metric = 1024;
}

int
family_allowed(const struct session *s, uint8_t family)
{
	return s->families & (family == PS_FAM_V4 ? PS_HELLO_FAM_V4 : PS_HELLO_FAM_V6);
}

static void
on_route(struct session *s, const struct ps_route *pr)
{
	uint32_t table, metric;
	char why[128];
	int err;

	resolve_key(s, &pr->key, &table, &metric);
	if (!family_allowed(s, pr->key.family)) {
		reject(s, &pr->key, table, metric, EAFNOSUPPORT, "family not in this session's HELLO");
		return;
	}
	if ((err = owner_route(s->owner, table, metric, pr, why, sizeof(why))) != 0)
		reject(s, &pr->key, table, metric, err, why);
}

static void
on_withdraw(struct session *s, const struct ps_key *k)
{
	uint32_t table, metric;

	resolve_key(s, k, &table, &metric);
	owner_withdraw(s->owner, table, metric, k);
}

/*
 * A learning session starts (+1) or ends (-1): the learners of its table, per
 * family it feeds. A new learner gets a learn dump of the table.
 */
static void
learners_change(struct session *s, int delta)
{
	static const uint8_t fams[2] = { PS_FAM_V4, PS_FAM_V6 };

	for (int i = 0; i < 2; i++) {
		struct rtable *t;
		if (!family_allowed(s, fams[i]) || !(t = table_get(s->table, fams[i], delta > 0)))
			continue;
		if (delta > 0) {
			t->learners++;
			sync_learn_table(t);
		} else if (t->learners && !--t->learners) {
			learn_forget(t);
		}
	}
}


/* The peer's credentials, read once per connection. */
static void
peer_credentials(struct session *s)
{
	uv_os_fd_t sock;
	int uid = -1, pid = -1;

	s->access = ACCESS_NONE;
	if (uv_fileno((uv_handle_t *)&s->pipe, &sock) == 0)
		s->access = access_of_peer(sock, &uid, &pid);
	s->uid = (uid_t)uid;
	s->pid = pid;
}

void
feed_wake(void *session)
{
	session_want_flush(session);
}

void
feed_set_access(const struct feed_access *a)
{
	access_set(a);
	if (fd.listening)
		chmod(fd.path, a->read_set || a->admin_set ? 0666 : 0660);
}

static void
on_hello(struct session *s, const struct ps_hello *h)
{
	struct ps_msg m;
	unsigned v = ps_version_pick(h);

	snprintf(s->name, sizeof(s->name), "%s", h->name);
	if (s->access == ACCESS_NONE || (h->role == PS_ROLE_FEED && s->access != ACCESS_ADMIN)) {
		char who[320];
		access_who_may(h->role == PS_ROLE_FEED, who, sizeof(who));
		session_fail(s, PS_E_DENIED, "", "uid %d (pid %d) may not %s: only %s",
		    s->uid == (uid_t)-1 ? -1 : (int)s->uid, (int)s->pid,
		    h->role == PS_ROLE_FEED ? "feed routes" : "use fibd", who);
		return;
	}
	if (!v) {
		session_fail(s, PS_E_VERSION, "versions", "fibd speaks protocol versions %d..%d",
		    PS_VERSION_MIN, PS_VERSION_MAX);
		return;
	}
	if (h->role == PS_ROLE_FEED && !strncmp(h->name, BGP_CLIENT_PREFIX, strlen(BGP_CLIENT_PREFIX))) {
		session_fail(s, PS_E_FIELD, "name", "client names beginning bgp: are BGP peers' (fibd.conf bgp_peer)");
		return;
	}
	if (h->role == PS_ROLE_FEED) {
		bool known = owner_find(h->name) != NULL;
		struct owner *o = owner_get(h->name);
		if (!o) {
			session_fail(s, PS_E_LIMIT, "name", "too many client names (%d)", OWNERS_MAX);
			return;
		}
		if (o->session) {
			session_fail(s, PS_E_CONFLICT, "name", "client name %s is in use by a connected session",
			    h->name);
			return;
		}
		s->owner = o;
		s->owner_known = known;
		s->state = S_FEED;
		owner_session_back(o, s, s->uid == (uid_t)-1 ? -1 : (int)s->uid, (int)s->pid,
		    (h->has & PS_HELLO_STALE) ? h->stale_time : 0,
		    (h->has & PS_HELLO_PERSIST) && h->persist);
	} else {
		s->state = S_CONTROL;
	}
	s->table = (h->has & PS_HELLO_TABLE) ? h->table : 254;
	s->families = (h->has & PS_HELLO_FAMILIES) ? h->families
						   : (PS_HELLO_FAM_V4 | PS_HELLO_FAM_V6);
	s->metric = (h->has & PS_HELLO_METRIC) ? h->metric : 0;
	s->learn = s->state == S_FEED && (h->has & PS_HELLO_LEARN) && h->learn;
	s->refresh = s->learn && (h->has & PS_HELLO_REFRESH) && h->refresh;
	s->failures_only = (h->has & PS_HELLO_RESULTS) && h->results == PS_RESULTS_FAILURES;
	if ((h->has & PS_HELLO_PROTOCOL) && h->protocol != fd.cfg->protocol)
		log_info("feed %s: asks for protocol %u; fibd marks its routes with %u", s->name,
		    h->protocol, fd.cfg->protocol);
	if (s->state == S_FEED)
		log_info("feed %s: connected, default table %u", s->name, s->table);
	else
		log_debug("ctl %s: connected", s->name);
	memset(&m, 0, sizeof(m));
	m.type = PS_WELCOME;
	m.u.welcome.version = (uint8_t)v;
	snprintf(m.u.welcome.server_id, sizeof(m.u.welcome.server_id), "%s", fd.cfg->server_id);
	m.u.welcome.boot_epoch = fd.cfg->boot_epoch;
	ps_enc_msg(&s->out, &m, NULL);
	if (s->state == S_FEED && !s->owner_known) {
		/* This fibd holds nothing of this client's (new, or fibd restarted). */
		memset(&m, 0, sizeof(m));
		m.type = PS_REFEED;
		m.u.reason = ps_str_from("fibd holds no routes of this client: send a full feed");
		ps_enc_msg(&s->out, &m, NULL);
	}
	if (s->learn)
		learners_change(s, +1);
}

static void
handle(struct session *s, const struct ps_msg *m)
{
	struct ps_msg reply;

	fd.st.msgs_in++;
	if (s->state == S_OPENING) {
		if (m->type != PS_HELLO) {
			session_fail(s, PS_E_STATE, "type", "the first message must be HELLO, not %s",
			    ps_msg_type_name(m->type));
			return;
		}
		on_hello(s, &m->u.hello);
		return;
	}
	switch (m->type) {
	case PS_PING:
		if (s->state == S_FEED &&
		    (s->owner->pending || s->owner->sweeping || s->owner->sq_head)) {
			s->ping_wait = true; /* answered once everything before it is written */
			s->ping_token = m->u.token;
			return;
		}
		reply.type = PS_PONG;
		reply.u.token = m->u.token;
		ps_enc_msg(&s->out, &reply, NULL);
		return;
	case PS_BYE:
		if (s->state == S_FEED && (m->u.bye_flags & PS_BYE_FLUSH)) {
			log_info("feed %s: goodbye, withdrawing its routes", s->name);
			owner_withdraw_all(s->owner);
			s->owner->persist = false;
			s->owner->stale_time = 0;
		}
		s->state = S_CLOSING;
		return;
	case PS_CTL_REQUEST:
		if (s->state != S_CONTROL)
			break;
		if (s->stream) {
			/* One streamed answer at a time: the next request waits for no one. */
			reply_end(&s->out, m->u.ctl_request.req, PS_E_LIMIT,
			    "a dump, diff or watch is still under way on this session");
			return;
		}
		if (s->access != ACCESS_ADMIN && ctl_changes_state(m->u.ctl_request.cmd)) {
			char who[320], text[480];
			access_who_may(true, who, sizeof(who));
			snprintf(text, sizeof(text), "%s changes fibd's state: only %s may", m->u.ctl_request.cmd,
			    who);
			log_warn("ctl: refused to uid %d (pid %d): %s", (int)s->uid, (int)s->pid, text);
			reply_end(&s->out, m->u.ctl_request.req, PS_E_DENIED, text);
			return;
		}
		s->stream = ctl_handle(&s->out, &m->u.ctl_request, s);
		return;
	case PS_ROUTE:
	case PS_WITHDRAW:
	case PS_FEED_BEGIN:
	case PS_FEED_END:
		if (s->state != S_FEED)
			break;
		if (m->type == PS_ROUTE)
			on_route(s, &m->u.route);
		else if (m->type == PS_WITHDRAW)
			on_withdraw(s, &m->u.withdraw);
		else if (m->type == PS_FEED_BEGIN) {
			if (s->owner->in_feed) {
				session_fail(s, PS_E_STATE, "generation", "FEED_BEGIN inside an open feed");
				return;
			}
			owner_feed_begin(s->owner, m->u.generation);
		} else {
			if (!s->owner->in_feed || s->owner->generation != m->u.generation) {
				session_fail(s, PS_E_STATE, "generation",
				    "FEED_END %llu does not close an open feed",
				    (unsigned long long)m->u.generation);
				return;
			}
			owner_feed_end(s->owner);
		}
		return;
	default:
		break;
	}
	session_fail(s, PS_E_STATE, "type", "%s is not allowed in a %s session",
	    ps_msg_type_name(m->type) ? ps_msg_type_name(m->type) : "?",
	    s->state == S_FEED ? "feed" : "control");
}

void
session_on_alloc(uv_handle_t *h, size_t want, uv_buf_t *buf)
{
	struct session *s = h->data;
	void *p;
	size_t len;

	(void)want;
	if (ps_dec_reserve(s->dec, 0, &p, &len) < 0) {
		*buf = uv_buf_init(NULL, 0);
		return;
	}
	*buf = uv_buf_init(p, (unsigned)len);
}

static void feed_on_decode(uv_idle_t *h);

/*
 * Decode and handle what the session sent, for at most FEED_DECODE_NS. What is
 * left marks the session busy: it stops reading and the decoder idle handle
 * goes on with it in the next loop iterations.
 */
static void
session_decode(struct session *s)
{
	uint64_t deadline = uv_hrtime() + FEED_DECODE_NS;
	const struct ps_msg *m;
	unsigned n = 0;
	int r = 0;

	while (s->state != S_CLOSING && (r = ps_dec_next(s->dec, &m)) == 1) {
		handle(s, m);
		if (++n % 64 == 0 && uv_hrtime() > deadline) {
			if (!s->busy) {
				/* At the tail, so that busy sessions take turns. */
				struct session **link = &fd.busy;
				while (*link)
					link = &(*link)->busy_next;
				s->busy = true;
				s->busy_next = NULL;
				*link = s;
				uv_idle_start(&fd.decoder, feed_on_decode);
			}
			session_flush(s);
			return;
		}
	}
	if (s->busy) {
		struct session **link;
		for (link = &fd.busy; *link != s; link = &(*link)->busy_next)
			;
		*link = s->busy_next;
		s->busy = false;
	}
	if (s->state != S_CLOSING && r < 0) {
		const struct ps_fault *f = ps_dec_fault(s->dec);
		session_fail(s, f->code, f->field, "%s", f->text);
		return;
	}
	session_flush(s);
}

static void
feed_on_decode(uv_idle_t *h)
{
	uint64_t t0 = health_cb_begin();
	struct session *s = fd.busy;
	(void)h;

	/* One session per iteration; if it stays busy it goes to the back. */
	if (s) {
		fd.busy = s->busy_next;
		s->busy = false;
		session_decode(s);
	}
	if (!fd.busy)
		uv_idle_stop(&fd.decoder);
	health_cb_end(t0, "feed decode");
}

void
session_on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct session *s = st->data;
	uint64_t t0 = health_cb_begin();

	(void)buf;
	if (n == UV_ENOBUFS) {
		session_fail(s, PS_E_INTERNAL, "", "out of memory for the read buffer");
		return;
	}
	if (n < 0) {
		if (n != UV_EOF)
			log_info("feed %s: read: %s", s->name, uv_strerror((int)n));
		if (s->busy) {
			/* Decode what is buffered first; EOF shows again when we read. */
			uv_read_stop((uv_stream_t *)&s->pipe);
			s->reading = false;
			return;
		}
		s->state = S_CLOSING;
		session_flush(s);
		return;
	}
	ps_dec_commit(s->dec, (size_t)n);
	if (!s->busy)
		session_decode(s);
	health_cb_end(t0, "feed read");
}

static void
session_on_close(uv_handle_t *h)
{
	struct session *s = h->data;

	ps_dec_free(s->dec);
	ps_buf_release(&s->out);
	ps_buf_release(&s->wbuf);
	free(s);
}

void
session_close(struct session *s)
{
	struct session **link;

	if (s->closed)
		return;
	s->closed = true;
	for (link = &fd.sessions; *link != s; link = &(*link)->next)
		;
	*link = s->next;
	if (s->busy) {
		for (link = &fd.busy; *link != s; link = &(*link)->busy_next)
			;
		*link = s->busy_next;
		s->busy = false;
	}
	fd.n_sessions--;
	s->stream = ctl_stream_free(s->stream);
	if (s->learn)
		learners_change(s, -1);
	if (s->owner)
		owner_session_gone(s->owner);
	uv_close((uv_handle_t *)&s->pipe, session_on_close);
}

static void feed_on_connect(uv_stream_t *server, int status);

static void
feed_on_spare_closed(uv_handle_t *h)
{
	(void)h;
	fd.spare_busy = false;
	if (fd.accept_owed && !fd.closing) {
		fd.accept_owed = false;
		feed_on_connect((uv_stream_t *)&fd.listener, 0);
	}
}

/*
 * No memory for a session: take the connection anyway and close it, so that
 * the peer sees the end at once and libuv goes on watching the listener (it
 * stops until a connection it handed over is accepted). The spare handle is
 * free again when its close completes; a connection that comes before then
 * is taken in the close callback.
 */
static void
refuse_connection(uv_stream_t *server)
{
	if (fd.spare_busy) {
		fd.accept_owed = true;
		return;
	}
	uv_pipe_init(fd.loop, &fd.spare, 0);
	fd.spare_busy = true;
	if (uv_accept(server, (uv_stream_t *)&fd.spare) == 0)
		fd.st.refused++;
	uv_close((uv_handle_t *)&fd.spare, feed_on_spare_closed);
}

static void
feed_on_connect(uv_stream_t *server, int status)
{
	struct session *s;

	if (status < 0)
		return;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->dec = ps_dec_new(0))) {
		free(s);
		log_warn("feed: out of memory accepting a session; closing it");
		refuse_connection(server);
		return;
	}
	uv_pipe_init(fd.loop, &s->pipe, 0);
	s->pipe.data = s;
	if (uv_accept(server, (uv_stream_t *)&s->pipe) < 0) {
		uv_close((uv_handle_t *)&s->pipe, session_on_close);
		return;
	}
	fd.st.accepted++;
	peer_credentials(s);
	s->next = fd.sessions;
	fd.sessions = s;
	fd.n_sessions++;
	if (fd.n_sessions > FEED_SESSIONS_MAX) {
		session_fail(s, PS_E_LIMIT, "", "too many sessions (%d)", FEED_SESSIONS_MAX);
		return;
	}
	uv_read_start((uv_stream_t *)&s->pipe, session_on_alloc, session_on_read);
	s->reading = true;
}

/*
 * A control session whose reader has not taken a write for the control timeout
 * is closed: a stalled dump or watch costs fibd its buffer that long, no more.
 * Feed sessions are left alone: a stalled BIRD is not to be cut off from its routes.
 */
static void
feed_on_stall_tick(uv_timer_t *t)
{
	uint64_t now = uv_now(fd.loop);
	uint64_t limit = 1000ull * (access_conf()->control_timeout_s ? access_conf()->control_timeout_s
								: FEED_CONTROL_TIMEOUT_S);
	struct session *s, *next;
	(void)t;

	for (s = fd.sessions; s; s = next) {
		next = s->next;
		if (s->state != S_CONTROL || !s->writing || now - s->write_since < limit)
			continue;
		log_warn("ctl %s: uid %d (pid %d) has read nothing for %llu s; closing its session",
		    s->name, (int)s->uid, (int)s->pid, (unsigned long long)(now - s->write_since) / 1000);
		fd.st.stalled++;
		session_close(s);
	}
}

/* ---- listening ---- */

/* Is something listening on path? Then it is in use; otherwise the file is stale. */
static bool
socket_in_use(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool used;

	if (sock < 0)
		return false;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	used = connect(sock, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(sock);
	return used;
}

int
feed_init(uv_loop_t *loop, const struct feed_config *cfg)
{
	int r;

	fd.loop = loop;
	fd.cfg = cfg;
	if (strlen(cfg->socket_path) >= sizeof(fd.path)) {
		log_warn("feed: socket path %s is longer than %zu bytes", cfg->socket_path,
		    sizeof(fd.path) - 1);
		return -ENAMETOOLONG;
	}
	snprintf(fd.path, sizeof(fd.path), "%s", cfg->socket_path);
	uv_idle_init(loop, &fd.decoder);
	uv_check_init(loop, &fd.flusher);
	uv_timer_init(loop, &fd.stall_tick);
	uv_timer_start(&fd.stall_tick, feed_on_stall_tick, 1000, 1000);
	uv_unref((uv_handle_t *)&fd.stall_tick);
	uv_pipe_init(loop, &fd.listener, 0);
	r = uv_pipe_bind(&fd.listener, fd.path);
	if (r == UV_EADDRINUSE) {
		if (socket_in_use(fd.path)) {
			log_warn("feed: socket %s is in use: is another fibd running?", fd.path);
			uv_close((uv_handle_t *)&fd.listener, NULL);
			return -EADDRINUSE;
		}
		unlink(fd.path); /* left over by a fibd that did not exit cleanly */
		r = uv_pipe_bind(&fd.listener, fd.path);
	}
	if (r == 0)
		r = uv_listen((uv_stream_t *)&fd.listener, 64, feed_on_connect);
	if (r < 0) {
		log_warn("feed: cannot listen on %s: %s", fd.path, uv_strerror(r));
		uv_close((uv_handle_t *)&fd.listener, NULL);
		return r;
	}
	fd.listening = true;
	feed_set_access(access_conf()); /* the socket's mode, for what was set before */
	log_info("feed: listening on %s", fd.path);
	return 0;
}

void
feed_close(void)
{
	fd.closing = true;
	while (fd.sessions) {
		struct session *s = fd.sessions;
		s->state = S_CLOSING;
		s->writing = false;
		session_close(s);
	}
	if (fd.listening) {
		uv_close((uv_handle_t *)&fd.listener, NULL);
		unlink(fd.path);
		fd.listening = false;
	}
	if (!uv_is_closing((uv_handle_t *)&fd.decoder))
		uv_close((uv_handle_t *)&fd.decoder, NULL);
	if (!uv_is_closing((uv_handle_t *)&fd.flusher))
		uv_close((uv_handle_t *)&fd.flusher, NULL);
	if (!uv_is_closing((uv_handle_t *)&fd.stall_tick))
		uv_close((uv_handle_t *)&fd.stall_tick, NULL);
}

void
feed_get_stats(struct session_stats *ret)
{
	*ret = fd.st;
	ret->open = fd.n_sessions;
}
