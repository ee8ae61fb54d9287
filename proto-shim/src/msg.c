/*
 * proto-shim messages: the rules every message obeys, their names and their
 * one-line text form.
 *
 * ps_msg_validate is the single statement of the protocol's semantic limits
 * (docs/PROTOCOL.md, "Limits"): the decoder runs it on every message it returns
 * and the encoder on every message it writes, so both ends refuse the same things
 * with the same field names.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const char *const type_names[] = {
	[PS_HELLO] = "HELLO",
	[PS_WELCOME] = "WELCOME",
	[PS_ERROR] = "ERROR",
	[PS_PING] = "PING",
	[PS_PONG] = "PONG",
	[PS_BYE] = "BYE",
	[PS_ROUTE] = "ROUTE",
	[PS_WITHDRAW] = "WITHDRAW",
	[PS_FEED_BEGIN] = "FEED_BEGIN",
	[PS_FEED_END] = "FEED_END",
	[PS_ROUTE_STATUS] = "ROUTE_STATUS",
	[PS_LEARN] = "LEARN",
	[PS_REFEED] = "REFEED",
	[PS_LEARN_REFRESH] = "LEARN_REFRESH",
	[PS_CTL_REQUEST] = "CTL_REQUEST",
	[PS_CTL_CHUNK] = "CTL_CHUNK",
	[PS_CTL_END] = "CTL_END",
};

static const char *const err_names[] = {
	[PS_E_OK] = "OK",
	[PS_E_MALFORMED] = "MALFORMED",
	[PS_E_TOO_LARGE] = "TOO_LARGE",
	[PS_E_UNKNOWN_TYPE] = "UNKNOWN_TYPE",
	[PS_E_FIELD] = "FIELD",
	[PS_E_VERSION] = "VERSION",
	[PS_E_STATE] = "STATE",
	[PS_E_CONFLICT] = "CONFLICT",
	[PS_E_DENIED] = "DENIED",
	[PS_E_LIMIT] = "LIMIT",
	[PS_E_INTERNAL] = "INTERNAL",
	[PS_E_UNKNOWN_CMD] = "UNKNOWN_CMD",
	[PS_E_ARGS] = "ARGS",
};

PS_EXPORT const char *
ps_msg_type_name(unsigned type)
{
	if (type >= sizeof(type_names) / sizeof(type_names[0]))
		return NULL;
	return type_names[type];
}

PS_EXPORT const char *
ps_err_name(unsigned code)
{
	if (code >= sizeof(err_names) / sizeof(err_names[0]))
		return NULL;
	return err_names[code];
}

int
ps_fault_set(struct ps_fault *f, int code, const char *field, const char *fmt, ...)
{
	va_list ap;

	if (f) {
		f->code = code;
		f->field = field ? field : "";
		va_start(ap, fmt);
		vsnprintf(f->text, sizeof(f->text), fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

PS_EXPORT struct ps_str
ps_str_from(const char *s)
{
	struct ps_str r = { s, s ? (uint32_t)strlen(s) : 0 };
	return r;
}

PS_EXPORT unsigned
ps_version_pick(const struct ps_hello *h)
{
	unsigned best = 0;

	for (unsigned i = 0; i < h->n_versions && i < PS_VERSIONS_MAX; i++) {
		unsigned v = h->versions[i];
		if (v >= PS_VERSION_MIN && v <= PS_VERSION_MAX && v > best)
			best = v;
	}
	return best;
}

/* A token: 1..max bytes of printable ASCII without spaces. */
static int
check_token(const char *s, size_t max, struct ps_fault *f, const char *field)
{
	size_t n = strnlen(s, max + 1);

	if (n == 0)
		return ps_fault_set(f, PS_E_FIELD, field, "%s is empty", field);
	if (n > max)
		return ps_fault_set(f, PS_E_FIELD, field, "%s is longer than %zu bytes", field, max);
	for (size_t i = 0; i < n; i++)
		if (s[i] <= 0x20 || s[i] >= 0x7f)
			return ps_fault_set(f, PS_E_FIELD, field,
			    "%s has a byte 0x%02x that is not printable ASCII", field,
			    (unsigned char)s[i]);
	return 0;
}

