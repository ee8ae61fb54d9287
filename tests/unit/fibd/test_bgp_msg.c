/*
 * bgp_msg, the BGP codec, on bytes laid out as the RFCs draw them: the
 * header's checks (RFC 4271 6.1) and extended messages (RFC 8654); fibd's
 * OPEN read back, a peer's OPEN with capabilities fibd does not know, extended
 * optional parameters (RFC 9072) and each OPEN error (6.2); UPDATEs of IPv4
 * and IPv6 (RFC 4760), ADD-PATH (RFC 7911), IPv4 over an IPv6 next hop (RFC
 * 8950), End-of-RIB (RFC 4724), an AS_PATH of 255 segments, a 64 KiB UPDATE,
 * and the answer RFC 7606 gives to each malformed case: treat-as-withdraw,
 * attribute discard, or a session reset with the right NOTIFICATION.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "bgp_msg.h"

/* ---- a message builder ---- */

static uint8_t msg[70000];
static size_t len;

static void
b8(unsigned v)
{
	msg[len++] = (uint8_t)v;
}

static void
b16(unsigned v)
{
	b8(v >> 8);
	b8(v);
}

static void
b32(uint32_t v)
{
	b16(v >> 16);
	b16(v & 0xffff);
}

static void
bytes(const void *p, size_t n)
{
	memcpy(msg + len, p, n);
	len += n;
}

static void
prefix(const char *addr, unsigned plen)
{
	uint8_t a[16];
	int v6 = strchr(addr, ':') != NULL;

	assert_int_equal(inet_pton(v6 ? AF_INET6 : AF_INET, addr, a), 1);
	b8(plen);
	bytes(a, (plen + 7) / 8);
}

/* An attribute: flags, type, and its value given by a callback-free byte list. */
static void
attr(unsigned flags, unsigned type, const void *v, size_t n)
{
	b8(flags | (n > 255 ? 0x10 : 0));
	b8(type);
	if (n > 255)
		b16((unsigned)n);
	else
		b8((unsigned)n);
	bytes(v, n);
}

static const uint8_t origin_igp[] = { 0 };
static const uint8_t as_path_65001[] = { 2, 1, 0, 0, 0xfd, 0xe9 }; /* AS_SEQUENCE 65001 (4 octets) */
static const uint8_t next_hop[] = { 192, 0, 2, 1 };

/* UPDATE body pieces: the start (no withdrawn routes), and the attributes' length filled in after. */
static size_t attr_len_at;

static void
update_begin(void)
{
	len = 0;
	b16(0); /* withdrawn routes length */
	attr_len_at = len;
	b16(0);
}

static void
attrs_end(void)
{
	size_t n = len - attr_len_at - 2;
	msg[attr_len_at] = (uint8_t)(n >> 8);
	msg[attr_len_at + 1] = (uint8_t)n;
}

static void
mandatory(void)
{
	attr(0x40, 1, origin_igp, 1);
	attr(0x40, 2, as_path_65001, sizeof(as_path_65001));
}

static const struct bgp_session_caps ebgp = { .as4 = true, .fam = { true, true } };

static void
assert_prefix(struct bgp_nlri *n, const char *addr, unsigned plen, uint32_t path_id)
{
	struct bgp_prefix p;
	uint8_t a[16] = { 0 };

	assert_true(bgp_nlri_next(n, &p));
	assert_int_equal(inet_pton(strchr(addr, ':') ? AF_INET6 : AF_INET, addr, a), 1);
	assert_int_equal(p.plen, plen);
	assert_int_equal(p.path_id, path_id);
	assert_memory_equal(p.addr.b, a, 16);
}

/* ---- header ---- */

static void
header(unsigned type, unsigned length)
{
	len = 0;
	memset(msg, 0xff, 16);
	len = 16;
	b16(length);
	b8(type);
}

