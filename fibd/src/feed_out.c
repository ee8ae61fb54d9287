/*
 * feed_out: what a session sends (feed.c reads). Results of the owner's routes
 * go out once per loop iteration, at most FEED_STATUS_MSGS ROUTE_STATUS messages
 * a flush, and a PING's PONG only after every result before it; LEARN messages
 * go to the sessions that learn their table, and one that reads them too slowly
 * is closed. The filled buffer is written while the other fills (swap), reading
 * stops above FEED_OUT_HIGH unsent and resumes below FEED_OUT_LOW; a reply that
 * could not be encoded closes the session rather than leave its peer waiting.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feed-internal.h"
#include "health.h"
#include "log.h"
#include "nl.h"
#include "reply.h"

static void feed_on_flush(uv_check_t *h);


static void
pong_if_done(struct owner *o)
{
	struct session *s = o->session;
	struct ps_msg m;

	/* After every result: the PONG must not overtake them. */
	if (!s || !s->ping_wait || o->pending || o->sweeping || o->sq_head)
		return;
	s->ping_wait = false;
	m.type = PS_PONG;
	m.u.token = s->ping_token;
	ps_enc_msg(&s->out, &m, NULL);
}


/*
 * Results are sent once per loop iteration, after all the ACKs it read: one
 * write per session instead of one per ACK.
 */
void
session_want_flush(struct session *s)
{
	if (s->flush_pending || s->closed)
		return;
	s->flush_pending = true;
	s->flush_next = fd.flushq;
	fd.flushq = s;
	uv_check_start(&fd.flusher, feed_on_flush);
}

static void
feed_on_flush(uv_check_t *h)
{
	uint64_t t0 = health_cb_begin();
	(void)h;

	while (fd.flushq) {
		struct session *s = fd.flushq;
		fd.flushq = s->flush_next;
		s->flush_pending = false;
		session_flush(s);
	}
	uv_check_stop(&fd.flusher);
	health_cb_end(t0, "feed flush");
}

/* ---- sessions: output ---- */

static void
session_on_written(uv_write_t *req, int status)
{
	struct session *s = req->data;
	uint64_t t0 = health_cb_begin();

	s->writing = false;
	s->wbuf.len = 0;
	if (status < 0) {
		s->state = S_CLOSING;
		s->out.len = 0;
	}
	session_flush(s);
	health_cb_end(t0, "feed write");
}


/*
 * Encode pending results into the output, a batch at a time while the backlog
 * is small. A session that asked for failures only gets FAILED, WAITING and
 * REJECTED results; the others are counted, and the counts go out in the
 * message that empties the queue of results.
 */
static void
encode_status(struct session *s)
{
	struct owner *o = s->owner;
	static struct ps_msg m;
	unsigned msgs = 0;

	/* At most FEED_STATUS_MSGS messages per call: the rest goes out with the next flush. */
	for (; o && o->sq_head && s->out.len < FEED_OUT_LOW && msgs < FEED_STATUS_MSGS; msgs++) {
		unsigned n = 0, seen = 0;
		struct route *done[FEED_STATUS_BATCH];
		m.type = PS_ROUTE_STATUS;
		m.u.status.has = 0;
		while (o->sq_head && seen < FEED_STATUS_BATCH) {
			struct route *r = o->sq_head;
			struct ps_status_entry *e = &m.u.status.e[n];
			struct rtable *t = table_at(r->rt);
			o->sq_head = route_at(r->snext);
			if (!o->sq_head)
				o->sq_tail = NULL;
			done[seen++] = r;
			if (s->failures_only && !(r->flags & (R_WAITING | R_FAILED))) {
				if (r->want)
					s->installed++;
				else
					s->removed++;
				continue;
			}
			memset(e, 0, sizeof(*e));
			e->key.has = PS_KEY_TABLE | PS_KEY_METRIC | PS_KEY_TOS;
			e->key.table = t->id;
			e->key.family = t->family;
			route_prefix(r, &e->key.prefix);
			e->key.plen = route_plen(r);
			e->key.tos = r->tos;
			e->key.metric = r->metric;
			if (r->flags & R_WAITING)
				e->state = PS_RS_WAITING;
			else if (r->flags & R_FAILED)
				e->state = PS_RS_FAILED;
			else if (!r->want)
				e->state = PS_RS_REMOVED;
			else
				e->state = PS_RS_INSTALLED;
			if (e->state == PS_RS_WAITING || e->state == PS_RS_FAILED) {
				e->error = r->err;
				e->text = ps_str_from(nl_text(r->errtext));
			}
			n++;
		}
		m.u.status.n = (uint16_t)n;
		if (s->failures_only && !o->sq_head) {
			m.u.status.has = PS_STATUS_COUNTS;
			m.u.status.installed = s->installed;
			m.u.status.removed = s->removed;
		}
		if ((n || m.u.status.has) && ps_enc_msg(&s->out, &m, NULL) > 0)
			fd.st.status_sent += n;
		for (unsigned i = 0; i < seen; i++)
			owner_status_sent(done[i]);
	}
}

