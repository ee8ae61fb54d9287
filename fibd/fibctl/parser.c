/*
 * parser: one `ip route` line into a proto-shim route. Words are read in order
 * from a keyword table; the result is checked with ps_msg_validate so that
 * fibctl refuses exactly what fibd would, before anything is sent.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser.h"

#define WORDS_MAX 1200

__attribute__((format(printf, 3, 4))) static int
fail(char *err, size_t errlen, const char *fmt, ...);

static int
fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int
parse_u32(const char *s, uint32_t max, uint32_t *ret)
{
	char *end;
	unsigned long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || *end || v > max)
		return -1;
	*ret = (uint32_t)v;
	return 0;
}

/* An address of either family: returns PS_FAM_V4, PS_FAM_V6 or 0. */
static int
parse_addr(const char *s, union ps_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, s, a->b) == 1)
		return PS_FAM_V4;
	if (inet_pton(AF_INET6, s, a->b) == 1)
		return PS_FAM_V6;
	return 0;
}

static int
parse_prefix(const char *s, struct ps_key *k, char *err, size_t errlen)
{
	char buf[64];
	char *slash;
	uint32_t plen;
	int fam;

	if (!strcmp(s, "default"))
		s = "0.0.0.0/0";
	if (strlen(s) >= sizeof(buf))
		return fail(err, errlen, "'%s' is not a prefix", s);
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	fam = parse_addr(buf, &k->prefix);
	if (!fam)
		return fail(err, errlen, "'%s' is not a prefix", s);
	k->family = (uint8_t)fam;
	if (!slash)
		plen = fam == PS_FAM_V4 ? 32 : 128;
	else if (parse_u32(slash + 1, fam == PS_FAM_V4 ? 32 : 128, &plen) < 0)
		return fail(err, errlen, "'%s' has an invalid prefix length", s);
	k->plen = (uint8_t)plen;
	for (unsigned bit = plen; bit < 128; bit++)
		if (k->prefix.b[bit / 8] & (0x80u >> (bit % 8)))
			return fail(err, errlen, "'%s' has host bits set (invalid prefix for its length)",
			    s);
	return 0;
}

static int
parse_scope(const char *s, uint8_t *ret)
{
	static const struct {
		const char *name;
		uint8_t v;
	} names[] = { { "global", 0 }, { "universe", 0 }, { "site", 200 }, { "link", 253 },
		{ "host", 254 }, { "nowhere", 255 } };
	uint32_t v;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i].name)) {
			*ret = names[i].v;
			return 0;
		}
	if (parse_u32(s, 255, &v) < 0)
		return -1;
	*ret = (uint8_t)v;
	return 0;
}

/*
 * Nexthop words (via, dev, onlink, weight) at w[*i]; returns 1 if it took one
 * (advancing *i), 0 if the word is not a nexthop word, -EINVAL on error.
 */
static int
nexthop_word(char **w, unsigned n, unsigned *i, struct ps_nexthop *nh, char *err, size_t errlen)
{
	const char *word = w[*i];
	const char *arg = *i + 1 < n ? w[*i + 1] : NULL;
	uint32_t v;

	if (!strcmp(word, "via")) {
		if (arg && (!strcmp(arg, "inet") || !strcmp(arg, "inet6"))) {
			(*i)++;
			arg = *i + 1 < n ? w[*i + 1] : NULL;
		}
		if (!arg || !(nh->gw_family = (uint8_t)parse_addr(arg, &nh->gw)))
			return fail(err, errlen, "'via' needs an address, not '%s'", arg ? arg : "");
		*i += 2;
		return 1;
	}
	if (!strcmp(word, "dev")) {
		if (!arg || strlen(arg) >= PS_IFNAMSIZ)
			return fail(err, errlen, "'dev' needs an interface name of at most 15 bytes");
		strcpy(nh->ifname, arg);
		*i += 2;
		return 1;
	}
	if (!strcmp(word, "onlink")) {
		nh->flags |= PS_NH_ONLINK;
		*i += 1;
		return 1;
	}
	if (!strcmp(word, "weight")) {
		if (!arg || parse_u32(arg, PS_WEIGHT_MAX, &v) < 0 || v < 1)
			return fail(err, errlen, "'weight' needs 1..256, not '%s'", arg ? arg : "");
		nh->weight = (uint16_t)v;
		*i += 2;
		return 1;
	}
	return 0;
}

