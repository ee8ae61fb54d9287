/*
 * proto-shim encoder. Validates a struct ps_msg, then writes its msgpack bytes
 * straight into the caller's ps_buf. Canonical form: map keys ascending, optional
 * fields only when present (or, for fields without a presence bit, only when not
 * at their default), integers in their smallest msgpack form. On any failure
 * the buffer's length is restored.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <proto-shim/enc.h>

#include "internal.h"

PS_EXPORT void
ps_buf_init(struct ps_buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->failed = false;
}

PS_EXPORT void
ps_buf_release(struct ps_buf *b)
{
	free(b->data);
	ps_buf_init(b);
}

PS_EXPORT void
ps_buf_consume(struct ps_buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
}

/* Room for n more bytes at the end of b: 0, or -1 when it cannot grow. */
static int
buf_grow(struct ps_buf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 256;
	uint8_t *nd;

	while (cap - b->len < n) {
		if (cap > SIZE_MAX / 2)
			return -1;
		cap *= 2;
	}
	nd = realloc(b->data, cap);
	if (!nd)
		return -1;
	b->data = nd;
	b->cap = cap;
	return 0;
}

/*
 * The writer. Every helper appends one msgpack item straight into the buffer,
 * in the smallest form the format has for it (as msgpack-c's packer, which the
 * unit tests hold it to). A failure to grow is sticky: the helpers after it do
 * nothing, and ps_enc_msg takes the message back out.
 */
struct enc {
	struct ps_buf *b;
	int failed;
};

/* Where the next n bytes go, or NULL after a failure. */
static inline uint8_t *
e_room(struct enc *e, size_t n)
{
	struct ps_buf *b = e->b;

	if (e->failed)
		return NULL;
	if (__builtin_expect(n > b->cap - b->len, 0) && buf_grow(b, n) < 0) {
		e->failed = 1;
		return NULL;
	}
	return b->data + b->len;
}

/* A one-byte tag and v in 0, 1, 2, 4 or 8 big-endian bytes (len). */
static inline void
e_tag(struct enc *e, uint8_t tag, uint64_t v, unsigned len)
{
	uint8_t *p = e_room(e, 1 + len);

	if (!p)
		return;
	p[0] = tag;
	for (unsigned i = 0; i < len; i++)
		p[1 + i] = (uint8_t)(v >> (8 * (len - 1 - i)));
	e->b->len += 1 + len;
}

static void
e_uint(struct enc *e, uint64_t v)
{
	if (v < 0x80)
		e_tag(e, (uint8_t)v, 0, 0);
	else if (v <= 0xff)
		e_tag(e, 0xcc, v, 1);
	else if (v <= 0xffff)
		e_tag(e, 0xcd, v, 2);
	else if (v <= 0xffffffff)
		e_tag(e, 0xce, v, 4);
	else
		e_tag(e, 0xcf, v, 8);
}

/* A map's or an array's header: fixmap 0x80 or fixarray 0x90, then 16 and 32 bits. */
static void
e_container(struct enc *e, uint8_t fix, uint8_t tag16, uint32_t n)
{
	if (n < 16)
		e_tag(e, fix | (uint8_t)n, 0, 0);
	else if (n <= 0xffff)
		e_tag(e, tag16, n, 2);
	else
		e_tag(e, tag16 + 1, n, 4);
}

static void
e_map(struct enc *e, unsigned n)
{
	e_container(e, 0x80, 0xde, n);
}

static void
e_array(struct enc *e, unsigned n)
{
	e_container(e, 0x90, 0xdc, n);
}

static void
e_bytes(struct enc *e, const void *p, size_t n)
{
	uint8_t *d;

	if (n && (d = e_room(e, n))) {
		memcpy(d, p, n);
		e->b->len += n;
	}
}

/*
 * A str or bin of 8, 16 or 32-bit length (tag8 and the two tags after it:
 * str8 0xd9, bin8 0xc4), then its body. A body is shorter than
 * PS_MSG_MAX_DEFAULT by the time it is written (the validator's limits), so 32
 * bits hold its length.
 */
