/*
 * format: routes as text, and as the binary dump's records (see format.h).
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "table.h"

void
tprintf(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->failed)
		return;
	for (;;) {
		size_t room = t->cap - t->len, cap;
		char *np;
		va_start(ap, fmt);
		n = vsnprintf(t->p ? t->p + t->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->failed = 1;
			return;
		}
		if ((size_t)n < room) {
			t->len += (size_t)n;
			return;
		}
		cap = t->cap ? t->cap * 2 : 4096;
		while (cap - t->len <= (size_t)n)
			cap *= 2;
		if (!(np = realloc(t->p, cap))) {
			t->failed = 1;
			return;
		}
		t->p = np;
		t->cap = cap;
	}
}

void
json_str(struct text *t, const char *s)
{
	tprintf(t, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			tprintf(t, "\\%c", c);
		else if (c < 0x20)
			tprintf(t, "\\u%04x", c);
		else
			tprintf(t, "%c", c);
	}
	tprintf(t, "\"");
}

void
json_str_or_null(struct text *t, const char *s)
{
	if (s)
		json_str(t, s);
	else
		tprintf(t, "null");
}

void
put_key_json(struct text *t, uint8_t fam, uint32_t table, const union ps_addr *prefix, uint8_t plen,
    uint8_t tos, uint32_t metric)
{
	tprintf(t, "\"prefix\":\"");
	put_addr(t, fam, prefix);
	tprintf(t, "/%u\",\"table\":%u,\"family\":\"%s\",\"metric\":%u,\"tos\":%u", plen, table,
	    family_name(fam), metric, tos);
}

void
put_error(struct text *t, int err, const char *text)
{
	tprintf(t, "%s%s%s", err > 0 ? strerror(err) : "", err > 0 && text ? ": " : "", text ? text : "");
}

void
put_error_json(struct text *t, int err, const char *text)
{
	if (err > 0 || text)
		json_str(t, text ? text : strerror(err));
	else
		tprintf(t, "null");
}

void
put_addr(struct text *t, uint8_t fam, const union ps_addr *a)
{
	char buf[INET6_ADDRSTRLEN];

	inet_ntop(fam == PS_FAM_V4 ? AF_INET : AF_INET6, a->b, buf, sizeof(buf));
	tprintf(t, "%s", buf);
}

const char *
type_name(uint8_t type)
{
	switch (type) {
	case PS_RT_UNICAST: return "unicast";
	case PS_RT_BLACKHOLE: return "blackhole";
	case PS_RT_UNREACHABLE: return "unreachable";
	case PS_RT_PROHIBIT: return "prohibit";
	default: return "?";
	}
}

void
put_attrs(struct text *t, const struct rattr *a)
{
	if (a->type == PS_RT_UNICAST) {
		for (unsigned i = 0; i < a->n_nh; i++) {
			const struct rnh *h = &a->nh[i];
			if (a->n_nh > 1)
				tprintf(t, " nexthop");
			if (h->gw_family) {
				tprintf(t, " via ");
				put_addr(t, h->gw_family, &h->gw);
			}
			if (h->ifname[0])
				tprintf(t, " dev %s", h->ifname);
			if (h->flags & PS_NH_ONLINK)
				tprintf(t, " onlink");
			if (a->n_nh > 1)
				tprintf(t, " weight %u", h->weight);
		}
	}
	if (a->has & PS_RA_PREFSRC) {
		tprintf(t, " src ");
		put_addr(t, a->family, &a->prefsrc);
	}
	if (a->has & PS_RA_REALM)
		tprintf(t, " realm %u", a->realm);
	if (a->has & PS_RA_SCOPE)
		tprintf(t, " scope %u", a->scope);
	if (a->has & PS_RA_MTU)
		tprintf(t, " mtu %u", a->mtu);
}

void
put_attrs_json(struct text *t, const struct rattr *a)
{
	struct text words = { 0 };

	if (!a) {
		tprintf(t, "null");
		return;
	}
	/* The words as a JSON string (an interface name may hold a quote), without the first space. */
	put_attrs(&words, a);
	tprintf(t, "{\"type\":\"%s\",\"route\":", type_name(a->type));
	json_str(t, words.len && !words.failed ? words.p + 1 : "");
	tprintf(t, "}");
	if (words.failed)
		t->failed = 1;
	free(words.p);
}


void
put_route(struct text *t, uint8_t fam, const union ps_addr *prefix, uint8_t plen,
    const struct rattr *a, uint32_t table, uint32_t metric, uint8_t tos)
{
	if (a && a->type && a->type != PS_RT_UNICAST)
		tprintf(t, "%s ", type_name(a->type));
	put_addr(t, fam, prefix);
	tprintf(t, "/%u", plen);
	if (a && a->type)
		put_attrs(t, a);
	tprintf(t, " table %u metric %u", table, metric);
	if (tos)
		tprintf(t, " tos %u", tos);
}

/* ---- binary dump records ---- */