static void
test_frame(void **state)
{
	struct bgp_error e;
	uint8_t type;
	(void)state;

	header(BGP_KEEPALIVE, 19);
	assert_int_equal(bgp_frame(msg, 19, BGP_MSG_MAX, &type, &e), 19);
	assert_int_equal(type, BGP_KEEPALIVE);
	assert_int_equal(bgp_frame(msg, 18, BGP_MSG_MAX, &type, &e), 0); /* more to come */

	header(BGP_UPDATE, 4097);
	assert_int_equal(bgp_frame(msg, 19, BGP_MSG_MAX, &type, &e), -1);
	assert_int_equal(e.code, BGP_E_HEADER);
	assert_int_equal(e.subcode, BGP_E_HDR_LEN);
	assert_int_equal(e.len, 2); /* the erroneous length field (6.1) */
	assert_int_equal(e.data[0] << 8 | e.data[1], 4097);
	/* With extended messages (RFC 8654): up to 65,535; waits for the rest. */
	assert_int_equal(bgp_frame(msg, 19, BGP_EXT_MSG_MAX, &type, &e), 0);
	header(BGP_UPDATE, 65535);
	assert_int_equal(bgp_frame(msg, 65535, BGP_EXT_MSG_MAX, &type, &e), 65535);

	header(BGP_KEEPALIVE, 20);
	assert_int_equal(bgp_frame(msg, 20, BGP_MSG_MAX, &type, &e), -1);
	assert_int_equal(e.subcode, BGP_E_HDR_LEN);
	header(BGP_OPEN, 28);
	assert_int_equal(bgp_frame(msg, 28, BGP_MSG_MAX, &type, &e), -1);
	assert_int_equal(e.subcode, BGP_E_HDR_LEN);
	header(6, 19);
	assert_int_equal(bgp_frame(msg, 19, BGP_MSG_MAX, &type, &e), -1);
	assert_int_equal(e.subcode, BGP_E_HDR_TYPE);
	assert_int_equal(e.data[0], 6);
	header(BGP_KEEPALIVE, 19);
	msg[3] = 0xfe;
	assert_int_equal(bgp_frame(msg, 19, BGP_MSG_MAX, &type, &e), -1);
	assert_int_equal(e.subcode, BGP_E_HDR_SYNC);
}

/* ---- OPEN ---- */

static void
test_open_round_trip(void **state)
{
	struct bgp_local l = { .as = 4200000000u, .router_id = 0xc0000201, .hold_time = 90, .gr_time = 120 };
	struct bgp_open o;
	struct bgp_error e;
	uint8_t type;
	size_t n;
	(void)state;

	n = bgp_open_build(msg, &l);
	assert_true(n <= BGP_OPEN_OUT_MAX);
	assert_int_equal(bgp_frame(msg, n, BGP_MSG_MAX, &type, &e), (int)n);
	assert_int_equal(type, BGP_OPEN);
	assert_int_equal(bgp_open_parse(msg + BGP_HDR_LEN, n - BGP_HDR_LEN, &o, &e), 0);
	assert_int_equal(o.version, 4);
	assert_int_equal(o.my_as, 23456); /* AS_TRANS */
	assert_true(o.as4);
	assert_int_equal(o.as, 4200000000u);
	assert_int_equal(o.hold_time, 90);
	assert_int_equal(o.router_id, 0xc0000201);
	assert_true(o.any_mp && o.mp[BGP_V4] && o.mp[BGP_V6]);
	assert_true(o.route_refresh && o.ext_msg && o.ext_nh_v4);
	assert_int_equal(o.addpath[BGP_V4], BGP_ADDPATH_RECV);
	assert_int_equal(o.addpath[BGP_V6], BGP_ADDPATH_RECV);
	assert_true(o.gr && !o.gr_restarted);
	assert_int_equal(o.gr_time, 120);
	assert_true(o.gr_fam[BGP_V4] && o.gr_fwd[BGP_V4] && o.gr_fam[BGP_V6] && o.gr_fwd[BGP_V6]);
	assert_int_equal(o.unknown_caps, 0);

	/* Built in a 2-octet AS: my_as is the AS itself. */
	l.as = 65000;
	n = bgp_open_build(msg, &l);
	assert_int_equal(bgp_open_parse(msg + BGP_HDR_LEN, n - BGP_HDR_LEN, &o, &e), 0);
	assert_int_equal(o.my_as, 65000);
	assert_int_equal(o.as, 65000);
}

