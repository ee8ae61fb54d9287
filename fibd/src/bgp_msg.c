/*
 * bgp_msg: BGP-4 messages, read and built (bgp_msg.h). Section numbers are
 * RFC 4271's unless another RFC is named.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bgp_msg.h"

/* ---- bytes ---- */

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint8_t *
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return p + 2;
}

static uint8_t *
put32(uint8_t *p, uint32_t v)
{
	p = put16(p, (uint16_t)(v >> 16));
	return put16(p, (uint16_t)v);
}

static int fail(struct bgp_error *e, uint8_t code, uint8_t subcode, const void *data, size_t len,
    const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int
fail(struct bgp_error *e, uint8_t code, uint8_t subcode, const void *data, size_t len,
    const char *fmt, ...)
{
	va_list ap;

	e->code = code;
	e->subcode = subcode;
	e->len = (uint8_t)(len < sizeof(e->data) ? len : sizeof(e->data));
	if (e->len)
		memcpy(e->data, data, e->len);
	va_start(ap, fmt);
	vsnprintf(e->why, sizeof(e->why), fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- header (4.1) ---- */

/* The shortest message of each type (4.2 to 4.5; RFC 2918 3). */
static const uint16_t min_len[] = {
	[BGP_OPEN] = 29, [BGP_UPDATE] = 23, [BGP_NOTIFICATION] = 21, [BGP_KEEPALIVE] = 19,
	[BGP_ROUTE_REFRESH] = 23,
};

int
bgp_frame(const uint8_t *p, size_t avail, size_t max, uint8_t *type, struct bgp_error *e)
{
	uint16_t len;

	if (avail < BGP_HDR_LEN)
		return 0;
	for (int i = 0; i < 16; i++)
		if (p[i] != 0xff)
			return fail(e, BGP_E_HEADER, BGP_E_HDR_SYNC, NULL, 0, "marker is not all ones");
	len = get16(p + 16);
	*type = p[18];
	if (*type < BGP_OPEN || *type > BGP_ROUTE_REFRESH)
		return fail(e, BGP_E_HEADER, BGP_E_HDR_TYPE, type, 1, "unknown message type %u", *type);
	if (len < min_len[*type] || len > max || (*type == BGP_KEEPALIVE && len != 19))
		return fail(e, BGP_E_HEADER, BGP_E_HDR_LEN, p + 16, 2,
		    "bad length %u for a message of type %u (at most %zu)", len, *type, max);
	return avail < len ? 0 : (int)len;
}

/* ---- OPEN (4.2) ---- */

static int
open_cap(struct bgp_open *o, uint8_t code, const uint8_t *v, uint8_t len, struct bgp_error *e)
{
	switch (code) {
	case 1: /* multiprotocol (RFC 4760 8) */
		if (len != 4)
			break;
		o->any_mp = true;
		if (v[3] == BGP_SAFI_UNICAST && get16(v) == BGP_AFI_IPV4)
			o->mp[BGP_V4] = true;
		else if (v[3] == BGP_SAFI_UNICAST && get16(v) == BGP_AFI_IPV6)
			o->mp[BGP_V6] = true;
		return 0;
	case 2:
	case 128: /* route refresh (RFC 2918), and its pre-standard code */
		if (len != 0)
			break;
		o->route_refresh = true;
		return 0;
	case 70: /* enhanced route refresh (RFC 7313) */
		if (len != 0)
			break;
		o->enhanced_refresh = true;
		return 0;
	case 65: /* 4-octet AS (RFC 6793) */
		if (len != 4)
			break;
		o->as4 = true;
		o->as = get32(v);
		return 0;
	case 6: /* extended messages (RFC 8654) */
		if (len != 0)
			break;
		o->ext_msg = true;
		return 0;
	case 69: /* ADD-PATH (RFC 7911 4) */
		if (len % 4)
			break;
		for (unsigned i = 0; i < len; i += 4) {
			uint16_t afi = get16(v + i);
			if (v[i + 2] != BGP_SAFI_UNICAST || v[i + 3] < 1 || v[i + 3] > 3)
				continue; /* another SAFI, or a direction it does not define */
			if (afi == BGP_AFI_IPV4)
				o->addpath[BGP_V4] = v[i + 3];
			else if (afi == BGP_AFI_IPV6)
				o->addpath[BGP_V6] = v[i + 3];
		}
		return 0;
	case 5: /* extended next hop (RFC 8950 3) */
		if (len % 6)
			break;
		for (unsigned i = 0; i < len; i += 6)
			if (get16(v + i) == BGP_AFI_IPV4 && get16(v + i + 2) == BGP_SAFI_UNICAST &&
			    get16(v + i + 4) == BGP_AFI_IPV6)
				o->ext_nh_v4 = true;
		return 0;
	case 64: /* graceful restart (RFC 4724 3) */
		if (len < 2 || (len - 2) % 4)
			break;
		o->gr = true;
		o->gr_restarted = (v[0] & 0x80) != 0;
		o->gr_time = get16(v) & 0x0fff;
		for (unsigned i = 2; i < len; i += 4) {
			int fam = get16(v + i) == BGP_AFI_IPV4 ? BGP_V4 : get16(v + i) == BGP_AFI_IPV6 ? BGP_V6 : -1;
			if (fam < 0 || v[i + 2] != BGP_SAFI_UNICAST)
				continue;
			o->gr_fam[fam] = true;
			o->gr_fwd[fam] = (v[i + 3] & 0x80) != 0;
		}
		return 0;
	default:
		o->unknown_caps++; /* ignored (RFC 5492 3) */
		return 0;
	}
	return fail(e, BGP_E_OPEN, 0, &code, 1, "capability %u has a bad length %u", code, len);
}

/* A capabilities parameter (RFC 5492 4): capabilities one after another. */
static int
open_caps(struct bgp_open *o, const uint8_t *p, size_t len, struct bgp_error *e)
{
	size_t off = 0;

	while (off < len) {
		if (len - off < 2 || len - off - 2 < p[off + 1])
			return fail(e, BGP_E_OPEN, 0, NULL, 0, "a capability runs past its parameter");
		if (open_cap(o, p[off], p + off + 2, p[off + 1], e) < 0)
			return -1;
		off += 2u + p[off + 1];
	}
	return 0;
}

int
bgp_open_parse(const uint8_t *b, size_t len, struct bgp_open *o, struct bgp_error *e)
{
	size_t optlen, off, plen_size = 1;

	memset(o, 0, sizeof(*o));
	if (len < 10)
		return fail(e, BGP_E_HEADER, BGP_E_HDR_LEN, NULL, 0, "OPEN of %zu bytes", len);
	o->version = b[0];
	if (o->version != 4) {
		static const uint8_t four[2] = { 0, 4 };
		return fail(e, BGP_E_OPEN, BGP_E_OPEN_VERSION, four, 2, "BGP version %u (fibd speaks 4)",
		    o->version);
	}
	o->my_as = get16(b + 1);
	o->as = o->my_as;
	o->hold_time = get16(b + 3);
	if (o->hold_time == 1 || o->hold_time == 2)
		return fail(e, BGP_E_OPEN, BGP_E_OPEN_HOLD, NULL, 0, "hold time %u s", o->hold_time);
	o->router_id = get32(b + 5);
	if (!o->router_id)
		return fail(e, BGP_E_OPEN, BGP_E_OPEN_ID, NULL, 0, "router id 0.0.0.0");
	optlen = b[9];
	off = 10;
	/* Extended optional parameters (RFC 9072): 255, a parameter of type 255, a 2-byte length. */
	if (optlen == 255 && len >= 13 && b[10] == 255) {
		optlen = get16(b + 11);
		off = 13;
		plen_size = 2;
	}
	if (optlen != len - off)
		return fail(e, BGP_E_OPEN, 0, NULL, 0, "optional parameters of %zu bytes in %zu", optlen,
		    len - off);
	while (off < len) {
		size_t plen;
		if (len - off < 1 + plen_size)
			return fail(e, BGP_E_OPEN, 0, NULL, 0, "an optional parameter is cut short");
		plen = plen_size == 1 ? b[off + 1] : get16(b + off + 1);
		if (len - off - 1 - plen_size < plen)
			return fail(e, BGP_E_OPEN, 0, NULL, 0, "an optional parameter runs past the message");
		if (b[off] != 2)
			return fail(e, BGP_E_OPEN, BGP_E_OPEN_PARAM, b + off, 1,
			    "unsupported optional parameter %u", b[off]);
		if (open_caps(o, b + off + 1 + plen_size, plen, e) < 0)
			return -1;
		off += 1 + plen_size + plen;
	}
	return 0;
}

/* ---- building ---- */

static uint8_t *
header(uint8_t *buf, uint8_t type)
{
	memset(buf, 0xff, 16);
	buf[18] = type;
	return buf + BGP_HDR_LEN;
}

static size_t
finish(uint8_t *buf, const uint8_t *end)
{
	size_t len = (size_t)(end - buf);

	put16(buf + 16, (uint16_t)len);
	return len;
}

static uint8_t *
cap(uint8_t *p, uint8_t code, uint8_t len)
{
	p[0] = code;
	p[1] = len;
	return p + 2;
}

size_t
bgp_open_build(uint8_t *buf, const struct bgp_local *l)
{
	uint8_t *p = header(buf, BGP_OPEN), *params;

	*p++ = 4;
	p = put16(p, l->as <= 0xffff ? (uint16_t)l->as : 23456); /* AS_TRANS (RFC 6793) */
	p = put16(p, l->hold_time);
	p = put32(p, l->router_id);
	params = p++; /* its length, filled in below */
	*p++ = 2;     /* one capabilities parameter */
	p++;
	p = cap(p, 1, 4); /* multiprotocol: IPv4 unicast, IPv6 unicast */
	p = put16(p, BGP_AFI_IPV4);
	*p++ = 0;
	*p++ = BGP_SAFI_UNICAST;
	p = cap(p, 1, 4);
	p = put16(p, BGP_AFI_IPV6);
	*p++ = 0;
	*p++ = BGP_SAFI_UNICAST;
	p = cap(p, 2, 0);  /* route refresh: fibd has nothing to send again, but takes the request */
	p = cap(p, 65, 4); /* 4-octet AS */
	p = put32(p, l->as);
	p = cap(p, 6, 0);  /* extended messages */
	p = cap(p, 69, 8); /* ADD-PATH: receive, both families */
	p = put16(p, BGP_AFI_IPV4);
	*p++ = BGP_SAFI_UNICAST;
	*p++ = BGP_ADDPATH_RECV;
	p = put16(p, BGP_AFI_IPV6);
	*p++ = BGP_SAFI_UNICAST;
	*p++ = BGP_ADDPATH_RECV;
	p = cap(p, 5, 6);  /* extended next hop: IPv4 unicast over IPv6 */
	p = put16(p, BGP_AFI_IPV4);
	p = put16(p, BGP_SAFI_UNICAST);
	p = put16(p, BGP_AFI_IPV6);
	p = cap(p, 64, 10); /* graceful restart, forwarding state kept for both families */
	p = put16(p, (uint16_t)(l->gr_time & 0x0fff));
	p = put16(p, BGP_AFI_IPV4);
	*p++ = BGP_SAFI_UNICAST;
	*p++ = 0x80;
	p = put16(p, BGP_AFI_IPV6);
	*p++ = BGP_SAFI_UNICAST;
	*p++ = 0x80;
	params[2] = (uint8_t)(p - params - 3);
	params[0] = (uint8_t)(p - params - 1);
	return finish(buf, p);
}

size_t
bgp_keepalive_build(uint8_t *buf)
{
	return finish(buf, header(buf, BGP_KEEPALIVE));
}

size_t
bgp_eor_build(uint8_t *buf, int fam)
{
	uint8_t *p = header(buf, BGP_UPDATE);

	put16(p, 0); /* no withdrawn routes */
	p += 2;
	if (fam == BGP_V4) {
		put16(p, 0); /* no path attributes */
		return finish(buf, p + 2);
	}
	put16(p, 6);
	p += 2;
	*p++ = 0x80; /* optional, non-transitive */
	*p++ = 15;   /* MP_UNREACH_NLRI */
	*p++ = 3;
	put16(p, BGP_AFI_IPV6);
	p += 2;
	*p++ = BGP_SAFI_UNICAST;
	return finish(buf, p);
}

size_t
bgp_notification_build(uint8_t *buf, const struct bgp_error *e)
{
	uint8_t *p = header(buf, BGP_NOTIFICATION);

	*p++ = e->code;
	*p++ = e->subcode;
	memcpy(p, e->data, e->len);
	return finish(buf, p + e->len);
}

static const char *
error_name(uint8_t code, uint8_t subcode)
{
	static const char *const hdr[] = { "message header error", "connection not synchronized",
		"bad message length", "bad message type" };
	static const char *const open[] = { "OPEN message error", "unsupported version number",
		"bad peer AS", "bad BGP identifier", "unsupported optional parameter", NULL,
		"unacceptable hold time", "unsupported capability", NULL, NULL, NULL,
		"role mismatch" };
	static const char *const upd[] = { "UPDATE message error", "malformed attribute list",
		"unrecognized well-known attribute", "missing well-known attribute",
		"attribute flags error", "attribute length error", "invalid ORIGIN attribute", NULL,
		"invalid NEXT_HOP attribute", "optional attribute error", "invalid network field",
		"malformed AS_PATH" };
	static const char *const cease[] = { "cease", "maximum number of prefixes reached",
		"administrative shutdown", "peer de-configured", "administrative reset",
		"connection rejected", "other configuration change", "connection collision resolution",
		"out of resources", "hard reset", "BFD down" };
#define PICK(t) (subcode < sizeof(t) / sizeof(t[0]) && t[subcode] ? t[subcode] : t[0])
	switch (code) {
	case BGP_E_HEADER:
		return PICK(hdr);
	case BGP_E_OPEN:
		return PICK(open);
	case BGP_E_UPDATE:
		return PICK(upd);
	case BGP_E_HOLD:
		return "hold timer expired";
	case BGP_E_FSM:
		return "finite state machine error";
	case BGP_E_CEASE:
		return PICK(cease);
	case 7:
		return "ROUTE-REFRESH message error";
	default:
		return "unknown error";
	}
#undef PICK
}

void
bgp_notification_parse(const uint8_t *b, size_t len, uint8_t *code, uint8_t *subcode, char *text,
    size_t text_len)
{
	char msg[256] = "";

	*code = len > 0 ? b[0] : 0;
	*subcode = len > 1 ? b[1] : 0;
	/* A shutdown message (RFC 9003): a length, then UTF-8 text; shown with its controls replaced. */
	if (*code == BGP_E_CEASE && (*subcode == BGP_E_CEASE_SHUTDOWN || *subcode == BGP_E_CEASE_RESET) &&
	    len > 2 && b[2] && (size_t)b[2] <= len - 3) {
		size_t n = b[2] < sizeof(msg) - 1 ? b[2] : sizeof(msg) - 1;
		for (size_t i = 0; i < n; i++)
			msg[i] = b[3 + i] < 0x20 || b[3 + i] == 0x7f ? '?' : (char)b[3 + i];
		msg[n] = 0;
	}
	snprintf(text, text_len, "%s (%u/%u)%s%s%s", error_name(*code, *subcode), *code, *subcode,
	    msg[0] ? ": \"" : "", msg, msg[0] ? "\"" : "");
}

/* ---- UPDATE (4.3, RFC 4760, RFC 7606) ---- */

/* A run of prefixes is whole: every prefix length within the family's, every byte there. */
static bool
nlri_valid(const uint8_t *p, size_t len, uint8_t fam, bool addpath)
{
	unsigned maxlen = fam == BGP_V4 ? 32 : 128;
	size_t off = 0;

	while (off < len) {
		if (addpath) {
			if (len - off < 4)
				return false;
			off += 4;
		}
		if (off >= len || p[off] > maxlen || len - off - 1 < (p[off] + 7u) / 8)
			return false;
		off += 1 + (p[off] + 7u) / 8;
	}
	return true;
}

bool
bgp_nlri_next(struct bgp_nlri *n, struct bgp_prefix *out)
{
	unsigned bytes;

	if (n->p >= n->end)
		return false;
	memset(out, 0, sizeof(*out));
	out->fam = n->fam;
	if (n->addpath) {
		out->path_id = get32(n->p);
		n->p += 4;
	}
	out->plen = *n->p++;
	bytes = (out->plen + 7u) / 8;
	memcpy(out->addr.b, n->p, bytes);
	if (out->plen % 8)
		out->addr.b[bytes - 1] &= (uint8_t)(0xff << (8 - out->plen % 8));
	n->p += bytes;
	return true;
}

static int
family_of(uint16_t afi, uint8_t safi)
{
	if (safi != BGP_SAFI_UNICAST)
		return -1;
	return afi == BGP_AFI_IPV4 ? BGP_V4 : afi == BGP_AFI_IPV6 ? BGP_V6 : -1;
}

/* Parsing state of one UPDATE's attributes. */
struct upd {
	const struct bgp_session_caps *c;
	struct bgp_update *u;
	struct bgp_error *e;
	uint8_t seen[32]; /* attribute types met */
	bool nh_v4_ok;
	union ps_addr nh_v4;
	bool mp_reach, mp_unreach;
	int mp_unreach_fam;    /* for End-of-RIB: its family if the session carries it, else -1 */
	size_t mp_unreach_len;
	unsigned n_attrs;
};

/* Treat-as-withdraw (RFC 7606 2): the routes of the UPDATE go, the session stays. */
static void taw(struct upd *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
taw(struct upd *s, const char *fmt, ...)
{
	va_list ap;

	if (s->u->withdraw)
		return; /* the first reason is told */
	s->u->withdraw = true;
	va_start(ap, fmt);
	vsnprintf(s->u->why, sizeof(s->u->why), fmt, ap);
	va_end(ap);
}

/* AS_PATH or AS4_PATH (4.3, RFC 6793): segments of type 1 to 4, each with at least one AS, whole. */
static bool
as_path_valid(const uint8_t *v, size_t len, unsigned asz)
{
	size_t off = 0;

	while (off < len) {
		if (len - off < 2 || v[off] < 1 || v[off] > 4 || v[off + 1] == 0 ||
		    len - off - 2 < (size_t)v[off + 1] * asz)
			return false;
		off += 2 + (size_t)v[off + 1] * asz;
	}
	return true;
}

/* A gateway can be: not unspecified, loopback or multicast (nor, IPv4, class E). */
static bool
unicast_address(const uint8_t *a, unsigned len)
{
	static const uint8_t zero[16], loop6[16] = { [15] = 1 };

	if (len == 4)
		return a[0] && a[0] != 127 && a[0] < 224;
	return memcmp(a, zero, 16) && memcmp(a, loop6, 16) && a[0] != 0xff;
}

static int
mp_reach(struct upd *s, const uint8_t *v, size_t len, const uint8_t *attr, size_t attr_len)
{
	struct bgp_update *u = s->u;
	unsigned nhlen;
	int fam;

	if (len < 5 || len - 5 < v[3])
		return fail(s->e, BGP_E_UPDATE, BGP_E_UPD_OPTIONAL, attr, attr_len,
		    "MP_REACH_NLRI of %zu bytes is malformed", len);
	nhlen = v[3];
	fam = family_of(get16(v), v[2]);
	if (fam < 0 || !s->c->fam[fam])
		return 0; /* not a family of this session: skipped */
	/* IPv6: a global address, and maybe a link-local one. IPv4: 4 bytes, or IPv6 (RFC 8950). */
	if (!(nhlen == 16 || nhlen == 32 || (fam == BGP_V4 && nhlen == 4)) ||
	    (fam == BGP_V4 && nhlen != 4 && !s->c->ext_nh_v4))
		return fail(s->e, BGP_E_UPDATE, BGP_E_UPD_OPTIONAL, attr, attr_len,
		    "MP_REACH_NLRI: a next hop of %u bytes for %s", nhlen, fam == BGP_V4 ? "IPv4" : "IPv6");
	if (!nlri_valid(v + 5 + nhlen, len - 5 - nhlen, (uint8_t)fam, s->c->addpath[fam]))
		return fail(s->e, BGP_E_UPDATE, BGP_E_UPD_NETWORK, NULL, 0,
		    "MP_REACH_NLRI: a malformed %s prefix", fam == BGP_V4 ? "IPv4" : "IPv6");
	if (!unicast_address(v + 4, nhlen == 4 ? 4 : 16))
		taw(s, "MP_REACH_NLRI: a next hop that is no unicast address");
	u->reach[u->n_reach] = (struct bgp_nlri){ v + 5 + nhlen, v + len, (uint8_t)fam, s->c->addpath[fam] };
	memset(&u->nh[u->n_reach], 0, sizeof(u->nh[0]));
	memcpy(u->nh[u->n_reach].b, v + 4, nhlen == 4 ? 4 : 16);
	u->nh_family[u->n_reach] = nhlen == 4 ? PS_FAM_V4 : PS_FAM_V6;
	u->n_reach++;
	return 0;
}

static int
mp_unreach(struct upd *s, const uint8_t *v, size_t len, const uint8_t *attr, size_t attr_len)
{
	struct bgp_update *u = s->u;
	int fam;

	if (len < 3)
		return fail(s->e, BGP_E_UPDATE, BGP_E_UPD_OPTIONAL, attr, attr_len,
		    "MP_UNREACH_NLRI of %zu bytes is malformed", len);
	fam = family_of(get16(v), v[2]);
	s->mp_unreach_len = len;
	if (fam < 0 || !s->c->fam[fam])
		return 0;
	s->mp_unreach_fam = fam;
	if (!nlri_valid(v + 3, len - 3, (uint8_t)fam, s->c->addpath[fam]))
		return fail(s->e, BGP_E_UPDATE, BGP_E_UPD_NETWORK, NULL, 0,
		    "MP_UNREACH_NLRI: a malformed %s prefix", fam == BGP_V4 ? "IPv4" : "IPv6");
	if (len == 3)
		return 0; /* End-of-RIB, if nothing else is in the UPDATE */
	u->withdrawn[u->n_withdrawn++] = (struct bgp_nlri){ v + 3, v + len, (uint8_t)fam, s->c->addpath[fam] };
	return 0;
}

/* Flags as the attribute's definition has them: optional (0x80) and transitive (0x40). */
static bool
flags_are(uint8_t flags, bool optional, bool transitive)
{
	return ((flags & 0x80) != 0) == optional && ((flags & 0x40) != 0) == transitive;
}

/* One path attribute (type t, flags f, value v of len bytes; attr is all of it, for NOTIFICATIONs). */
static int
attribute(struct upd *s, uint8_t f, uint8_t t, const uint8_t *v, size_t len, const uint8_t *attr,
    size_t attr_len)
{
	const struct bgp_session_caps *c = s->c;
	bool dup = s->seen[t / 8] & (1u << (t % 8));

	s->seen[t / 8] |= (uint8_t)(1u << (t % 8));
	if (dup) {
		if (t == 14 || t == 15)
			return fail(s->e, BGP_E_UPDATE, BGP_E_UPD_ATTR_LIST, NULL, 0,
			    "%s twice", t == 14 ? "MP_REACH_NLRI" : "MP_UNREACH_NLRI");
		s->u->discarded++; /* all but the first are discarded (RFC 7606 3g) */
		return 0;
	}
	switch (t) {
	case 1: /* ORIGIN */
		if (!flags_are(f, false, true) || len != 1 || v[0] > 2)
			taw(s, "malformed ORIGIN");
		return 0;
	case 2: /* AS_PATH */
		if (!flags_are(f, false, true) || !as_path_valid(v, len, c->as4 ? 4 : 2))
			taw(s, "malformed AS_PATH");
		return 0;
	case 3: /* NEXT_HOP: an IPv4 unicast address (5.1.3, RFC 7606 7.3) */
		if (!flags_are(f, false, true) || len != 4) {
			taw(s, "malformed NEXT_HOP");
		} else if (!unicast_address(v, 4)) {
			taw(s, "NEXT_HOP %u.%u.%u.%u is no unicast address", v[0], v[1], v[2], v[3]);
		} else {
			memcpy(s->nh_v4.b, v, 4);
			s->nh_v4_ok = true;
		}
		return 0;
	case 4: /* MULTI_EXIT_DISC */
		if (!flags_are(f, true, false) || len != 4)
			taw(s, "malformed MULTI_EXIT_DISC");
		return 0;
	case 5: /* LOCAL_PREF: from an external peer it is discarded (RFC 7606 7.5) */
		if (!c->ibgp)
			s->u->discarded++;
		else if (!flags_are(f, false, true) || len != 4)
			taw(s, "malformed LOCAL_PREF");
		return 0;
	case 6: /* ATOMIC_AGGREGATE */
	case 7: /* AGGREGATOR */
		if (!flags_are(f, t == 7, true) || len != (t == 6 ? 0u : c->as4 ? 8u : 6u))
			s->u->discarded++; /* RFC 7606 7.6, 7.7 */
		return 0;
	case 8:  /* COMMUNITIES (RFC 1997; RFC 7606 7.8) */
	case 10: /* CLUSTER_LIST (RFC 4456; RFC 7606 7.10) */
		if (!len || len % 4)
			taw(s, "malformed %s", t == 8 ? "COMMUNITIES" : "CLUSTER_LIST");
		return 0;
	case 9: /* ORIGINATOR_ID (RFC 7606 7.9) */
		if (len != 4)
			taw(s, "malformed ORIGINATOR_ID");
		return 0;
	case 14:
	case 15: /* the NLRI cannot be found when these are wrong: session reset (RFC 7606 7.11) */
		if (!flags_are(f, true, false))
			return fail(s->e, BGP_E_UPDATE, BGP_E_UPD_FLAGS, attr, attr_len,
			    "%s with flags 0x%02x", t == 14 ? "MP_REACH_NLRI" : "MP_UNREACH_NLRI", f);
		if (t == 14) {
			s->mp_reach = true;
			return mp_reach(s, v, len, attr, attr_len);
		}
		s->mp_unreach = true;
		return mp_unreach(s, v, len, attr, attr_len);
	case 16: /* EXTENDED_COMMUNITIES (RFC 4360; RFC 7606 7.14) */
		if (len % 8)
			taw(s, "malformed EXTENDED_COMMUNITIES");
		return 0;
	case 17: /* AS4_PATH, AS4_AGGREGATOR: discarded when malformed (RFC 6793 6) */
		if (!as_path_valid(v, len, 4))
			s->u->discarded++;
		return 0;
	case 18:
		if (len != 8)
			s->u->discarded++;
		return 0;
	case 32: /* LARGE_COMMUNITY (RFC 8092 5) */
		if (!len || len % 12)
			taw(s, "malformed LARGE_COMMUNITY");
		return 0;
	default:
		if (!(f & 0x80))
			return fail(s->e, BGP_E_UPDATE, BGP_E_UPD_WELLKNOWN, attr, attr_len,
			    "unrecognized well-known attribute %u", t);
		return 0; /* an optional one fibd does not know: no matter here */
	}
}

static bool
seen(const struct upd *s, uint8_t t)
{
	return s->seen[t / 8] & (1u << (t % 8));
}

int
bgp_update_parse(const uint8_t *b, size_t len, const struct bgp_session_caps *c,
    struct bgp_update *u, struct bgp_error *e)
{
	struct upd s = { .c = c, .u = u, .e = e, .mp_unreach_fam = -1 };
	size_t wlen, alen, off, nlri_off, nlri_len;

	memset(u, 0, sizeof(*u));
	if (len < 4 || (wlen = get16(b)) > len - 4)
		return fail(e, BGP_E_UPDATE, BGP_E_UPD_ATTR_LIST, NULL, 0,
		    "withdrawn routes run past the UPDATE");
	alen = get16(b + 2 + wlen);
	if (alen > len - 4 - wlen)
		return fail(e, BGP_E_UPDATE, BGP_E_UPD_ATTR_LIST, NULL, 0,
		    "path attributes run past the UPDATE");
	nlri_off = 4 + wlen + alen;
	nlri_len = len - nlri_off;
	/* Prefixes that are malformed: the session is reset (RFC 7606 5.3). */
	if (!nlri_valid(b + 2, wlen, BGP_V4, c->addpath[BGP_V4]) ||
	    !nlri_valid(b + nlri_off, nlri_len, BGP_V4, c->addpath[BGP_V4]))
		return fail(e, BGP_E_UPDATE, BGP_E_UPD_NETWORK, NULL, 0, "a malformed IPv4 prefix");
	if (wlen && c->fam[BGP_V4])
		u->withdrawn[u->n_withdrawn++] = (struct bgp_nlri){ b + 2, b + 2 + wlen, BGP_V4, c->addpath[BGP_V4] };

	for (off = 4 + wlen; off < 4 + wlen + alen;) {
		size_t left = 4 + wlen + alen - off, hlen, vlen;
		uint8_t f = b[off];
		hlen = f & 0x10 ? 4 : 3; /* extended length */
		if (left < hlen || (vlen = hlen == 4 ? get16(b + off + 2) : b[off + 2]) > left - hlen) {
			/*
			 * An attribute runs past the attributes (RFC 7606 4): the NLRI field
			 * is still where it is, so its routes are withdrawn; if none was
			 * found in it or in an MP attribute yet, one may hide in what is
			 * left: reset.
			 */
			if (!nlri_len && !s.mp_reach && !s.mp_unreach)
				return fail(e, BGP_E_UPDATE, BGP_E_UPD_ATTR_LIST, NULL, 0,
				    "an attribute runs past the path attributes");
			taw(&s, "an attribute runs past the path attributes");
			break;
		}
		s.n_attrs++;
		if (attribute(&s, f, b[off + 1], b + off + hlen, vlen, b + off, hlen + vlen) < 0)
			return -1;
		off += hlen + vlen;
	}

	if (nlri_len && c->fam[BGP_V4]) {
		u->reach[u->n_reach] = (struct bgp_nlri){ b + nlri_off, b + len, BGP_V4, c->addpath[BGP_V4] };
		u->nh[u->n_reach] = s.nh_v4;
		u->nh_family[u->n_reach] = PS_FAM_V4;
		u->n_reach++;
	}
	/* Well-known mandatory attributes (5.1; RFC 7606 3d): missing, the routes are withdrawn. */
	if (u->n_reach) {
		if (!seen(&s, 1) || !seen(&s, 2) || (c->ibgp && !seen(&s, 5)))
			taw(&s, "missing well-known attribute %s",
			    !seen(&s, 1) ? "ORIGIN" : !seen(&s, 2) ? "AS_PATH" : "LOCAL_PREF");
		else if (nlri_len && c->fam[BGP_V4] && !s.nh_v4_ok && !seen(&s, 3))
			taw(&s, "missing well-known attribute NEXT_HOP");
	}
	/* End-of-RIB (RFC 4724 2): an empty UPDATE (IPv4), or MP_UNREACH_NLRI alone with no prefix. */
	if (!wlen && !alen && !nlri_len) {
		u->eor = true;
		u->eor_fam = BGP_V4;
	} else if (!wlen && !nlri_len && s.n_attrs == 1 && s.mp_unreach_len == 3 && s.mp_unreach_fam >= 0) {
		u->eor = true;
		u->eor_fam = (uint8_t)s.mp_unreach_fam;
	}
	return 0;
}