/* Interface names as the kernel's dev_valid_name() accepts them. */
static int
check_ifname(const char *s, struct ps_fault *f)
{
	size_t n = strnlen(s, PS_IFNAMSIZ);

	if (n >= PS_IFNAMSIZ)
		return ps_fault_set(f, PS_E_FIELD, "ifname",
		    "ifname is longer than %d bytes", PS_IFNAMSIZ - 1);
	if (!strcmp(s, ".") || !strcmp(s, ".."))
		return ps_fault_set(f, PS_E_FIELD, "ifname", "ifname \"%s\" is not allowed", s);
	for (size_t i = 0; i < n; i++)
		if (s[i] <= 0x20 || s[i] >= 0x7f || s[i] == '/' || s[i] == ':')
			return ps_fault_set(f, PS_E_FIELD, "ifname",
			    "ifname has a byte 0x%02x that an interface name cannot hold",
			    (unsigned char)s[i]);
	return 0;
}

static int
check_text(struct ps_str s, size_t max, struct ps_fault *f, const char *field)
{
	if (s.len > max)
		return ps_fault_set(f, PS_E_FIELD, field, "%s is longer than %zu bytes", field, max);
	if (s.len && !s.ptr)
		return ps_fault_set(f, PS_E_FIELD, field, "%s has no data", field);
	return 0;
}

static int
check_host_bits(const union ps_addr *a, unsigned alen, unsigned plen)
{
	unsigned byte = plen / 8;

	if (plen % 8 && byte < alen && (a->b[byte++] & (0xffu >> (plen % 8))))
		return -1;
	for (; byte < alen; byte++)
		if (a->b[byte])
			return -1;
	return 0;
}

static int
check_key(const struct ps_key *k, struct ps_fault *f)
{
	unsigned alen = ps_fam_len(k->family);

	if (!alen)
		return ps_fault_set(f, PS_E_FIELD, "family",
		    "family %u is not 4 (IPv4) or 6 (IPv6)", k->family);
	if (k->plen > alen * 8)
		return ps_fault_set(f, PS_E_FIELD, "plen",
		    "prefix length %u is over %u for IPv%u", k->plen, alen * 8, k->family);
	if (check_host_bits(&k->prefix, alen, k->plen))
		return ps_fault_set(f, PS_E_FIELD, "prefix",
		    "prefix has host bits set beyond /%u", k->plen);
	for (unsigned i = alen; i < sizeof(k->prefix); i++)
		if (k->prefix.b[i])
			return ps_fault_set(f, PS_E_FIELD, "prefix",
			    "IPv4 prefix has bytes set past its 4 bytes");
	if ((k->has & PS_KEY_TABLE) && k->table == 0)
		return ps_fault_set(f, PS_E_FIELD, "table", "table 0 is not a routing table");
	if ((k->has & PS_KEY_TOS) && k->family == PS_FAM_V6 && k->tos)
		return ps_fault_set(f, PS_E_FIELD, "tos", "tos must be 0 for IPv6 routes");
	if (k->has & ~(PS_KEY_TABLE | PS_KEY_METRIC | PS_KEY_TOS))
		return ps_fault_set(f, PS_E_FIELD, "", "unknown key presence bits 0x%x", k->has);
	return 0;
}

static int
valid_scope(unsigned s)
{
	/* RT_SCOPE_UNIVERSE, SITE, LINK, HOST, NOWHERE */
	return s == 0 || s == 200 || s == 253 || s == 254 || s == 255;
}