static void
e_sized(struct enc *e, uint8_t tag8, const void *p, size_t n)
{
	if (n <= 0xff)
		e_tag(e, tag8, n, 1);
	else if (n <= 0xffff)
		e_tag(e, tag8 + 1, n, 2);
	else
		e_tag(e, tag8 + 2, n, 4);
	e_bytes(e, p, n);
}

static void
e_str(struct enc *e, const char *p, size_t n)
{
	if (n < 32) {
		e_tag(e, 0xa0 | (uint8_t)n, 0, 0);	/* fixstr */
		e_bytes(e, p, n);
	} else {
		e_sized(e, 0xd9, p, n);
	}
}

static void
e_bin(struct enc *e, const void *p, size_t n)
{
	e_sized(e, 0xc4, p, n);
}

static void
e_kv_uint(struct enc *e, unsigned key, uint64_t v)
{
	e_uint(e, key);
	e_uint(e, v);
}

static void
e_kv_str(struct enc *e, unsigned key, const char *p, size_t n)
{
	e_uint(e, key);
	e_str(e, p, n);
}

static void
e_kv_bin(struct enc *e, unsigned key, const void *p, size_t n)
{
	e_uint(e, key);
	e_bin(e, p, n);
}

static void
e_kv_bool(struct enc *e, unsigned key, int v)
{
	e_uint(e, key);
	e_tag(e, v ? 0xc3 : 0xc2, 0, 0);
}

static unsigned
key_fields(const struct ps_key *k)
{
	return 3 + !!(k->has & PS_KEY_TABLE) + !!(k->has & PS_KEY_TOS) +
	    !!(k->has & PS_KEY_METRIC);
}

/* Keys 1..6 of a route key, in ascending key order. */
static void
e_key(struct enc *e, const struct ps_key *k)
{
	if (k->has & PS_KEY_TABLE)
		e_kv_uint(e, K_RT_TABLE, k->table);
	e_kv_uint(e, K_RT_FAMILY, k->family);
	e_kv_bin(e, K_RT_PREFIX, k->prefix.b, ps_fam_len(k->family));
	e_kv_uint(e, K_RT_PLEN, k->plen);
	if (k->has & PS_KEY_TOS)
		e_kv_uint(e, K_RT_TOS, k->tos);
	if (k->has & PS_KEY_METRIC)
		e_kv_uint(e, K_RT_METRIC, k->metric);
}

static void
e_nexthop(struct enc *e, const struct ps_nexthop *nh)
{
	size_t ifl = strnlen(nh->ifname, sizeof(nh->ifname));

	e_map(e, !!nh->gw_family + !!ifl + (nh->weight != 1) + !!nh->flags);
	if (nh->gw_family)
		e_kv_bin(e, K_NH_GATEWAY, nh->gw.b, ps_fam_len(nh->gw_family));
	if (ifl)
		e_kv_str(e, K_NH_IFNAME, nh->ifname, ifl);
	if (nh->weight != 1)
		e_kv_uint(e, K_NH_WEIGHT, nh->weight);
	if (nh->flags)
		e_kv_uint(e, K_NH_FLAGS, nh->flags);
}

static void
e_route(struct enc *e, const struct ps_route *rt, int learn)
{
	unsigned n = key_fields(&rt->key) + (rt->type != PS_RT_UNICAST) + !!rt->n_nexthops +
	    !!(rt->has & PS_RA_PREFSRC) + !!(rt->has & PS_RA_REALM) +
	    !!(rt->has & PS_RA_SCOPE) + !!(rt->has & PS_RA_MTU) +
	    !!(rt->has & PS_RA_PROTOCOL) + !!learn;

	e_map(e, n);
	e_key(e, &rt->key);
	if (rt->type != PS_RT_UNICAST)
		e_kv_uint(e, K_RT_TYPE, rt->type);
	if (rt->n_nexthops) {
		e_uint(e, K_RT_NEXTHOPS);
		e_array(e, rt->n_nexthops);
		for (unsigned i = 0; i < rt->n_nexthops; i++)
			e_nexthop(e, &rt->nh[i]);
	}
	if (rt->has & PS_RA_PREFSRC)
		e_kv_bin(e, K_RT_PREFSRC, rt->prefsrc.b, ps_fam_len(rt->key.family));
	if (rt->has & PS_RA_REALM)
		e_kv_uint(e, K_RT_REALM, rt->realm);
	if (rt->has & PS_RA_SCOPE)
		e_kv_uint(e, K_RT_SCOPE, rt->scope);
	if (rt->has & PS_RA_MTU)
		e_kv_uint(e, K_RT_MTU, rt->mtu);
	if (rt->has & PS_RA_PROTOCOL)
		e_kv_uint(e, K_RT_PROTOCOL, rt->protocol);
	if (learn)
		e_kv_uint(e, K_RT_OP, rt->learn_op);
}