/* A peer's OPEN body: version 4, AS, hold time, id, then the parameters given. */
static void
open_body(unsigned version, unsigned as, unsigned hold, uint32_t id)
{
	len = 0;
	b8(version);
	b16(as);
	b16(hold);
	b32(id);
}

static void
test_open_peer(void **state)
{
	struct bgp_open o;
	struct bgp_error e;
	/* Capabilities as a peer may send them: MP IPv6, ADD-PATH send+receive for IPv4,
	 * GR restarted with 90 s for IPv6, FQDN (73, unknown here), and a dynamic one (67). */
	static const uint8_t caps[] = { 1, 4, 0, 2, 0, 1, 69, 4, 0, 1, 1, 3, 64, 6, 0x80, 90, 0, 2,
		1, 0x00, 73, 5, 3, 'r', 't', 'r', 0, 67, 0 };
	(void)state;

	open_body(4, 65001, 180, 0x0a000001);
	b8(2 + sizeof(caps));
	b8(2);
	b8(sizeof(caps));
	bytes(caps, sizeof(caps));
	assert_int_equal(bgp_open_parse(msg, len, &o, &e), 0);
	assert_int_equal(o.as, 65001);
	assert_false(o.as4);
	assert_true(o.any_mp && !o.mp[BGP_V4] && o.mp[BGP_V6]);
	assert_int_equal(o.addpath[BGP_V4], BGP_ADDPATH_RECV | BGP_ADDPATH_SEND);
	assert_true(o.gr && o.gr_restarted);
	assert_int_equal(o.gr_time, 90);
	assert_true(o.gr_fam[BGP_V6] && !o.gr_fwd[BGP_V6] && !o.gr_fam[BGP_V4]);
	assert_int_equal(o.unknown_caps, 2);

	/* No capabilities at all: IPv4 unicast alone is implied (RFC 4760 8). */
	open_body(4, 65001, 0, 1);
	b8(0);
	assert_int_equal(bgp_open_parse(msg, len, &o, &e), 0);
	assert_false(o.any_mp);
	assert_int_equal(o.hold_time, 0);

	/* Extended optional parameters (RFC 9072): 255, type 255, a 2-byte length, 2-byte parameter lengths. */
	open_body(4, 65001, 90, 1);
	b8(255);
	b8(255);
	b16(3 + 6);
	b8(2);
	b16(6);
	b8(65);
	b8(4);
	b32(4200000001u);
	assert_int_equal(bgp_open_parse(msg, len, &o, &e), 0);
	assert_true(o.as4);
	assert_int_equal(o.as, 4200000001u);
}

static void
test_open_errors(void **state)
{
	/* Each OPEN (version, hold time, router id, optional parameters) and the error it gets. */
	static const struct {
		unsigned version, hold;
		uint32_t id;
		uint8_t params[8];
		unsigned n;
		uint8_t subcode;
		const char *what;
	} cases[] = {
		{ 3, 90, 1, { 0 }, 1, BGP_E_OPEN_VERSION, "version 3" },
		{ 4, 2, 1, { 0 }, 1, BGP_E_OPEN_HOLD, "hold time 2 s" },
		{ 4, 90, 0, { 0 }, 1, BGP_E_OPEN_ID, "router id 0" },
		{ 4, 90, 1, { 3, 1, 1, 0 }, 4, BGP_E_OPEN_PARAM, "parameter type 1 (authentication)" },
		{ 4, 90, 1, { 4, 2, 2, 65, 4 }, 5, 0, "a capability past its parameter" },
		{ 4, 90, 1, { 5, 2, 3, 65, 1, 0 }, 6, 0, "a 4-octet AS capability of 1 byte" },
		{ 4, 90, 1, { 7, 2, 0 }, 3, 0, "parameters' length past the message" },
	};
	struct bgp_open o;
	struct bgp_error e;
	(void)state;

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		open_body(cases[i].version, 65001, cases[i].hold, cases[i].id);
		bytes(cases[i].params, cases[i].n);
		if (bgp_open_parse(msg, len, &o, &e) != -1 || e.code != BGP_E_OPEN ||
		    e.subcode != cases[i].subcode)
			fail_msg("%s: got %u/%u", cases[i].what, e.code, e.subcode);
	}
	/* A version error names the largest version fibd speaks (6.2). */
	open_body(3, 65001, 90, 1);
	b8(0);
	assert_int_equal(bgp_open_parse(msg, len, &o, &e), -1);
	assert_int_equal(e.len, 2);
	assert_int_equal(e.data[1], 4);
}