static int
check_nexthop(const struct ps_nexthop *nh, unsigned fam, struct ps_fault *f)
{
	int r;

	if (nh->gw_family && !ps_fam_len(nh->gw_family))
		return ps_fault_set(f, PS_E_FIELD, "gateway",
		    "gateway family %u is not 4 or 6", nh->gw_family);
	/* IPv4 routes may use an IPv6 gateway (RFC 5549, RTA_VIA); not the reverse. */
	if (fam == PS_FAM_V6 && nh->gw_family == PS_FAM_V4)
		return ps_fault_set(f, PS_E_FIELD, "gateway",
		    "IPv6 route with an IPv4 gateway");
	if (nh->gw_family == PS_FAM_V4)
		for (unsigned i = 4; i < 16; i++)
			if (nh->gw.b[i])
				return ps_fault_set(f, PS_E_FIELD, "gateway",
				    "IPv4 gateway has bytes set past its 4 bytes");
	if ((r = check_ifname(nh->ifname, f)) < 0)
		return r;
	if (!nh->gw_family && !nh->ifname[0])
		return ps_fault_set(f, PS_E_FIELD, "nexthops",
		    "a nexthop needs a gateway, an interface or both");
	if (nh->weight < 1 || nh->weight > PS_WEIGHT_MAX)
		return ps_fault_set(f, PS_E_FIELD, "weight",
		    "weight %u is outside 1..%d", nh->weight, PS_WEIGHT_MAX);
	if (nh->flags & ~PS_NH_FLAGS_ALL)
		return ps_fault_set(f, PS_E_FIELD, "flags",
		    "unknown nexthop flags 0x%x", nh->flags & ~PS_NH_FLAGS_ALL);
	if ((nh->flags & PS_NH_ONLINK) && (!nh->gw_family || !nh->ifname[0]))
		return ps_fault_set(f, PS_E_FIELD, "flags",
		    "onlink needs both a gateway and an interface");
	return 0;
}

static int
check_route(const struct ps_route *rt, int learn, struct ps_fault *f)
{
	int r;

	if ((r = check_key(&rt->key, f)) < 0)
		return r;
	switch (rt->type) {
	case PS_RT_UNICAST:
		/* A LEARN delete names the route by key; its nexthops may be omitted. */
		if (rt->n_nexthops == 0 && !(learn && rt->learn_op == PS_LEARN_DELETE))
			return ps_fault_set(f, PS_E_FIELD, "nexthops",
			    "a unicast route needs at least one nexthop");
		break;
	case PS_RT_BLACKHOLE:
	case PS_RT_UNREACHABLE:
	case PS_RT_PROHIBIT:
		if (rt->n_nexthops)
			return ps_fault_set(f, PS_E_FIELD, "nexthops",
			    "a %s route has no nexthops",
			    rt->type == PS_RT_BLACKHOLE     ? "blackhole"
			    : rt->type == PS_RT_UNREACHABLE ? "unreachable"
							    : "prohibit");
		break;
	default:
		return ps_fault_set(f, PS_E_FIELD, "type",
		    "route type %u is not unicast (1), blackhole (6), unreachable (7) or "
		    "prohibit (8)",
		    rt->type);
	}
	if (rt->n_nexthops > PS_NEXTHOPS_MAX)
		return ps_fault_set(f, PS_E_FIELD, "nexthops",
		    "%u nexthops, more than %d", rt->n_nexthops, PS_NEXTHOPS_MAX);
	for (unsigned i = 0; i < rt->n_nexthops; i++)
		if ((r = check_nexthop(&rt->nh[i], rt->key.family, f)) < 0)
			return r;
	if (rt->has & PS_RA_PREFSRC) {
		unsigned alen = ps_fam_len(rt->key.family);
		for (unsigned i = alen; i < 16; i++)
			if (rt->prefsrc.b[i])
				return ps_fault_set(f, PS_E_FIELD, "prefsrc",
				    "IPv4 prefsrc has bytes set past its 4 bytes");
	}
	if ((rt->has & PS_RA_SCOPE) && !valid_scope(rt->scope))
		return ps_fault_set(f, PS_E_FIELD, "scope",
		    "scope %u is not universe (0), site (200), link (253), host (254) or "
		    "nowhere (255)",
		    rt->scope);
	if ((rt->has & PS_RA_MTU) && (rt->mtu < 68 || rt->mtu > 65535))
		return ps_fault_set(f, PS_E_FIELD, "mtu", "mtu %u is outside 68..65535", rt->mtu);
	if (learn) {
		if (rt->learn_op != PS_LEARN_ADD && rt->learn_op != PS_LEARN_DELETE)
			return ps_fault_set(f, PS_E_FIELD, "op",
			    "learn op %u is not add (1) or delete (2)", rt->learn_op);
	} else {
		if (rt->learn_op || (rt->has & PS_RA_PROTOCOL))
			return ps_fault_set(f, PS_E_FIELD, rt->learn_op ? "op" : "protocol",
			    "op and protocol belong to LEARN, not ROUTE");
	}
	if (rt->has & ~(PS_RA_PREFSRC | PS_RA_REALM | PS_RA_SCOPE | PS_RA_MTU | PS_RA_PROTOCOL))
		return ps_fault_set(f, PS_E_FIELD, "", "unknown route presence bits 0x%x", rt->has);
	return 0;
}