static void
e_hello(struct enc *e, const struct ps_hello *h)
{
	unsigned nfam = !!(h->families & PS_HELLO_FAM_V4) + !!(h->families & PS_HELLO_FAM_V6);

	e_map(e, 3 + (unsigned)__builtin_popcount(h->has));
	e_uint(e, K_HELLO_VERSIONS);
	e_array(e, h->n_versions);
	for (unsigned i = 0; i < h->n_versions; i++)
		e_uint(e, h->versions[i]);
	e_kv_uint(e, K_HELLO_ROLE, h->role);
	e_kv_str(e, K_HELLO_NAME, h->name, strnlen(h->name, sizeof(h->name)));
	if (h->has & PS_HELLO_TABLE)
		e_kv_uint(e, K_HELLO_TABLE, h->table);
	if (h->has & PS_HELLO_FAMILIES) {
		e_uint(e, K_HELLO_FAMILIES);
		e_array(e, nfam);
		if (h->families & PS_HELLO_FAM_V4)
			e_uint(e, PS_FAM_V4);
		if (h->families & PS_HELLO_FAM_V6)
			e_uint(e, PS_FAM_V6);
	}
	if (h->has & PS_HELLO_METRIC)
		e_kv_uint(e, K_HELLO_METRIC, h->metric);
	if (h->has & PS_HELLO_PROTOCOL)
		e_kv_uint(e, K_HELLO_PROTOCOL, h->protocol);
	if (h->has & PS_HELLO_STALE)
		e_kv_uint(e, K_HELLO_STALE, h->stale_time);
	if (h->has & PS_HELLO_PERSIST)
		e_kv_bool(e, K_HELLO_PERSIST, h->persist);
	if (h->has & PS_HELLO_LEARN)
		e_kv_bool(e, K_HELLO_LEARN, h->learn);
	if (h->has & PS_HELLO_RESULTS)
		e_kv_uint(e, K_HELLO_RESULTS, h->results);
	if (h->has & PS_HELLO_REFRESH)
		e_kv_bool(e, K_HELLO_REFRESH, h->refresh);
}

static void
e_status(struct enc *e, const struct ps_status *s)
{
	e_map(e, (s->has & PS_STATUS_COUNTS) ? 3 : 1);
	e_uint(e, K_STATUS_RESULTS);
	e_array(e, s->n);
	for (unsigned i = 0; i < s->n; i++) {
		const struct ps_status_entry *r = &s->e[i];
		e_map(e, key_fields(&r->key) + 1 + !!r->error + !!r->text.len);
		e_key(e, &r->key);
		e_kv_uint(e, K_ST_STATE, r->state);
		if (r->error)
			e_kv_uint(e, K_ST_ERRNO, r->error);
		if (r->text.len)
			e_kv_str(e, K_ST_TEXT, r->text.ptr, r->text.len);
	}
	if (s->has & PS_STATUS_COUNTS) {
		e_kv_uint(e, K_STATUS_INSTALLED, s->installed);
		e_kv_uint(e, K_STATUS_REMOVED, s->removed);
	}
}

/* A body of one field, or none when it is empty text. */
static void
e_single_text(struct enc *e, struct ps_str s)
{
	e_map(e, !!s.len);
	if (s.len)
		e_kv_str(e, K_SINGLE, s.ptr, s.len);
}