/*
 * Binary records (docs/PROTOCOL.md, "Binary dump"): little-endian, fixed
 * layout, version 2: the header, the records, and a trailer with their count,
 * so that a dump cut at a record boundary is told from a whole one.
 */
#define BIN_MAGIC "FIBDBIN1"
#define BIN_VERSION 2
#define BIN_HEADER_LEN 16
#define BIN_RECORD_LEN 64
#define BIN_NEXTHOP_LEN 40
#define BIN_TRAILER_LEN 16
#define BIN_TRAILER_MARK 0xff /* at offset 2, where a record has its family */

/* A record's state: ROUTE_STATUS's numbers where they mean the same, others above them. */
enum bin_state {
	BS_INSTALLED = PS_RS_INSTALLED,
	BS_FAILED = PS_RS_FAILED,
	BS_WAITING = PS_RS_WAITING,
	BS_PENDING = 16,       /* a write is queued or in flight */
	BS_NOT_INSTALLED = 17, /* wanted, not in the kernel, no write under way (held, decoupled) */
};

static uint8_t *
bin_room(struct text *t, size_t n)
{
	uint8_t *p;

	if (t->failed)
		return NULL;
	if (t->cap - t->len < n) {
		size_t cap = t->cap ? t->cap * 2 : 65536;
		char *np;
		while (cap - t->len < n)
			cap *= 2;
		if (!(np = realloc(t->p, cap))) {
			t->failed = 1;
			return NULL;
		}
		t->p = np;
		t->cap = cap;
	}
	p = (uint8_t *)t->p + t->len;
	memset(p, 0, n);
	t->len += n;
	return p;
}

static void
le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void
le32(uint8_t *p, uint32_t v)
{
	le16(p, (uint16_t)v);
	le16(p + 2, (uint16_t)(v >> 16));
}

/* The trailer: its length, the mark, and how many records came before it. */
void
put_bin_trailer(struct text *t, uint64_t records)
{
	uint8_t *p = bin_room(t, BIN_TRAILER_LEN);

	if (!p)
		return;
	le16(p, BIN_TRAILER_LEN);
	p[2] = BIN_TRAILER_MARK;
	le32(p + 8, (uint32_t)records);
	le32(p + 12, (uint32_t)(records >> 32));
}

void
put_bin_header(struct text *t)
{
	uint8_t *p = bin_room(t, BIN_HEADER_LEN);

	if (!p)
		return;
	memcpy(p, BIN_MAGIC, 8);
	le16(p + 8, BIN_VERSION);
	le16(p + 10, BIN_HEADER_LEN);
	le16(p + 12, BIN_RECORD_LEN);
	le16(p + 14, BIN_NEXTHOP_LEN);
}

void
put_bin_route(struct text *t, const struct rtable *rt, const struct route *r)
{
	const struct rattr *a = route_want(r);
	unsigned n_nh;
	size_t len;
	uint8_t *p, state;
	union ps_addr prefix;

	if (!a)
		return; /* withdrawn: the dump holds what clients want */
	n_nh = a->type == PS_RT_UNICAST ? a->n_nh : 0;
	len = BIN_RECORD_LEN + (size_t)n_nh * BIN_NEXTHOP_LEN;
	if (!(p = bin_room(t, len)))
		return;
	if (r->flags & R_FAILED)
		state = BS_FAILED;
	else if (r->flags & R_WAITING)
		state = BS_WAITING;
	else if (r->flags & (R_QUEUED | R_INFLIGHT))
		state = BS_PENDING;
	else
		state = rattr_fulfils(route_have(r), route_want(r)) ? BS_INSTALLED : BS_NOT_INSTALLED;
	route_prefix(r, &prefix);
	le16(p, (uint16_t)len);
	p[2] = rt->family;
	p[3] = route_plen(r);
	le32(p + 4, rt->id);
	le32(p + 8, r->metric);
	p[12] = r->tos;
	p[13] = a->type;
	p[14] = state;
	p[15] = a->has & (PS_RA_PREFSRC | PS_RA_REALM | PS_RA_SCOPE | PS_RA_MTU);
	memcpy(p + 16, prefix.b, 16);
	if (a->has & PS_RA_PREFSRC)
		memcpy(p + 32, a->prefsrc.b, 16);
	le32(p + 48, a->realm);
	le32(p + 52, a->mtu);
	p[56] = a->scope;
	le16(p + 58, (uint16_t)n_nh);
	le16(p + 60, r->err);
	for (unsigned i = 0; i < n_nh; i++) {
		const struct rnh *h = &a->nh[i];
		uint8_t *q = p + BIN_RECORD_LEN + i * BIN_NEXTHOP_LEN;
		if (h->gw_family)
			memcpy(q, h->gw.b, 16);
		q[16] = h->gw_family;
		q[17] = h->flags;
		le16(q + 18, h->weight);
		le32(q + 20, (uint32_t)(h->ifindex > 0 ? h->ifindex : 0));
		memcpy(q + 24, h->ifname, PS_IFNAMSIZ);
	}
}