/* ---- UPDATE ---- */

static void
test_update_ipv4(void **state)
{
	struct bgp_update u;
	struct bgp_error e;
	(void)state;

	update_begin();
	mandatory();
	attr(0x40, 3, next_hop, 4);
	attr(0x80, 4, "\0\0\0\x0a", 4); /* MED */
	attrs_end();
	prefix("10.0.0.0", 8);
	prefix("198.51.100.128", 25);
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), 0);
	assert_false(u.withdraw);
	assert_false(u.eor);
	assert_int_equal(u.n_reach, 1);
	assert_int_equal(u.nh_family[0], PS_FAM_V4);
	assert_memory_equal(u.nh[0].b, next_hop, 4);
	assert_prefix(&u.reach[0], "10.0.0.0", 8, 0);
	assert_prefix(&u.reach[0], "198.51.100.128", 25, 0);
	assert_false(bgp_nlri_next(&u.reach[0], &(struct bgp_prefix){ 0 }));

	/* A withdrawal; host bits the peer left set are cleared. */
	len = 0;
	b16(4);
	b8(24);
	b8(203);
	b8(0);
	b8(113);
	b16(0);
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), 0);
	assert_int_equal(u.n_withdrawn, 1);
	assert_int_equal(u.n_reach, 0);
	assert_prefix(&u.withdrawn[0], "203.0.113.0", 24, 0);
	len = 0;
	b16(2);
	b8(7);
	b8(0xff);
	b16(0);
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), 0);
	assert_prefix(&u.withdrawn[0], "254.0.0.0", 7, 0);

	/* End-of-RIB for IPv4: an UPDATE with nothing in it (RFC 4724 2). */
	update_begin();
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), 0);
	assert_true(u.eor);
	assert_int_equal(u.eor_fam, BGP_V4);
}

/* MP_REACH_NLRI (RFC 4760 3) of afi, unicast, next hop nh (nhlen bytes), prefixes (with path ids if given). */
static void
mp_reach(unsigned afi, const uint8_t *nh, unsigned nhlen, const char *const *pfx, const unsigned *plen,
    const uint32_t *path_id, unsigned n)
{
	size_t start = len, vstart;

	/* The value is built after a 4-byte attribute header (extended length), then the header is filled in. */
	len += 4;
	vstart = len;
	b16(afi);
	b8(BGP_SAFI_UNICAST);
	b8(nhlen);
	bytes(nh, nhlen);
	b8(0);
	for (unsigned i = 0; i < n; i++) {
		if (path_id)
			b32(path_id[i]);
		prefix(pfx[i], plen[i]);
	}
	msg[start] = 0x90; /* optional, extended length */
	msg[start + 1] = 14;
	msg[start + 2] = (uint8_t)((len - vstart) >> 8);
	msg[start + 3] = (uint8_t)(len - vstart);
}

/* An UPDATE of two IPv6 prefixes (MP_REACH_NLRI) through next hop nh, parsed on an external session. */
static int
v6_update(const uint8_t *nh, unsigned nhlen, const char *const *pfx, const unsigned *plen,
    struct bgp_update *u)
{
	struct bgp_error e;

	update_begin();
	mandatory();
	mp_reach(BGP_AFI_IPV6, nh, nhlen, pfx, plen, NULL, 2);
	attrs_end();
	return bgp_update_parse(msg, len, &ebgp, u, &e);
}