static int
check_hello(const struct ps_hello *h, struct ps_fault *f)
{
	int r;

	if (h->n_versions < 1 || h->n_versions > PS_VERSIONS_MAX)
		return ps_fault_set(f, PS_E_FIELD, "versions",
		    "%u versions offered; 1..%d are allowed", h->n_versions, PS_VERSIONS_MAX);
	for (unsigned i = 0; i < h->n_versions; i++)
		if (h->versions[i] == 0)
			return ps_fault_set(f, PS_E_FIELD, "versions", "version 0 does not exist");
	if (h->role != PS_ROLE_FEED && h->role != PS_ROLE_CONTROL)
		return ps_fault_set(f, PS_E_FIELD, "role",
		    "role %u is not feed (1) or control (2)", h->role);
	if ((r = check_token(h->name, PS_NAME_MAX, f, "name")) < 0)
		return r;
	if ((h->has & PS_HELLO_TABLE) && h->table == 0)
		return ps_fault_set(f, PS_E_FIELD, "table", "table 0 is not a routing table");
	if ((h->has & PS_HELLO_FAMILIES) &&
	    (h->families == 0 || (h->families & ~(PS_HELLO_FAM_V4 | PS_HELLO_FAM_V6))))
		return ps_fault_set(f, PS_E_FIELD, "families",
		    "families must be a non-empty set of 4 and 6");
	if ((h->has & PS_HELLO_PROTOCOL) && h->protocol == 0)
		return ps_fault_set(f, PS_E_FIELD, "protocol",
		    "protocol 0 (unspec) cannot mark routes");
	if ((h->has & PS_HELLO_STALE) && h->stale_time > PS_STALE_TIME_MAX)
		return ps_fault_set(f, PS_E_FIELD, "stale_time",
		    "stale time %u s is over %d s", h->stale_time, PS_STALE_TIME_MAX);
	if (h->persist > 1 || h->learn > 1 || h->refresh > 1)
		return ps_fault_set(f, PS_E_FIELD,
		    h->persist > 1 ? "persist" : h->learn > 1 ? "learn" : "refresh",
		    "flags are 0 or 1");
	if (h->refresh && !h->learn)
		return ps_fault_set(f, PS_E_FIELD, "refresh",
		    "refresh frames learn dumps: it needs learn");
	if (h->results > PS_RESULTS_FAILURES)
		return ps_fault_set(f, PS_E_FIELD, "results",
		    "results %u is not all (0) or failures (1)", h->results);
	if (h->has & ~0x1ffu)
		return ps_fault_set(f, PS_E_FIELD, "", "unknown hello presence bits 0x%x", h->has);
	return 0;
}

