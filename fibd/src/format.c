/*
 * format: routes as text (see format.h).
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