static void
test_update_ipv6_and_eor(void **state)
{
	struct bgp_update u;
	struct bgp_error e;
	uint8_t nh[32];
	static const char *const pfx[] = { "2001:db8:1::", "2001:db8::" };
	static const unsigned plen[] = { 48, 32 };
	static const uint8_t unreach_v6[] = { 0, 2, 1 };
	(void)state;

	/* A global next hop and a link-local one: the global one is the gateway. */
	inet_pton(AF_INET6, "2001:db8:ff::1", nh);
	inet_pton(AF_INET6, "fe80::1", nh + 16);
	assert_int_equal(v6_update(nh, 32, pfx, plen, &u), 0);
	assert_false(u.withdraw);
	assert_int_equal(u.n_reach, 1);
	assert_int_equal(u.nh_family[0], PS_FAM_V6);
	assert_memory_equal(u.nh[0].b, nh, 16);
	assert_prefix(&u.reach[0], "2001:db8:1::", 48, 0);
	assert_prefix(&u.reach[0], "2001:db8::", 32, 0);

	/* A next hop that is no unicast address (::, ::1, multicast): the routes are withdrawn. */
	{
		static const char *const bad_nh[] = { "::", "::1", "ff02::1" };
		for (unsigned i = 0; i < 3; i++) {
			uint8_t b[16];
			inet_pton(AF_INET6, bad_nh[i], b);
			assert_int_equal(v6_update(b, 16, pfx, plen, &u), 0);
			assert_true(u.withdraw);
			assert_int_equal(u.n_reach, 1);
		}
	}

	/* End-of-RIB for IPv6: MP_UNREACH_NLRI alone, empty. */
	update_begin();
	attr(0x80, 15, unreach_v6, 3);
	attrs_end();
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), 0);
	assert_true(u.eor);
	assert_int_equal(u.eor_fam, BGP_V6);

	/* A family the session does not carry is skipped: no End-of-RIB of it either. */
	{
		struct bgp_session_caps v4only = { .as4 = true, .fam = { true, false } };
		assert_int_equal(bgp_update_parse(msg, len, &v4only, &u, &e), 0);
		assert_false(u.eor);
	}
}

/* fibd's own End-of-RIB: what the parser (and so a peer) reads as one, byte for byte. */
static void
test_eor_build(void **state)
{
	static const uint8_t v4[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0, 23, 2, 0, 0, 0, 0 };
	static const uint8_t v6[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0, 29, 2, 0, 0, 0, 6, 0x80, 15, 3, 0, 2, 1 };
	uint8_t b[BGP_EOR_MAX];
	struct bgp_update u;
	struct bgp_error e;
	uint8_t type;
	(void)state;

	assert_int_equal(bgp_eor_build(b, BGP_V4), sizeof(v4));
	assert_memory_equal(b, v4, sizeof(v4));
	assert_int_equal(bgp_eor_build(b, BGP_V6), sizeof(v6));
	assert_memory_equal(b, v6, sizeof(v6));
	for (int f = 0; f < BGP_NFAM; f++) {
		size_t n = bgp_eor_build(b, f);
		assert_int_equal(bgp_frame(b, n, BGP_MSG_MAX, &type, &e), (int)n);
		assert_int_equal(type, BGP_UPDATE);
		assert_int_equal(bgp_update_parse(b + BGP_HDR_LEN, n - BGP_HDR_LEN, &ebgp, &u, &e), 0);
		assert_true(u.eor);
		assert_int_equal(u.eor_fam, f);
	}
}