static int
check_cmd(const char *s, struct ps_fault *f)
{
	size_t n = strnlen(s, PS_CTL_CMD_MAX + 1);

	if (n == 0 || n > PS_CTL_CMD_MAX)
		return ps_fault_set(f, PS_E_FIELD, "cmd", "command must be 1..%d bytes",
		    PS_CTL_CMD_MAX);
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return ps_fault_set(f, PS_E_FIELD, "cmd",
			    "command may hold only a-z, 0-9 and '-'");
	return 0;
}

PS_EXPORT int
ps_route_validate(const struct ps_route *rt, int learn, struct ps_fault *ret_fault)
{
	return check_route(rt, learn, ret_fault);
}

PS_EXPORT int
ps_msg_validate(const struct ps_msg *m, struct ps_fault *ret_fault)
{
	struct ps_fault *f = ret_fault;
	int r;

	switch (m->type) {
	case PS_HELLO:
		return check_hello(&m->u.hello, f);
	case PS_WELCOME:
		if (m->u.welcome.version < 1)
			return ps_fault_set(f, PS_E_FIELD, "version", "version 0 does not exist");
		return check_token(m->u.welcome.server_id, PS_NAME_MAX, f, "server_id");
	case PS_ERROR:
		if (m->u.error.code < 1 || m->u.error.code > PS_E_LAST)
			return ps_fault_set(f, PS_E_FIELD, "code",
			    "error code %u is not 1..%d", m->u.error.code, PS_E_LAST);
		if (m->u.error.field[0] &&
		    (r = check_token(m->u.error.field, PS_FIELD_MAX, f, "field")) < 0)
			return r;
		return check_text(m->u.error.text, PS_TEXT_MAX, f, "text");
	case PS_PING:
	case PS_PONG:
	case PS_FEED_BEGIN:
	case PS_FEED_END:
		return 0;
	case PS_BYE:
		if (m->u.bye_flags & ~PS_BYE_FLUSH)
			return ps_fault_set(f, PS_E_FIELD, "flags", "unknown bye flags 0x%x",
			    m->u.bye_flags & ~PS_BYE_FLUSH);
		return 0;
	case PS_ROUTE:
		return check_route(&m->u.route, 0, f);
	case PS_LEARN:
		return check_route(&m->u.route, 1, f);
	case PS_WITHDRAW:
		return check_key(&m->u.withdraw, f);
	case PS_ROUTE_STATUS:
		if (m->u.status.has & ~PS_STATUS_COUNTS)
			return ps_fault_set(f, PS_E_FIELD, "", "unknown status presence bits 0x%x",
			    m->u.status.has);
		if (m->u.status.n > PS_STATUS_MAX ||
		    (m->u.status.n < 1 && !(m->u.status.has & PS_STATUS_COUNTS)))
			return ps_fault_set(f, PS_E_FIELD, "results",
			    "%u results; 1..%d are allowed (0 with counts)", m->u.status.n,
			    PS_STATUS_MAX);
		for (unsigned i = 0; i < m->u.status.n; i++) {
			const struct ps_status_entry *e = &m->u.status.e[i];
			if ((r = check_key(&e->key, f)) < 0)
				return r;
			if ((e->key.has & (PS_KEY_TABLE | PS_KEY_METRIC | PS_KEY_TOS)) !=
			    (PS_KEY_TABLE | PS_KEY_METRIC | PS_KEY_TOS))
				return ps_fault_set(f, PS_E_FIELD, "table",
				    "a result names table, metric and tos");
			if (e->state < PS_RS_INSTALLED || e->state > PS_RS_REJECTED)
				return ps_fault_set(f, PS_E_FIELD, "state",
				    "result state %u is not 1..%d", e->state, PS_RS_REJECTED);
			if (e->error > 4095)
				return ps_fault_set(f, PS_E_FIELD, "errno",
				    "errno %u is over 4095", e->error);
			if ((r = check_text(e->text, PS_TEXT_MAX, f, "text")) < 0)
				return r;
		}
		return 0;
	case PS_REFEED:
		return check_text(m->u.reason, PS_TEXT_MAX, f, "reason");
	case PS_LEARN_REFRESH:
		if (m->u.refresh.table == 0)
			return ps_fault_set(f, PS_E_FIELD, "table", "table 0 is not a routing table");
		if (!ps_fam_len(m->u.refresh.family))
			return ps_fault_set(f, PS_E_FIELD, "family",
			    "family %u is not 4 or 6", m->u.refresh.family);
		if (m->u.refresh.phase != PS_REFRESH_BEGIN && m->u.refresh.phase != PS_REFRESH_END)
			return ps_fault_set(f, PS_E_FIELD, "phase",
			    "phase %u is not begin (1) or end (2)", m->u.refresh.phase);
		return 0;
	case PS_CTL_REQUEST:
		if ((r = check_cmd(m->u.ctl_request.cmd, f)) < 0)
			return r;
		if (m->u.ctl_request.n_args > PS_CTL_ARGS_MAX)
			return ps_fault_set(f, PS_E_FIELD, "args",
			    "%u arguments; at most %d are allowed", m->u.ctl_request.n_args,
			    PS_CTL_ARGS_MAX);
		for (unsigned i = 0; i < m->u.ctl_request.n_args; i++)
			if ((r = check_text(m->u.ctl_request.args[i], PS_CTL_ARG_MAX, f,
				 "args")) < 0)
				return r;
		if (m->u.ctl_request.flags & ~PS_CTL_JSON)
			return ps_fault_set(f, PS_E_FIELD, "flags",
			    "unknown request flags 0x%x", m->u.ctl_request.flags & ~PS_CTL_JSON);
		return 0;
	case PS_CTL_CHUNK:
		return check_text(m->u.ctl_chunk.data, PS_CHUNK_MAX, f, "data");
	case PS_CTL_END:
		if (m->u.ctl_end.code > PS_E_LAST)
			return ps_fault_set(f, PS_E_FIELD, "code",
			    "error code %u is not 0..%d", m->u.ctl_end.code, PS_E_LAST);
		return check_text(m->u.ctl_end.text, PS_TEXT_MAX, f, "text");
	default:
		ps_fault_set(f, PS_E_UNKNOWN_TYPE, "type", "message type %u is not known",
		    m->type);
		return -EINVAL;
	}
}