int
parse_route_line(const char *line, struct ps_msg *ret, char *err, size_t errlen)
{
	char buf[8192];
	char *w[WORDS_MAX];
	unsigned n = 0, i = 0;
	struct ps_msg *m = ret;
	struct ps_route *r = &ret->u.route;
	struct ps_nexthop single;
	bool have_single = false, have_multi = false;
	struct ps_fault f;
	char *save, *tok;
	uint32_t v;
	int rc;

	if (strlen(line) >= sizeof(buf))
		return fail(err, errlen, "line longer than 8191 bytes");
	strcpy(buf, line);
	if ((tok = strchr(buf, '#')))
		*tok = '\0';
	for (tok = strtok_r(buf, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == WORDS_MAX)
			return fail(err, errlen, "more than %d words", WORDS_MAX);
		w[n++] = tok;
	}
	if (n == 0)
		return 1;

	memset(r, 0, offsetof(struct ps_route, nh));
	memset(&single, 0, sizeof(single));
	single.weight = 1;
	r->type = PS_RT_UNICAST;
	if (!strcmp(w[0], "unicast"))
		i++;
	else if (!strcmp(w[0], "blackhole"))
		r->type = PS_RT_BLACKHOLE, i++;
	else if (!strcmp(w[0], "unreachable"))
		r->type = PS_RT_UNREACHABLE, i++;
	else if (!strcmp(w[0], "prohibit"))
		r->type = PS_RT_PROHIBIT, i++;
	if (i >= n)
		return fail(err, errlen, "a route needs a prefix");
	if ((rc = parse_prefix(w[i++], &r->key, err, errlen)) < 0)
		return rc;

	while (i < n) {
		const char *word = w[i];
		const char *arg = i + 1 < n ? w[i + 1] : NULL;

		if (!strcmp(word, "nexthop")) {
			struct ps_nexthop *nh;
			if (r->n_nexthops >= PS_NEXTHOPS_MAX)
				return fail(err, errlen, "more than %d nexthops", PS_NEXTHOPS_MAX);
			nh = &r->nh[r->n_nexthops++];
			memset(nh, 0, sizeof(*nh));
			nh->weight = 1;
			have_multi = true;
			i++;
			while (i < n && (rc = nexthop_word(w, n, &i, nh, err, errlen)) != 0)
				if (rc < 0)
					return rc;
			continue;
		}
		if (!have_multi && (rc = nexthop_word(w, n, &i, &single, err, errlen)) != 0) {
			if (rc < 0)
				return rc;
			have_single = true;
			continue;
		}
		if (!arg)
			return fail(err, errlen, "'%s' needs a value, or is not a keyword", word);
		if (!strcmp(word, "metric") || !strcmp(word, "priority") ||
		    !strcmp(word, "preference")) {
			if (parse_u32(arg, UINT32_MAX, &r->key.metric) < 0)
				return fail(err, errlen, "invalid metric '%s'", arg);
			r->key.has |= PS_KEY_METRIC;
		} else if (!strcmp(word, "table")) {
			if (!strcmp(arg, "main"))
				v = 254;
			else if (!strcmp(arg, "local"))
				v = 255;
			else if (parse_u32(arg, UINT32_MAX, &v) < 0 || v == 0)
				return fail(err, errlen, "invalid table '%s'", arg);
			r->key.table = v;
			r->key.has |= PS_KEY_TABLE;
		} else if (!strcmp(word, "tos") || !strcmp(word, "dsfield")) {
			if (parse_u32(arg, 255, &v) < 0)
				return fail(err, errlen, "invalid tos '%s'", arg);
			r->key.tos = (uint8_t)v;
			r->key.has |= PS_KEY_TOS;
		} else if (!strcmp(word, "src")) {
			if (parse_addr(arg, &r->prefsrc) != r->key.family)
				return fail(err, errlen, "src '%s' is not an address of the route's family",
				    arg);
			r->has |= PS_RA_PREFSRC;
		} else if (!strcmp(word, "realm") || !strcmp(word, "realms")) {
			if (parse_u32(arg, UINT32_MAX, &r->realm) < 0)
				return fail(err, errlen, "invalid realm '%s'", arg);
			r->has |= PS_RA_REALM;
		} else if (!strcmp(word, "mtu")) {
			if (parse_u32(arg, UINT32_MAX, &r->mtu) < 0)
				return fail(err, errlen, "invalid mtu '%s'", arg);
			r->has |= PS_RA_MTU;
		} else if (!strcmp(word, "scope")) {
			if (parse_scope(arg, &r->scope) < 0)
				return fail(err, errlen, "invalid scope '%s'", arg);
			r->has |= PS_RA_SCOPE;
		} else if (!strcmp(word, "proto") || !strcmp(word, "protocol")) {
			/* fibd marks routes with its own protocol */
		} else {
			return fail(err, errlen, "unknown keyword '%s'", word);
		}
		i += 2;
	}
	if (have_single && have_multi)
		return fail(err, errlen, "use either 'via/dev' or 'nexthop' words, not both");
	if (have_single) {
		r->nh[0] = single;
		r->n_nexthops = 1;
	}
	m->type = PS_ROUTE;
	if (ps_msg_validate(m, &f) < 0)
		return fail(err, errlen, "%s", f.text);
	return 0;
}
