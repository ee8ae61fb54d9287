/*
 * Fuzz target for fibd's BGP codec (libFuzzer entry point; the replay driver
 * runs the corpus in CI). Byte 0 chooses what the session agreed on (4-octet
 * AS, internal, the families, ADD-PATH per family, IPv4 over IPv6 next hops,
 * extended messages); the rest is read as a TCP stream of messages: each
 * framed by bgp_frame and its body read by the reader of its type.
 *
 * Beyond "no crash, no leak, no undefined behaviour": an UPDATE read as good
 * has runs of prefixes that walk to exactly their end, each prefix within its
 * family's length with no host bit set; a refusal names an RFC error code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bgp_msg.h"
#include "fuzz.h"

static void
walk(struct bgp_nlri n)
{
	struct bgp_prefix p;
	const uint8_t *end = n.end;

	while (bgp_nlri_next(&n, &p)) {
		unsigned max = p.fam == BGP_V4 ? 32 : 128;
		if (p.plen > max)
			abort();
		for (unsigned bit = p.plen; bit < 128; bit++)
			if (p.addr.b[bit / 8] & (0x80 >> (bit % 8)))
				abort();
	}
	if (n.p != end)
		abort();
}

static void
body(uint8_t type, const uint8_t *b, size_t len, const struct bgp_session_caps *c)
{
	struct bgp_error e;

	memset(&e, 0, sizeof(e));
	if (type == BGP_OPEN) {
		struct bgp_open o;
		if (bgp_open_parse(b, len, &o, &e) < 0 && (e.code < BGP_E_HEADER || e.code > BGP_E_OPEN))
			abort();
	} else if (type == BGP_UPDATE) {
		static struct bgp_update u;
		if (bgp_update_parse(b, len, c, &u, &e) < 0) {
			if (e.code != BGP_E_UPDATE)
				abort();
			return;
		}
		if (u.n_withdrawn > 2 || u.n_reach > 2)
			abort();
		for (unsigned i = 0; i < u.n_withdrawn; i++)
			walk(u.withdrawn[i]);
		for (unsigned i = 0; i < u.n_reach; i++) {
			if (u.nh_family[i] != PS_FAM_V4 && u.nh_family[i] != PS_FAM_V6)
				abort();
			walk(u.reach[i]);
		}
	} else if (type == BGP_NOTIFICATION) {
		uint8_t code, sub;
		char text[300];
		bgp_notification_parse(b, len, &code, &sub, text, sizeof(text));
		if (!memchr(text, 0, sizeof(text)))
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bgp_session_caps c;
	struct bgp_error e;
	size_t max, off = 1;

	if (size < 1)
		return 0;
	memset(&c, 0, sizeof(c));
	c.as4 = data[0] & 1;
	c.ibgp = data[0] & 2;
	c.fam[BGP_V4] = !(data[0] & 4);
	c.fam[BGP_V6] = !(data[0] & 8);
	c.addpath[BGP_V4] = data[0] & 16;
	c.addpath[BGP_V6] = data[0] & 32;
	c.ext_nh_v4 = data[0] & 64;
	max = data[0] & 128 ? BGP_EXT_MSG_MAX : BGP_MSG_MAX;
	while (off < size) {
		uint8_t type;
		int n = bgp_frame(data + off, size - off, max, &type, &e);
		if (n <= 0) {
			if (n < 0 && e.code != BGP_E_HEADER)
				abort();
			/* What a peer may send without a valid header: read it as an UPDATE body anyway. */
			body(BGP_UPDATE, data + off, size - off, &c);
			break;
		}
		body(type, data + off + BGP_HDR_LEN, (size_t)n - BGP_HDR_LEN, &c);
		off += (size_t)n;
	}
	return 0;
}