/*
 * Text form. A small appender that keeps counting past the end of the buffer so
 * that ps_msg_format can report the length the whole text needs.
 */
struct out {
	char *buf;
	size_t len;
	size_t pos;
};

__attribute__((format(printf, 2, 3))) static void
out_printf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	size_t room = o->pos < o->len ? o->len - o->pos : 0;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? o->buf + o->pos : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->pos += (size_t)n;
}

static void
out_addr(struct out *o, unsigned fam, const union ps_addr *a)
{
	char s[INET6_ADDRSTRLEN];

	if (!inet_ntop(fam == PS_FAM_V4 ? AF_INET : AF_INET6, a->b, s, sizeof(s)))
		snprintf(s, sizeof(s), "?");
	out_printf(o, "%s", s);
}

/* A quoted string with anything outside printable ASCII, '"' and '\' escaped as \xNN. */
static void
out_quoted(struct out *o, const char *p, size_t n)
{
	out_printf(o, "\"");
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			out_printf(o, "\\x%02x", c);
		else
			out_printf(o, "%c", c);
	}
	out_printf(o, "\"");
}

static void
out_key(struct out *o, const struct ps_key *k)
{
	if (k->has & PS_KEY_TABLE)
		out_printf(o, " table %u", k->table);
	out_printf(o, " ");
	out_addr(o, k->family, &k->prefix);
	out_printf(o, "/%u", k->plen);
	if (k->has & PS_KEY_TOS)
		out_printf(o, " tos %u", k->tos);
	if (k->has & PS_KEY_METRIC)
		out_printf(o, " metric %u", k->metric);
}

