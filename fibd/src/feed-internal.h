/*
 * feed-internal.h: the sessions' state and helpers, shared by feed.c (input:
 * reading, decoding, HELLO and the messages of a session; the listener) and
 * feed_out.c (output: results, PONGs, LEARNs, errors, writing with
 * backpressure). Nothing else includes it.
 */
#ifndef FIBD_FEED_INTERNAL_H
#define FIBD_FEED_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include <proto-shim/dec.h>
#include <proto-shim/enc.h>

#include "access.h"
#include "ctl.h"
#include "feed.h"
#include "owner.h"
#include "status.h"

enum sstate { S_OPENING, S_FEED, S_CONTROL, S_CLOSING };

struct session {
	uv_pipe_t pipe;
	uv_write_t wreq;
	enum sstate state;
	bool reading;
	bool writing;
	bool closed;
	struct ps_dec *dec;
	struct ps_buf out;  /* being filled */
	struct ps_buf wbuf; /* being written */
	struct owner *owner;
	char name[PS_NAME_MAX + 1];
	/* HELLO settings */
	uint32_t table;
	uint8_t families;
	uint32_t metric;
	bool learn;       /* LEARN messages for foreign routes in its table */
	bool refresh;     /* LEARN_REFRESH messages frame its learn dumps */
	bool failures_only; /* HELLO results = failures: INSTALLED and REMOVED are counted */
	uint64_t installed, removed; /* so counted this session */
	struct ctl_stream *stream; /* a control answer still being produced (dump) */
	bool ping_wait;
	uint64_t ping_token;
	bool owner_known; /* fibd knew the client name before this session */
	enum access access; /* what the peer's credentials allow */
	uid_t uid;          /* the peer's, from SO_PEERCRED */
	pid_t pid;
	uint64_t write_since; /* uv_now() ms when the write under way began */
	bool busy; /* input left undecoded when the decode budget ran out */
	struct session *busy_next;
	bool flush_pending; /* on the list flushed once per loop iteration */
	struct session *flush_next;
	struct session *next;
};

struct feed_state {
	struct ps_msg learn_msg; /* large: one, reused */
	uv_loop_t *loop;
	uv_pipe_t listener;
	bool listening;
	char path[108];
	const struct feed_config *cfg;
	struct session *sessions;
	unsigned n_sessions;
	struct session *busy; /* sessions with input to decode */
	uv_idle_t decoder;
	struct session *flushq; /* sessions with results to send */
	uv_check_t flusher;
	bool closing;           /* fibd stops: sessions go, every route stays */
	struct session_stats st;
	uv_timer_t stall_tick;  /* closes control sessions whose reader stalled */
	uv_pipe_t spare;  /* takes a connection fibd has no memory for, to close it */
	bool spare_busy;  /* its close has not completed */
	bool accept_owed; /* a connection waits for the spare */
};

extern struct feed_state fd;

/* feed.c */
void session_close(struct session *s);
void session_on_alloc(uv_handle_t *h, size_t want, uv_buf_t *buf);
void session_on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf);
int family_allowed(const struct session *s, uint8_t family);

/* feed_out.c */
void session_want_flush(struct session *s);
void session_flush(struct session *s);
void session_fail(struct session *s, int code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void reject(struct session *s, const struct ps_key *k, uint32_t table, uint32_t metric, int err,
    const char *text);

#endif