static void
test_update_ext_nexthop_and_addpath(void **state)
{
	struct bgp_update u;
	struct bgp_error e;
	uint8_t nh[16];
	static const char *const pfx[] = { "192.0.2.0", "192.0.2.0" };
	static const unsigned plen[] = { 24, 24 };
	static const uint32_t ids[] = { 1, 2 };
	struct bgp_session_caps c = { .as4 = true, .fam = { true, true }, .ext_nh_v4 = true,
		.addpath = { true, false } };
	(void)state;

	/* IPv4 prefixes over an IPv6 next hop (RFC 8950), two paths of one prefix (RFC 7911). */
	inet_pton(AF_INET6, "2001:db8:ff::1", nh);
	update_begin();
	mandatory();
	mp_reach(BGP_AFI_IPV4, nh, 16, pfx, plen, ids, 2);
	attrs_end();
	assert_int_equal(bgp_update_parse(msg, len, &c, &u, &e), 0);
	assert_int_equal(u.n_reach, 1);
	assert_int_equal(u.nh_family[0], PS_FAM_V6);
	assert_prefix(&u.reach[0], "192.0.2.0", 24, 1);
	assert_prefix(&u.reach[0], "192.0.2.0", 24, 2);

	/* Without the extended next hop capability, a 16-byte next hop for IPv4 resets the session. */
	c.ext_nh_v4 = false;
	assert_int_equal(bgp_update_parse(msg, len, &c, &u, &e), -1);
	assert_int_equal(e.code, BGP_E_UPDATE);
	assert_int_equal(e.subcode, BGP_E_UPD_OPTIONAL);

	/* A path identifier cut short: malformed prefixes reset (RFC 7606 5.3). */
	c.ext_nh_v4 = true;
	update_begin();
	attrs_end();
	b32(7);
	b8(24);
	b8(192);
	assert_int_equal(bgp_update_parse(msg, len, &c, &u, &e), -1);
	assert_int_equal(e.subcode, BGP_E_UPD_NETWORK);
}

static void
test_update_long_as_path_and_64k(void **state)
{
	struct bgp_update u;
	struct bgp_error e;
	static uint8_t path[255 * 6];
	struct bgp_prefix p;
	unsigned n = 0;
	struct bgp_session_caps c = { .as4 = true, .fam = { true, true }, .addpath = { false, false } };
	(void)state;

	/* 255 segments of one AS each: 1,530 bytes, so an extended length. */
	for (unsigned i = 0; i < 255; i++) {
		uint8_t *s = path + i * 6;
		s[0] = 2;
		s[1] = 1;
		s[2] = 0;
		s[3] = 1;
		s[4] = (uint8_t)(i >> 8);
		s[5] = (uint8_t)i;
	}
	update_begin();
	attr(0x40, 1, origin_igp, 1);
	attr(0x40, 2, path, sizeof(path));
	attr(0x40, 3, next_hop, 4);
	attrs_end();
	/* Prefixes up to an extended message's 65,535 bytes (less its 19-byte header). */
	while (len + 4 <= BGP_EXT_MSG_MAX - BGP_HDR_LEN) {
		b8(24);
		b8(10);
		b8(n >> 8);
		b8(n & 0xff);
		n++;
	}
	assert_int_equal(bgp_update_parse(msg, len, &c, &u, &e), 0);
	assert_false(u.withdraw);
	for (unsigned i = 0; i < n; i++)
		assert_true(bgp_nlri_next(&u.reach[0], &p));
	assert_false(bgp_nlri_next(&u.reach[0], &p));
	assert_true(n > 15000);

	/* The same path read as 2-octet ASes does not add up: treat-as-withdraw. */
	c.as4 = false;
	assert_int_equal(bgp_update_parse(msg, len, &c, &u, &e), 0);
	assert_true(u.withdraw);
	assert_non_null(strstr(u.why, "AS_PATH"));
}

/* One UPDATE with the mandatory attributes, NEXT_HOP, the extra attribute given, and one prefix. */
static void
update_with(unsigned flags, unsigned type, const void *v, size_t n)
{
	update_begin();
	mandatory();
	attr(0x40, 3, next_hop, 4);
	if (v)
		attr(flags, type, v, n);
	attrs_end();
	prefix("10.1.0.0", 16);
}