static const char *
rtype_name(unsigned t)
{
	switch (t) {
	case PS_RT_UNICAST:
		return "unicast";
	case PS_RT_BLACKHOLE:
		return "blackhole";
	case PS_RT_UNREACHABLE:
		return "unreachable";
	case PS_RT_PROHIBIT:
		return "prohibit";
	}
	return "?";
}

static void
out_route(struct out *o, const struct ps_route *rt, int learn)
{
	if (learn)
		out_printf(o, " %s protocol %u",
		    rt->learn_op == PS_LEARN_ADD ? "add" : "delete", rt->protocol);
	out_printf(o, " %s", rtype_name(rt->type));
	out_key(o, &rt->key);
	for (unsigned i = 0; i < rt->n_nexthops && i < PS_NEXTHOPS_MAX; i++) {
		const struct ps_nexthop *nh = &rt->nh[i];
		out_printf(o, " nexthop");
		if (nh->gw_family) {
			out_printf(o, " via ");
			if (nh->gw_family != rt->key.family)
				out_printf(o, "inet%s ", nh->gw_family == PS_FAM_V6 ? "6" : "");
			out_addr(o, nh->gw_family, &nh->gw);
		}
		if (nh->ifname[0])
			out_printf(o, " dev %s", nh->ifname);
		out_printf(o, " weight %u", nh->weight);
		if (nh->flags & PS_NH_ONLINK)
			out_printf(o, " onlink");
	}
	if (rt->has & PS_RA_PREFSRC) {
		out_printf(o, " src ");
		out_addr(o, rt->key.family, &rt->prefsrc);
	}
	if (rt->has & PS_RA_REALM)
		out_printf(o, " realm %u", rt->realm);
	if (rt->has & PS_RA_SCOPE)
		out_printf(o, " scope %u", rt->scope);
	if (rt->has & PS_RA_MTU)
		out_printf(o, " mtu %u", rt->mtu);
}

static void
out_hello(struct out *o, const struct ps_hello *h)
{
	out_printf(o, " versions ");
	for (unsigned i = 0; i < h->n_versions && i < PS_VERSIONS_MAX; i++)
		out_printf(o, "%s%u", i ? "," : "", h->versions[i]);
	out_printf(o, " role %s name ", h->role == PS_ROLE_FEED ? "feed" : "control");
	out_quoted(o, h->name, strnlen(h->name, sizeof(h->name)));
	if (h->has & PS_HELLO_TABLE)
		out_printf(o, " table %u", h->table);
	if (h->has & PS_HELLO_FAMILIES)
		out_printf(o, " families %s%s%s", (h->families & PS_HELLO_FAM_V4) ? "4" : "",
		    h->families == (PS_HELLO_FAM_V4 | PS_HELLO_FAM_V6) ? "," : "",
		    (h->families & PS_HELLO_FAM_V6) ? "6" : "");
	if (h->has & PS_HELLO_METRIC)
		out_printf(o, " metric %u", h->metric);
	if (h->has & PS_HELLO_PROTOCOL)
		out_printf(o, " protocol %u", h->protocol);
	if (h->has & PS_HELLO_STALE)
		out_printf(o, " stale %u", h->stale_time);
	if (h->has & PS_HELLO_PERSIST)
		out_printf(o, " persist %u", h->persist);
	if (h->has & PS_HELLO_LEARN)
		out_printf(o, " learn %u", h->learn);
	if (h->has & PS_HELLO_RESULTS)
		out_printf(o, " results %u", h->results);
	if (h->has & PS_HELLO_REFRESH)
		out_printf(o, " refresh %u", h->refresh);
}