static void
e_body(struct enc *e, const struct ps_msg *m)
{
	switch (m->type) {
	case PS_HELLO:
		e_hello(e, &m->u.hello);
		break;
	case PS_WELCOME:
		e_map(e, 3);
		e_kv_uint(e, K_WELCOME_VERSION, m->u.welcome.version);
		e_kv_str(e, K_WELCOME_SERVER_ID, m->u.welcome.server_id,
		    strnlen(m->u.welcome.server_id, sizeof(m->u.welcome.server_id)));
		e_kv_uint(e, K_WELCOME_EPOCH, m->u.welcome.boot_epoch);
		break;
	case PS_ERROR: {
		size_t fl = strnlen(m->u.error.field, sizeof(m->u.error.field));
		e_map(e, 1 + !!fl + !!m->u.error.text.len);
		e_kv_uint(e, K_ERROR_CODE, m->u.error.code);
		if (fl)
			e_kv_str(e, K_ERROR_FIELD, m->u.error.field, fl);
		if (m->u.error.text.len)
			e_kv_str(e, K_ERROR_TEXT, m->u.error.text.ptr, m->u.error.text.len);
		break;
	}
	case PS_PING:
	case PS_PONG:
		e_map(e, 1);
		e_kv_uint(e, K_SINGLE, m->u.token);
		break;
	case PS_BYE:
		e_map(e, 1);
		e_kv_uint(e, K_SINGLE, m->u.bye_flags);
		break;
	case PS_FEED_BEGIN:
	case PS_FEED_END:
		e_map(e, 1);
		e_kv_uint(e, K_SINGLE, m->u.generation);
		break;
	case PS_ROUTE:
		e_route(e, &m->u.route, 0);
		break;
	case PS_LEARN:
		e_route(e, &m->u.route, 1);
		break;
	case PS_WITHDRAW:
		e_map(e, key_fields(&m->u.withdraw));
		e_key(e, &m->u.withdraw);
		break;
	case PS_ROUTE_STATUS:
		e_status(e, &m->u.status);
		break;
	case PS_REFEED:
		e_single_text(e, m->u.reason);
		break;
	case PS_LEARN_REFRESH:
		e_map(e, 3);
		e_kv_uint(e, K_REFRESH_TABLE, m->u.refresh.table);
		e_kv_uint(e, K_REFRESH_FAMILY, m->u.refresh.family);
		e_kv_uint(e, K_REFRESH_PHASE, m->u.refresh.phase);
		break;
	case PS_CTL_REQUEST: {
		const struct ps_ctl_request *c = &m->u.ctl_request;
		e_map(e, 2 + !!c->n_args + !!c->flags);
		e_kv_uint(e, K_CTL_REQ, c->req);
		e_kv_str(e, K_CTL_CMD, c->cmd, strnlen(c->cmd, sizeof(c->cmd)));
		if (c->n_args) {
			e_uint(e, K_CTL_ARGS);
			e_array(e, c->n_args);
			for (unsigned i = 0; i < c->n_args; i++)
				e_str(e, c->args[i].ptr, c->args[i].len);
		}
		if (c->flags)
			e_kv_uint(e, K_CTL_FLAGS, c->flags);
		break;
	}
	case PS_CTL_CHUNK:
		e_map(e, 2);
		e_kv_uint(e, K_CTL_REQ, m->u.ctl_chunk.req);
		e_kv_bin(e, K_CHUNK_DATA, m->u.ctl_chunk.data.ptr, m->u.ctl_chunk.data.len);
		break;
	case PS_CTL_END:
		e_map(e, 2 + !!m->u.ctl_end.text.len);
		e_kv_uint(e, K_CTL_REQ, m->u.ctl_end.req);
		e_kv_uint(e, K_END_CODE, m->u.ctl_end.code);
		if (m->u.ctl_end.text.len)
			e_kv_str(e, K_END_TEXT, m->u.ctl_end.text.ptr, m->u.ctl_end.text.len);
		break;
	}
}

PS_EXPORT int
ps_enc_msg(struct ps_buf *b, const struct ps_msg *m, struct ps_fault *ret_fault)
{
	size_t start = b->len;
	struct enc e = { .b = b, .failed = 0 };
	int r;

	if ((r = ps_msg_validate(m, ret_fault)) < 0)
		return r;
	e_array(&e, 2);
	e_uint(&e, m->type);
	e_body(&e, m);
	if (e.failed) {
		b->len = start;
		b->failed = true;
		return -ENOMEM;
	}
	if (b->len - start > PS_MSG_MAX_DEFAULT) {
		b->len = start;
		return -EMSGSIZE;
	}
	return (int)(b->len - start);
}