static void
test_update_rfc7606(void **state)
{
	struct bgp_update u;
	struct bgp_error e;
	struct bgp_session_caps ibgp = ebgp;
	static const uint8_t bad_origin[] = { 3 };
	static const uint8_t bad_path[] = { 5, 1, 0, 0, 0, 1 };
	static const uint8_t three[] = { 1, 2, 3 };
	static const uint8_t lp[] = { 0, 0, 0, 100 };
	(void)state;
	ibgp.ibgp = true;

	/* Treat-as-withdraw: the routes go, the session stays. */
	update_begin();
	attr(0x40, 1, bad_origin, 1);
	attr(0x40, 2, as_path_65001, sizeof(as_path_65001));
	attr(0x40, 3, next_hop, 4);
	attrs_end();
	prefix("10.1.0.0", 16);
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), 0);
	assert_true(u.withdraw);
	assert_int_equal(u.n_reach, 1); /* the routes to withdraw */
	assert_non_null(strstr(u.why, "ORIGIN"));

	update_begin();
	attr(0x40, 1, origin_igp, 1);
	attr(0x40, 2, bad_path, sizeof(bad_path));
	attr(0x40, 3, next_hop, 4);
	attrs_end();
	prefix("10.1.0.0", 16);
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), 0);
	assert_true(u.withdraw);

	update_with(0x40, 3, three, 3); /* a second NEXT_HOP: discarded, first kept */
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), 0);
	assert_false(u.withdraw);
	assert_int_equal(u.discarded, 1);

	update_with(0x80, 4, three, 3); /* MED of 3 bytes */
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), 0);
	assert_true(u.withdraw);

	update_with(0xc0, 8, three, 3); /* COMMUNITIES of 3 bytes */
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), 0);
	assert_true(u.withdraw);

	update_with(0xc0, 7, three, 3); /* AGGREGATOR of 3 bytes: discarded (RFC 7606 7.7) */
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), 0);
	assert_false(u.withdraw);
	assert_int_equal(u.discarded, 1);

	/* A NEXT_HOP that is no unicast address. */
	update_begin();
	mandatory();
	attr(0x40, 3, "\xe0\0\0\x01", 4);
	attrs_end();
	prefix("10.1.0.0", 16);
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), 0);
	assert_true(u.withdraw);

	/* Missing well-known attributes: NEXT_HOP; LOCAL_PREF on an internal session. */
	update_begin();
	mandatory();
	attrs_end();
	prefix("10.1.0.0", 16);
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), 0);
	assert_true(u.withdraw);
	assert_non_null(strstr(u.why, "NEXT_HOP"));
	update_with(0, 0, NULL, 0);
	assert_int_equal(bgp_update_parse(msg, len, &ibgp, &u, &e), 0);
	assert_true(u.withdraw);
	assert_non_null(strstr(u.why, "LOCAL_PREF"));
	update_with(0x40, 5, lp, 4);
	assert_int_equal(bgp_update_parse(msg, len, &ibgp, &u, &e), 0);
	assert_false(u.withdraw);
	/* From an external peer LOCAL_PREF is discarded, not an error. */
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), 0);
	assert_false(u.withdraw);
	assert_int_equal(u.discarded, 1);

	/* An optional attribute fibd does not know: no matter. A well-known one: reset. */
	update_with(0xc0, 99, three, 3);
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), 0);
	assert_false(u.withdraw);
	update_with(0x40, 99, three, 3);
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), -1);
	assert_int_equal(e.code, BGP_E_UPDATE);
	assert_int_equal(e.subcode, BGP_E_UPD_WELLKNOWN);
	assert_int_equal(e.len, 6); /* the attribute itself */

	/* An attribute running past the attributes, the NLRI field still found: withdraw. */
	update_begin();
	mandatory();
	b8(0x40);
	b8(3);
	b8(40);
	bytes(next_hop, 4);
	attrs_end();
	prefix("10.1.0.0", 16);
	/* the NEXT_HOP claims 40 bytes; the attributes end 4 bytes into it */
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), 0);
	assert_true(u.withdraw);
	/* ... and with no NLRI to withdraw, an MP_REACH_NLRI may hide there: reset. */
	len -= 3;
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), -1);
	assert_int_equal(e.subcode, BGP_E_UPD_ATTR_LIST);
}