PS_EXPORT size_t
ps_msg_format(const struct ps_msg *m, char *buf, size_t len)
{
	struct out o = { buf, len, 0 };
	const char *name = ps_msg_type_name(m->type);

	if (len)
		buf[0] = '\0';
	if (name)
		out_printf(&o, "%s", name);
	else
		out_printf(&o, "TYPE_%u", m->type);

	switch (m->type) {
	case PS_HELLO:
		out_hello(&o, &m->u.hello);
		break;
	case PS_WELCOME:
		out_printf(&o, " version %u server ", m->u.welcome.version);
		out_quoted(&o, m->u.welcome.server_id,
		    strnlen(m->u.welcome.server_id, sizeof(m->u.welcome.server_id)));
		out_printf(&o, " epoch %llu", (unsigned long long)m->u.welcome.boot_epoch);
		break;
	case PS_ERROR:
		out_printf(&o, " code %s", ps_err_name(m->u.error.code) ?: "?");
		if (m->u.error.field[0])
			out_printf(&o, " field %s", m->u.error.field);
		out_printf(&o, " text ");
		out_quoted(&o, m->u.error.text.ptr, m->u.error.text.len);
		break;
	case PS_PING:
	case PS_PONG:
		out_printf(&o, " token %llu", (unsigned long long)m->u.token);
		break;
	case PS_BYE:
		out_printf(&o, " flags 0x%x", m->u.bye_flags);
		break;
	case PS_ROUTE:
		out_route(&o, &m->u.route, 0);
		break;
	case PS_LEARN:
		out_route(&o, &m->u.route, 1);
		break;
	case PS_WITHDRAW:
		out_key(&o, &m->u.withdraw);
		break;
	case PS_FEED_BEGIN:
	case PS_FEED_END:
		out_printf(&o, " generation %llu", (unsigned long long)m->u.generation);
		break;
	case PS_ROUTE_STATUS:
		for (unsigned i = 0; i < m->u.status.n && i < PS_STATUS_MAX; i++) {
			const struct ps_status_entry *e = &m->u.status.e[i];
			out_printf(&o, " [");
			out_key(&o, &e->key);
			out_printf(&o, " state %u errno %u text ", e->state, e->error);
			out_quoted(&o, e->text.ptr, e->text.len);
			out_printf(&o, " ]");
		}
		if (m->u.status.has & PS_STATUS_COUNTS)
			out_printf(&o, " installed %llu removed %llu",
			    (unsigned long long)m->u.status.installed,
			    (unsigned long long)m->u.status.removed);
		break;
	case PS_REFEED:
		out_printf(&o, " reason ");
		out_quoted(&o, m->u.reason.ptr, m->u.reason.len);
		break;
	case PS_LEARN_REFRESH:
		out_printf(&o, " table %u family %u phase %s", m->u.refresh.table,
		    m->u.refresh.family,
		    m->u.refresh.phase == PS_REFRESH_BEGIN ? "begin"
		    : m->u.refresh.phase == PS_REFRESH_END ? "end" : "?");
		break;
	case PS_CTL_REQUEST:
		out_printf(&o, " req %u cmd %s flags 0x%x", m->u.ctl_request.req,
		    m->u.ctl_request.cmd, m->u.ctl_request.flags);
		for (unsigned i = 0; i < m->u.ctl_request.n_args && i < PS_CTL_ARGS_MAX; i++) {
			out_printf(&o, " ");
			out_quoted(&o, m->u.ctl_request.args[i].ptr, m->u.ctl_request.args[i].len);
		}
		break;
	case PS_CTL_CHUNK:
		out_printf(&o, " req %u data ", m->u.ctl_chunk.req);
		out_quoted(&o, m->u.ctl_chunk.data.ptr, m->u.ctl_chunk.data.len);
		break;
	case PS_CTL_END:
		out_printf(&o, " req %u code %s text ", m->u.ctl_end.req,
		    ps_err_name(m->u.ctl_end.code) ?: "?");
		out_quoted(&o, m->u.ctl_end.text.ptr, m->u.ctl_end.text.len);
		break;
	}
	return o.pos;
}