void
session_flush(struct session *s)
{
	uv_buf_t b;

	if (s->closed)
		return;
	if (s->state == S_FEED) {
		encode_status(s);
		pong_if_done(s->owner);
	}
	/* A streamed answer's next part, once the last one has gone to the socket. */
	if (s->stream && !s->writing && s->out.len < FEED_STREAM_LOW && ctl_stream_more(s->stream, &s->out))
		s->stream = NULL;
	if (s->out.failed && s->state != S_CLOSING) {
		/*
		 * A result, PONG or end of an answer could not be encoded: the peer
		 * would wait for it for ever. Close the session; a feed client
		 * comes back and feeds again, and its routes stay meanwhile.
		 */
		s->out.failed = false;
		session_fail(s, PS_E_INTERNAL, "", "out of memory encoding a reply");
		return;
	}
	if (!s->writing && s->out.len) {
		/* Swap: the filled buffer is written, the other one fills meanwhile. */
		struct ps_buf t = s->wbuf;
		s->wbuf = s->out;
		s->out = t;
		s->out.len = 0;
		b = uv_buf_init((char *)s->wbuf.data, (unsigned)s->wbuf.len);
		s->wreq.data = s;
		if (uv_write(&s->wreq, (uv_stream_t *)&s->pipe, &b, 1, session_on_written) == 0) {
			s->writing = true;
			s->write_since = uv_now(fd.loop);
		}
		else
			s->state = S_CLOSING;
	}
	if (s->state == S_CLOSING && !s->writing) {
		session_close(s);
		return;
	}
	/*
	 * Backpressure: no reading while input waits to be decoded, or while our
	 * output backlog is high (read again once it has drained below LOW).
	 */
	if (s->state != S_CLOSING) {
		size_t backlog = s->out.len + (s->writing ? s->wbuf.len : 0);
		if (s->reading && (s->busy || backlog > FEED_OUT_HIGH)) {
			uv_read_stop((uv_stream_t *)&s->pipe);
			s->reading = false;
		} else if (!s->reading && !s->busy && backlog < FEED_OUT_LOW) {
			uv_read_start((uv_stream_t *)&s->pipe, session_on_alloc, session_on_read);
			s->reading = true;
		}
	}
}

void
session_fail(struct session *s, int code, const char *field, const char *fmt, ...)
{
	struct ps_msg m;
	char text[PS_TEXT_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	log_warn("feed %s: %s%s%s; closing the session", s->name[0] ? s->name : "(no name)", text,
	    field && *field ? ", field " : "", field ? field : "");
	memset(&m, 0, sizeof(m));
	m.type = PS_ERROR;
	m.u.error.code = (uint16_t)code;
	snprintf(m.u.error.field, sizeof(m.u.error.field), "%s", field ? field : "");
	m.u.error.text = ps_str_from(text);
	ps_enc_msg(&s->out, &m, NULL);
	fd.st.failed++;
	if (s->reading) {
		uv_read_stop((uv_stream_t *)&s->pipe);
		s->reading = false;
	}
	s->state = S_CLOSING;
	session_flush(s);
}

void
reject(struct session *s, const struct ps_key *k, uint32_t table, uint32_t metric, int err,
    const char *text)
{
	static struct ps_msg m;
	struct ps_status_entry *e = &m.u.status.e[0];

	m.type = PS_ROUTE_STATUS;
	m.u.status.n = 1;
	memset(e, 0, sizeof(*e));
	e->key = *k;
	e->key.has = PS_KEY_TABLE | PS_KEY_METRIC | PS_KEY_TOS;
	e->key.table = table;
	e->key.metric = metric;
	e->state = PS_RS_REJECTED;
	e->error = (uint16_t)err;
	e->text = ps_str_from(text);
	ps_enc_msg(&s->out, &m, NULL);
}

/* A session that learns table/family and still reads what it is sent. */
static bool
learner(struct session *s, uint32_t table, uint8_t family)
{
	if (!s->learn || s->closed || s->table != table || !family_allowed(s, family))
		return false;
	if (s->out.len + s->wbuf.len > FEED_LEARN_OUT_MAX) {
		session_fail(s, PS_E_LIMIT, "learn", "the client reads LEARN messages too slowly "
		    "(over %u bytes unsent)", FEED_LEARN_OUT_MAX);
		return false;
	}
	return true;
}

void
feed_learn(const struct ps_route *r)
{
	struct ps_msg *m = &fd.learn_msg;
	struct ps_fault fault;

	for (struct session *s = fd.sessions; s; s = s->next) {
		if (!learner(s, r->key.table, r->key.family))
			continue;
		m->type = PS_LEARN;
		/* ps_route is large: copy only what is used. */
		memcpy(&m->u.route, r, offsetof(struct ps_route, nh) + r->n_nexthops * sizeof(r->nh[0]));
		if (ps_enc_msg(&s->out, m, &fault) < 0) {
			/* A route fibd read from the kernel but the protocol cannot carry. */
			log_warn("feed %s: a foreign route cannot go out as LEARN: %s", s->name, fault.text);
			continue;
		}
		session_want_flush(s);
	}
}

void
feed_learn_refresh(uint32_t table, uint8_t family, uint8_t phase)
{
	struct ps_msg *m = &fd.learn_msg; /* (large: not on the stack) */

	m->type = PS_LEARN_REFRESH;
	m->u.refresh.table = table;
	m->u.refresh.family = family;
	m->u.refresh.phase = phase;
	for (struct session *s = fd.sessions; s; s = s->next) {
		if (!s->refresh || !learner(s, table, family))
			continue;
		ps_enc_msg(&s->out, m, NULL);
		session_want_flush(s);
	}
}