static void
test_update_reset(void **state)
{
	struct bgp_update u;
	struct bgp_error e;
	uint8_t nh[16] = { 0x20, 0x01, 0x0d, 0xb8 };
	static const char *const pfx[] = { "2001:db8::" };
	static const unsigned plen[] = { 32 };
	(void)state;

	/* Withdrawn routes' length past the message. */
	len = 0;
	b16(10);
	b16(0);
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), -1);
	assert_int_equal(e.subcode, BGP_E_UPD_ATTR_LIST);
	/* Path attributes' length past the message. */
	len = 0;
	b16(0);
	b16(10);
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), -1);
	assert_int_equal(e.subcode, BGP_E_UPD_ATTR_LIST);
	/* A prefix of 33 bits; a prefix cut short. */
	update_begin();
	mandatory();
	attr(0x40, 3, next_hop, 4);
	attrs_end();
	b8(33);
	b32(0x0a000000);
	b8(0);
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), -1);
	assert_int_equal(e.subcode, BGP_E_UPD_NETWORK);
	len -= 3;
	msg[len - 2] = 24;
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), -1);
	assert_int_equal(e.subcode, BGP_E_UPD_NETWORK);
	/* MP_REACH_NLRI twice; with wrong flags; with an IPv6 next hop of 8 bytes. */
	update_begin();
	mandatory();
	mp_reach(BGP_AFI_IPV6, nh, 16, pfx, plen, NULL, 1);
	mp_reach(BGP_AFI_IPV6, nh, 16, pfx, plen, NULL, 1);
	attrs_end();
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), -1);
	assert_int_equal(e.subcode, BGP_E_UPD_ATTR_LIST);
	update_begin();
	mandatory();
	mp_reach(BGP_AFI_IPV6, nh, 16, pfx, plen, NULL, 1);
	attrs_end();
	msg[4 + 4 + 3 + sizeof(as_path_65001)] = 0xd0; /* the MP_REACH_NLRI's flags: now transitive */
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), -1);
	assert_int_equal(e.subcode, BGP_E_UPD_FLAGS);
	update_begin();
	mandatory();
	mp_reach(BGP_AFI_IPV6, nh, 8, pfx, plen, NULL, 1);
	attrs_end();
	assert_int_equal(bgp_update_parse(msg, len, &ebgp, &u, &e), -1);
	assert_int_equal(e.subcode, BGP_E_UPD_OPTIONAL);
}

static void
test_notification(void **state)
{
	struct bgp_error e = { .code = BGP_E_CEASE, .subcode = BGP_E_CEASE_SHUTDOWN };
	uint8_t code, sub;
	char text[200];
	uint8_t type;
	size_t n;
	(void)state;

	/* A shutdown communication (RFC 9003): a length, then UTF-8. */
	e.len = 12;
	e.data[0] = 11;
	memcpy(e.data + 1, "maintenance", 11);
	n = bgp_notification_build(msg, &e);
	assert_int_equal(bgp_frame(msg, n, BGP_MSG_MAX, &type, &e), (int)n);
	assert_int_equal(type, BGP_NOTIFICATION);
	bgp_notification_parse(msg + BGP_HDR_LEN, n - BGP_HDR_LEN, &code, &sub, text, sizeof(text));
	assert_int_equal(code, BGP_E_CEASE);
	assert_int_equal(sub, BGP_E_CEASE_SHUTDOWN);
	assert_string_equal(text, "administrative shutdown (6/2): \"maintenance\"");
	/* A length past the message: no text taken. */
	msg[BGP_HDR_LEN + 2] = 200;
	bgp_notification_parse(msg + BGP_HDR_LEN, n - BGP_HDR_LEN, &code, &sub, text, sizeof(text));
	assert_string_equal(text, "administrative shutdown (6/2)");
	n = bgp_keepalive_build(msg);
	assert_int_equal(bgp_frame(msg, n, BGP_MSG_MAX, &type, &e), 19);
	assert_int_equal(type, BGP_KEEPALIVE);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame),
		cmocka_unit_test(test_open_round_trip),
		cmocka_unit_test(test_open_peer),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_update_ipv4),
		cmocka_unit_test(test_update_ipv6_and_eor),
		cmocka_unit_test(test_eor_build),
		cmocka_unit_test(test_update_ext_nexthop_and_addpath),
		cmocka_unit_test(test_update_long_as_path_and_64k),
		cmocka_unit_test(test_update_rfc7606),
		cmocka_unit_test(test_update_reset),
		cmocka_unit_test(test_notification),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
