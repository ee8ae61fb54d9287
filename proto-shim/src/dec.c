/*
 * proto-shim decoder.
 *
 * Two stages, neither of which allocates from a count on the wire:
 *
 * 1. The framer walks msgpack headers as bytes arrive and finds where one
 *    message ends. It is resumable (a stack of remaining element counts, at most
 *    PS_DEPTH_MAX deep), so a byte-at-a-time stream costs O(n) in total. It
 *    refuses a message as soon as a header shows that it would exceed the size
 *    limit, or nests too deep, or is not a [type, body] array.
 *
 * 2. The reader decodes one complete message straight into struct ps_msg,
 *    checking every type, duplicate key and range, skipping unknown keys, then
 *    runs ps_msg_validate. Strings that are not copied borrow the read buffer.
 *
 * msgpack-c's own unpacker is not used here: it allocates object storage from the
 * element counts in a header before any of those elements have arrived, which
 * lets a 5-byte message claim gigabytes. Nor is its packer, in enc.c.
 *
 * The read buffer: [0, start) consumed, [start, scan) framed part of the current
 * message, [scan, len) received but not yet framed, [len, cap) free.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proto-shim/dec.h>

#include "internal.h"

#define DEC_READ_DEFAULT 65536

struct ps_dec {
	uint8_t *buf;
	size_t cap;
	size_t len;
	size_t start;
	size_t scan;
	size_t max_msg;
	/* framer state: remaining elements per open container */
	unsigned depth;
	uint32_t left[PS_DEPTH_MAX + 1];
	int failed; /* 0, or the negative errno returned ever after */
	struct ps_fault fault;
	struct ps_msg msg;
};

/* ---- msgpack header parsing, shared by the framer and the reader ---- */

enum mp_kind { MP_NIL, MP_BOOL, MP_UINT, MP_NINT, MP_FLOAT, MP_STR, MP_BIN, MP_ARRAY, MP_MAP, MP_EXT };

struct mp_hdr {
	enum mp_kind kind;
	unsigned hlen;    /* header bytes */
	uint64_t payload; /* bytes following the header that belong to this object */
	uint64_t count;   /* array elements, or map keys + values */
	uint64_t u;       /* value of UINT and BOOL */
};

static uint64_t
be(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

/*
 * Parse the header at p. Returns 1 with *h filled, 0 if more bytes are needed for
 * the header itself, -1 for the reserved byte 0xc1.
 */
static int
mp_header(const uint8_t *p, size_t avail, struct mp_hdr *h)
{
	uint8_t b;
	unsigned n = 0; /* bytes of length or value after the type byte */

	if (avail < 1)
		return 0;
	b = p[0];
	memset(h, 0, sizeof(*h));
	h->hlen = 1;
	if (b <= 0x7f) {
		h->kind = MP_UINT;
		h->u = b;
		return 1;
	}
	if (b >= 0xe0) {
		h->kind = MP_NINT;
		return 1;
	}
	if ((b & 0xf0) == 0x80) {
		h->kind = MP_MAP;
		h->count = 2u * (b & 0x0f);
		return 1;
	}
	if ((b & 0xf0) == 0x90) {
		h->kind = MP_ARRAY;
		h->count = b & 0x0f;
		return 1;
	}
	if ((b & 0xe0) == 0xa0) {
		h->kind = MP_STR;
		h->payload = b & 0x1f;
		return 1;
	}
	switch (b) {
	case 0xc0:
		h->kind = MP_NIL;
		return 1;
	case 0xc2:
	case 0xc3:
		h->kind = MP_BOOL;
		h->u = b == 0xc3;
		return 1;
	case 0xc4: case 0xc5: case 0xc6:
		h->kind = MP_BIN;
		n = 1u << (b - 0xc4);
		break;
	case 0xc7: case 0xc8: case 0xc9:
		h->kind = MP_EXT;
		n = 1u << (b - 0xc7);
		break;
	case 0xca:
		h->kind = MP_FLOAT;
		h->payload = 4;
		return 1;
	case 0xcb:
		h->kind = MP_FLOAT;
		h->payload = 8;
		return 1;
	case 0xcc: case 0xcd: case 0xce: case 0xcf:
		h->kind = MP_UINT;
		n = 1u << (b - 0xcc);
		break;
	case 0xd0: case 0xd1: case 0xd2: case 0xd3:
		h->kind = MP_NINT; /* refined below: a signed encoding of a value >= 0 */
		n = 1u << (b - 0xd0);
		break;
	case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
		h->kind = MP_EXT;
		h->payload = 1 + (1u << (b - 0xd4));
		h->hlen = 1;
		return 1;
	case 0xd9: case 0xda: case 0xdb:
		h->kind = MP_STR;
		n = 1u << (b - 0xd9);
		break;
	case 0xdc: case 0xdd:
		h->kind = MP_ARRAY;
		n = b == 0xdc ? 2 : 4;
		break;
	case 0xde: case 0xdf:
		h->kind = MP_MAP;
		n = b == 0xde ? 2 : 4;
		break;
	default: /* 0xc1, never used */
		return -1;
	}
	if (avail < 1 + n)
		return 0;
	h->hlen = 1 + n;
	switch (h->kind) {
	case MP_BIN:
	case MP_STR:
		h->payload = be(p + 1, n);
		break;
	case MP_EXT:
		if (avail < 2 + n)
			return 0;
		h->hlen = 2 + n; /* length, then the ext type byte */
		h->payload = be(p + 1, n);
		break;
	case MP_UINT:
		h->u = be(p + 1, n);
		break;
	case MP_NINT: {
		/* Signed encodings of non-negative values are accepted as unsigned. */
		uint64_t raw = be(p + 1, n);
		if (!(raw & (1ull << (8 * n - 1)))) {
			h->kind = MP_UINT;
			h->u = raw;
		}
		break;
	}
	case MP_ARRAY:
		h->count = be(p + 1, n);
		break;
	case MP_MAP:
		h->count = 2 * be(p + 1, n);
		break;
	default:
		break;
	}
	return 1;
}

/* ---- framer ---- */

static int
dec_fail(struct ps_dec *d, int err, int code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int
dec_fail(struct ps_dec *d, int err, int code, const char *field, const char *fmt, ...)
{
	va_list ap;

	d->failed = err;
	d->fault.code = code;
	d->fault.field = field;
	va_start(ap, fmt);
	vsnprintf(d->fault.text, sizeof(d->fault.text), fmt, ap);
	va_end(ap);
	return err;
}

/*
 * Advance the framer over the bytes received. Returns 1 when [start, scan) is
 * one complete message, 0 if more bytes are needed, or a negative errno.
 */
static int
frame(struct ps_dec *d)
{
	for (;;) {
		struct mp_hdr h;
		size_t used = d->scan - d->start;
		uint64_t extent;
		int r;

		r = mp_header(d->buf + d->scan, d->len - d->scan, &h);
		if (r < 0)
			return dec_fail(d, -EBADMSG, PS_E_MALFORMED, "",
			    "byte 0xc1 at offset %zu is not msgpack", used);
		if (r == 0)
			return 0;
		if (d->depth == 0) {
			/* The first object of a message: it must be [type, body]. */
			if (h.kind != MP_ARRAY || h.count != 2)
				return dec_fail(d, -EBADMSG, PS_E_MALFORMED, "",
				    "message is not a [type, body] array");
		}
		extent = used + h.hlen + h.payload;
		if (extent > d->max_msg || h.count > d->max_msg - used)
			return dec_fail(d, -EMSGSIZE, PS_E_TOO_LARGE, "",
			    "message exceeds the limit of %zu bytes", d->max_msg);
		if (d->start + extent > d->len)
			return 0; /* the string or binary body is not all here yet */
		d->scan = d->start + (size_t)extent;
		if (d->depth > 0)
			d->left[d->depth]--;
		if ((h.kind == MP_ARRAY || h.kind == MP_MAP) && h.count > 0) {
			if (d->depth >= PS_DEPTH_MAX)
				return dec_fail(d, -EBADMSG, PS_E_MALFORMED, "",
				    "message nests deeper than %d levels", PS_DEPTH_MAX);
			d->left[++d->depth] = (uint32_t)h.count;
		}
		while (d->depth > 0 && d->left[d->depth] == 0)
			d->depth--;
		if (d->depth == 0)
			return 1;
	}
}

/* ---- reader: one complete message ---- */

struct rd {
	const uint8_t *p;
	const uint8_t *end;
	struct ps_fault *fault;
	const char *field; /* the field being read, for error text */
};

static int
rd_fail(struct rd *r, const char *what)
{
	ps_fault_set(r->fault, PS_E_FIELD, r->field, "%s %s", r->field, what);
	return -EBADMSG;
}

static int
rd_hdr(struct rd *r, struct mp_hdr *h)
{
	if (mp_header(r->p, (size_t)(r->end - r->p), h) <= 0 ||
	    h->payload > (uint64_t)(r->end - r->p) - h->hlen) {
		ps_fault_set(r->fault, PS_E_MALFORMED, r->field, "message is truncated");
		return -EBADMSG;
	}
	r->p += h->hlen;
	return 0;
}

static int
rd_skip(struct rd *r, unsigned depth)
{
	struct mp_hdr h;

	if (rd_hdr(r, &h) < 0)
		return -EBADMSG;
	r->p += h.payload;
	if (h.count && depth >= PS_DEPTH_MAX)
		return rd_fail(r, "nests too deep");
	for (uint64_t i = 0; i < h.count; i++)
		if (rd_skip(r, depth + 1) < 0)
			return -EBADMSG;
	return 0;
}

static int
rd_uint(struct rd *r, uint64_t max, uint64_t *ret)
{
	struct mp_hdr h;

	if (rd_hdr(r, &h) < 0)
		return -EBADMSG;
	if (h.kind != MP_UINT)
		return rd_fail(r, "is not an unsigned integer");
	if (h.u > max) {
		ps_fault_set(r->fault, PS_E_FIELD, r->field, "%s %llu is over %llu", r->field,
		    (unsigned long long)h.u, (unsigned long long)max);
		return -EBADMSG;
	}
	*ret = h.u;
	return 0;
}

#define RD_UINT(r, max, dst)                                                                  \
	({                                                                                    \
		uint64_t v_;                                                                  \
		int rc_ = rd_uint((r), (max), &v_);                                           \
		if (rc_ == 0)                                                                 \
			(dst) = (__typeof__(dst))v_;                                          \
		rc_;                                                                          \
	})

static int
rd_bool(struct rd *r, uint8_t *ret)
{
	struct mp_hdr h;

	if (rd_hdr(r, &h) < 0)
		return -EBADMSG;
	if (h.kind != MP_BOOL)
		return rd_fail(r, "is not a boolean");
	*ret = (uint8_t)h.u;
	return 0;
}

/* A str (or, for want_bin, a bin) of at most max bytes, borrowed. */
static int
rd_bytes(struct rd *r, bool want_bin, size_t max, struct ps_str *ret)
{
	struct mp_hdr h;

	if (rd_hdr(r, &h) < 0)
		return -EBADMSG;
	if (h.kind != (want_bin ? MP_BIN : MP_STR))
		return rd_fail(r, want_bin ? "is not binary" : "is not a string");
	if (h.payload > max) {
		ps_fault_set(r->fault, PS_E_FIELD, r->field, "%s is longer than %zu bytes",
		    r->field, max);
		return -EBADMSG;
	}
	ret->ptr = (const char *)r->p;
	ret->len = (uint32_t)h.payload;
	r->p += h.payload;
	return 0;
}

/* A string copied into dst[cap], NUL-terminated; at most cap - 1 bytes, no NUL inside. */
static int
rd_strcpy(struct rd *r, char *dst, size_t cap)
{
	struct ps_str s;

	if (rd_bytes(r, false, cap - 1, &s) < 0)
		return -EBADMSG;
	if (memchr(s.ptr, '\0', s.len))
		return rd_fail(r, "holds a NUL byte");
	memcpy(dst, s.ptr, s.len);
	dst[s.len] = '\0';
	return 0;
}

/* An address of a wire family: bin of 4 or 16 bytes. */
static int
rd_addr(struct rd *r, union ps_addr *a, uint8_t *ret_fam)
{
	struct ps_str s;

	if (rd_bytes(r, true, 16, &s) < 0)
		return -EBADMSG;
	if (s.len != 4 && s.len != 16)
		return rd_fail(r, "is not 4 (IPv4) or 16 (IPv6) bytes long");
	memset(a, 0, sizeof(*a));
	memcpy(a->b, s.ptr, s.len);
	*ret_fam = s.len == 4 ? PS_FAM_V4 : PS_FAM_V6;
	return 0;
}

static int
rd_container(struct rd *r, enum mp_kind kind, uint64_t max, uint64_t *ret_n)
{
	struct mp_hdr h;

	if (rd_hdr(r, &h) < 0)
		return -EBADMSG;
	if (h.kind != kind)
		return rd_fail(r, kind == MP_MAP ? "is not a map" : "is not an array");
	if (kind == MP_MAP)
		h.count /= 2;
	if (h.count > max) {
		ps_fault_set(r->fault, PS_E_FIELD, r->field, "%s has %llu entries, over %llu",
		    r->field, (unsigned long long)h.count, (unsigned long long)max);
		return -EBADMSG;
	}
	*ret_n = h.count;
	return 0;
}

/*
 * Map iteration: for each entry, read the key and reject duplicates among the
 * tracked keys. The callback reads the value of a known key, or returns 1 to have
 * it skipped.
 */
typedef int (*rd_field_cb)(struct rd *r, unsigned key, void *ctx);

static int
rd_map(struct rd *r, const char *name, uint64_t *ret_seen, rd_field_cb cb, void *ctx,
    unsigned depth)
{
	uint64_t n, seen = 0;

	r->field = name;
	if (rd_container(r, MP_MAP, UINT32_MAX, &n) < 0)
		return -EBADMSG;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t key;
		int rc;

		r->field = "key";
		if (rd_uint(r, UINT64_MAX, &key) < 0) {
			ps_fault_set(r->fault, PS_E_MALFORMED, name,
			    "%s has a key that is not an unsigned integer", name);
			return -EBADMSG;
		}
		if (key < K_TRACKED) {
			if (seen & (1ull << key)) {
				ps_fault_set(r->fault, PS_E_MALFORMED, name,
				    "%s has key %llu twice", name, (unsigned long long)key);
				return -EBADMSG;
			}
			seen |= 1ull << key;
		}
		rc = key < K_TRACKED ? cb(r, (unsigned)key, ctx) : 1;
		if (rc < 0)
			return rc;
		if (rc > 0 && rd_skip(r, depth + 1) < 0)
			return -EBADMSG;
	}
	*ret_seen = seen;
	return 0;
}

static int
require(struct rd *r, uint64_t seen, unsigned key, const char *field)
{
	if (!(seen & (1ull << key))) {
		ps_fault_set(r->fault, PS_E_FIELD, field, "%s is missing", field);
		return -EBADMSG;
	}
	return 0;
}

/* ---- message bodies ---- */

static int
hello_field(struct rd *r, unsigned key, void *ctx)
{
	struct ps_hello *h = ctx;
	uint64_t n, v;

	switch (key) {
	case K_HELLO_VERSIONS:
		r->field = "versions";
		if (rd_container(r, MP_ARRAY, PS_VERSIONS_MAX, &n) < 0)
			return -EBADMSG;
		h->n_versions = (uint8_t)n;
		for (uint64_t i = 0; i < n; i++)
			if (RD_UINT(r, 255, h->versions[i]) < 0)
				return -EBADMSG;
		return 0;
	case K_HELLO_ROLE:
		r->field = "role";
		return RD_UINT(r, 255, h->role);
	case K_HELLO_NAME:
		r->field = "name";
		return rd_strcpy(r, h->name, sizeof(h->name));
	case K_HELLO_TABLE:
		r->field = "table";
		h->has |= PS_HELLO_TABLE;
		return RD_UINT(r, UINT32_MAX, h->table);
	case K_HELLO_FAMILIES:
		r->field = "families";
		h->has |= PS_HELLO_FAMILIES;
		if (rd_container(r, MP_ARRAY, 2, &n) < 0)
			return -EBADMSG;
		for (uint64_t i = 0; i < n; i++) {
			if (rd_uint(r, 255, &v) < 0)
				return -EBADMSG;
			if (v != PS_FAM_V4 && v != PS_FAM_V6)
				return rd_fail(r, "holds a family that is not 4 or 6");
			h->families |= v == PS_FAM_V4 ? PS_HELLO_FAM_V4 : PS_HELLO_FAM_V6;
		}
		return 0;
	case K_HELLO_METRIC:
		r->field = "metric";
		h->has |= PS_HELLO_METRIC;
		return RD_UINT(r, UINT32_MAX, h->metric);
	case K_HELLO_PROTOCOL:
		r->field = "protocol";
		h->has |= PS_HELLO_PROTOCOL;
		return RD_UINT(r, 255, h->protocol);
	case K_HELLO_STALE:
		r->field = "stale_time";
		h->has |= PS_HELLO_STALE;
		return RD_UINT(r, UINT32_MAX, h->stale_time);
	case K_HELLO_PERSIST:
		r->field = "persist";
		h->has |= PS_HELLO_PERSIST;
		return rd_bool(r, &h->persist);
	case K_HELLO_LEARN:
		r->field = "learn";
		h->has |= PS_HELLO_LEARN;
		return rd_bool(r, &h->learn);
	case K_HELLO_RESULTS:
		r->field = "results";
		h->has |= PS_HELLO_RESULTS;
		return RD_UINT(r, 255, h->results);
	case K_HELLO_REFRESH:
		r->field = "refresh";
		h->has |= PS_HELLO_REFRESH;
		return rd_bool(r, &h->refresh);
	}
	return 1;
}

/*
 * Everything a route-like map carries besides its key. The prefix's byte length
 * is remembered (4 or 16) so that it can be checked against the family after the
 * map is read, whatever order the keys came in.
 */
struct route_ctx {
	struct ps_route *rt;
	struct ps_key *key;
	unsigned prefix_len;
	unsigned prefsrc_len;
	unsigned depth;
	/* ROUTE_STATUS results */
	struct ps_status_entry *st;
};

static int
key_field(struct rd *r, unsigned key, struct route_ctx *c)
{
	struct ps_key *k = c->key;
	uint8_t fam;

	switch (key) {
	case K_RT_TABLE:
		r->field = "table";
		k->has |= PS_KEY_TABLE;
		return RD_UINT(r, UINT32_MAX, k->table);
	case K_RT_FAMILY:
		r->field = "family";
		return RD_UINT(r, 255, k->family);
	case K_RT_PREFIX:
		r->field = "prefix";
		if (rd_addr(r, &k->prefix, &fam) < 0)
			return -EBADMSG;
		/* Checked against the family in finish_key, whatever the key order. */
		c->prefix_len = ps_fam_len(fam);
		return 0;
	case K_RT_PLEN:
		r->field = "plen";
		return RD_UINT(r, 255, k->plen);
	case K_RT_TOS:
		r->field = "tos";
		k->has |= PS_KEY_TOS;
		return RD_UINT(r, 255, k->tos);
	case K_RT_METRIC:
		r->field = "metric";
		k->has |= PS_KEY_METRIC;
		return RD_UINT(r, UINT32_MAX, k->metric);
	}
	return 1;
}

static int
nexthop_field(struct rd *r, unsigned key, void *ctx)
{
	struct ps_nexthop *nh = ctx;

	switch (key) {
	case K_NH_GATEWAY:
		r->field = "gateway";
		return rd_addr(r, &nh->gw, &nh->gw_family);
	case K_NH_IFNAME:
		r->field = "ifname";
		return rd_strcpy(r, nh->ifname, sizeof(nh->ifname));
	case K_NH_WEIGHT:
		r->field = "weight";
		return RD_UINT(r, UINT16_MAX, nh->weight);
	case K_NH_FLAGS:
		r->field = "flags";
		return RD_UINT(r, 255, nh->flags);
	}
	return 1;
}

static int
route_field(struct rd *r, unsigned key, void *vctx)
{
	struct route_ctx *c = vctx;
	struct ps_route *rt = c->rt;
	uint64_t n, seen;
	uint8_t fam;

	if (key <= K_RT_METRIC)
		return key_field(r, key, c);
	if (c->st) {
		switch (key) {
		case K_ST_STATE:
			r->field = "state";
			return RD_UINT(r, 255, c->st->state);
		case K_ST_ERRNO:
			r->field = "errno";
			return RD_UINT(r, UINT16_MAX, c->st->error);
		case K_ST_TEXT:
			r->field = "text";
			return rd_bytes(r, false, PS_TEXT_MAX, &c->st->text);
		}
		return 1;
	}
	switch (key) {
	case K_RT_TYPE:
		r->field = "type";
		return RD_UINT(r, 255, rt->type);
	case K_RT_NEXTHOPS:
		r->field = "nexthops";
		if (rd_container(r, MP_ARRAY, PS_NEXTHOPS_MAX, &n) < 0)
			return -EBADMSG;
		rt->n_nexthops = (uint16_t)n;
		for (uint64_t i = 0; i < n; i++) {
			struct ps_nexthop *nh = &rt->nh[i];
			memset(nh, 0, sizeof(*nh));
			nh->weight = 1;
			if (rd_map(r, "nexthop", &seen, nexthop_field, nh, c->depth + 2) < 0)
				return -EBADMSG;
		}
		return 0;
	case K_RT_PREFSRC:
		r->field = "prefsrc";
		rt->has |= PS_RA_PREFSRC;
		if (rd_addr(r, &rt->prefsrc, &fam) < 0)
			return -EBADMSG;
		c->prefsrc_len = fam == PS_FAM_V4 ? 4 : 16;
		return 0;
	case K_RT_REALM:
		r->field = "realm";
		rt->has |= PS_RA_REALM;
		return RD_UINT(r, UINT32_MAX, rt->realm);
	case K_RT_SCOPE:
		r->field = "scope";
		rt->has |= PS_RA_SCOPE;
		return RD_UINT(r, 255, rt->scope);
	case K_RT_MTU:
		r->field = "mtu";
		rt->has |= PS_RA_MTU;
		return RD_UINT(r, UINT32_MAX, rt->mtu);
	case K_RT_PROTOCOL:
		r->field = "protocol";
		rt->has |= PS_RA_PROTOCOL;
		return RD_UINT(r, 255, rt->protocol);
	case K_RT_OP:
		r->field = "op";
		return RD_UINT(r, 255, rt->learn_op);
	}
	return 1;
}

/* Required key fields present, and address lengths matching the family. */
static int
finish_key(struct rd *r, const struct route_ctx *c, uint64_t seen)
{
	if (require(r, seen, K_RT_FAMILY, "family") < 0 ||
	    require(r, seen, K_RT_PREFIX, "prefix") < 0 ||
	    require(r, seen, K_RT_PLEN, "plen") < 0)
		return -EBADMSG;
	if (ps_fam_len(c->key->family) && c->prefix_len != ps_fam_len(c->key->family)) {
		ps_fault_set(r->fault, PS_E_FIELD, "prefix",
		    "prefix is %u bytes, not %u as family %u needs", c->prefix_len,
		    ps_fam_len(c->key->family), c->key->family);
		return -EBADMSG;
	}
	if (c->prefsrc_len && c->prefsrc_len != ps_fam_len(c->key->family)) {
		ps_fault_set(r->fault, PS_E_FIELD, "prefsrc",
		    "prefsrc is %u bytes, not %u as family %u needs", c->prefsrc_len,
		    ps_fam_len(c->key->family), c->key->family);
		return -EBADMSG;
	}
	return 0;
}

static int
rd_route(struct rd *r, struct ps_route *rt, bool learn)
{
	struct route_ctx c = { .rt = rt, .key = &rt->key, .depth = 1 };
	uint64_t seen;

	/* Clear only the head: the nexthop array is written entry by entry. */
	memset(rt, 0, offsetof(struct ps_route, nh));
	rt->type = PS_RT_UNICAST;
	if (rd_map(r, "body", &seen, route_field, &c, 1) < 0 || finish_key(r, &c, seen) < 0)
		return -EBADMSG;
	if (learn && require(r, seen, K_RT_OP, "op") < 0)
		return -EBADMSG;
	return 0;
}

static int
withdraw_field(struct rd *r, unsigned key, void *vctx)
{
	if (key > K_RT_METRIC)
		return 1;
	return key_field(r, key, vctx);
}

static int
status_results(struct rd *r, unsigned key, void *ctx)
{
	struct ps_status *s = ctx;
	uint64_t n, seen;

	if (key == K_STATUS_INSTALLED || key == K_STATUS_REMOVED) {
		r->field = key == K_STATUS_INSTALLED ? "installed" : "removed";
		s->has |= PS_STATUS_COUNTS;
		return key == K_STATUS_INSTALLED ? RD_UINT(r, UINT64_MAX, s->installed)
						 : RD_UINT(r, UINT64_MAX, s->removed);
	}
	if (key != K_STATUS_RESULTS)
		return 1;
	r->field = "results";
	if (rd_container(r, MP_ARRAY, PS_STATUS_MAX, &n) < 0)
		return -EBADMSG;
	s->n = (uint16_t)n;
	for (uint64_t i = 0; i < n; i++) {
		struct ps_status_entry *e = &s->e[i];
		struct route_ctx c = { .key = &e->key, .st = e, .depth = 2 };
		memset(e, 0, sizeof(*e));
		if (rd_map(r, "result", &seen, route_field, &c, 2) < 0 ||
		    finish_key(r, &c, seen) < 0 || require(r, seen, K_ST_STATE, "state") < 0)
			return -EBADMSG;
	}
	return 0;
}

static int
welcome_field(struct rd *r, unsigned key, void *ctx)
{
	struct ps_welcome *w = ctx;

	switch (key) {
	case K_WELCOME_VERSION:
		r->field = "version";
		return RD_UINT(r, 255, w->version);
	case K_WELCOME_SERVER_ID:
		r->field = "server_id";
		return rd_strcpy(r, w->server_id, sizeof(w->server_id));
	case K_WELCOME_EPOCH:
		r->field = "boot_epoch";
		return RD_UINT(r, UINT64_MAX, w->boot_epoch);
	}
	return 1;
}

static int
refresh_field(struct rd *r, unsigned key, void *ctx)
{
	struct ps_refresh *x = ctx;

	switch (key) {
	case K_REFRESH_TABLE:
		r->field = "table";
		return RD_UINT(r, UINT32_MAX, x->table);
	case K_REFRESH_FAMILY:
		r->field = "family";
		return RD_UINT(r, 255, x->family);
	case K_REFRESH_PHASE:
		r->field = "phase";
		return RD_UINT(r, 255, x->phase);
	}
	return 1;
}

static int
error_field(struct rd *r, unsigned key, void *ctx)
{
	struct ps_error *e = ctx;

	switch (key) {
	case K_ERROR_CODE:
		r->field = "code";
		return RD_UINT(r, UINT16_MAX, e->code);
	case K_ERROR_FIELD:
		r->field = "field";
		return rd_strcpy(r, e->field, sizeof(e->field));
	case K_ERROR_TEXT:
		r->field = "text";
		return rd_bytes(r, false, PS_TEXT_MAX, &e->text);
	}
	return 1;
}

/* Bodies of one unsigned field (PING, PONG, BYE, FEED_BEGIN, FEED_END). */
struct single_ctx {
	const char *name;
	uint64_t max;
	uint64_t v;
};

static int
single_uint(struct rd *r, unsigned key, void *ctx)
{
	struct single_ctx *s = ctx;

	if (key != K_SINGLE)
		return 1;
	r->field = s->name;
	return rd_uint(r, s->max, &s->v);
}

static int
single_text(struct rd *r, unsigned key, void *ctx)
{
	if (key != K_SINGLE)
		return 1;
	r->field = "reason";
	return rd_bytes(r, false, PS_TEXT_MAX, ctx);
}

static int
ctl_field(struct rd *r, unsigned key, void *ctx)
{
	struct ps_msg *m = ctx;
	uint64_t n;

	r->field = "req";
	switch (m->type) {
	case PS_CTL_REQUEST:
		switch (key) {
		case K_CTL_REQ:
			return RD_UINT(r, UINT32_MAX, m->u.ctl_request.req);
		case K_CTL_CMD:
			r->field = "cmd";
			return rd_strcpy(r, m->u.ctl_request.cmd, sizeof(m->u.ctl_request.cmd));
		case K_CTL_ARGS:
			r->field = "args";
			if (rd_container(r, MP_ARRAY, PS_CTL_ARGS_MAX, &n) < 0)
				return -EBADMSG;
			m->u.ctl_request.n_args = (uint8_t)n;
			for (uint64_t i = 0; i < n; i++)
				if (rd_bytes(r, false, PS_CTL_ARG_MAX, &m->u.ctl_request.args[i]) < 0)
					return -EBADMSG;
			return 0;
		case K_CTL_FLAGS:
			r->field = "flags";
			return RD_UINT(r, UINT32_MAX, m->u.ctl_request.flags);
		}
		return 1;
	case PS_CTL_CHUNK:
		if (key == K_CTL_REQ)
			return RD_UINT(r, UINT32_MAX, m->u.ctl_chunk.req);
		if (key != K_CHUNK_DATA)
			return 1;
		r->field = "data";
		return rd_bytes(r, true, PS_CHUNK_MAX, &m->u.ctl_chunk.data);
	case PS_CTL_END:
		if (key == K_CTL_REQ)
			return RD_UINT(r, UINT32_MAX, m->u.ctl_end.req);
		if (key == K_END_CODE) {
			r->field = "code";
			return RD_UINT(r, UINT16_MAX, m->u.ctl_end.code);
		}
		if (key == K_END_TEXT) {
			r->field = "text";
			return rd_bytes(r, false, PS_TEXT_MAX, &m->u.ctl_end.text);
		}
		return 1;
	}
	return 1;
}

static int
rd_body(struct rd *r, struct ps_msg *m)
{
	uint64_t seen = 0;
	struct single_ctx s = { 0 };

	switch (m->type) {
	case PS_HELLO:
		memset(&m->u.hello, 0, sizeof(m->u.hello));
		if (rd_map(r, "body", &seen, hello_field, &m->u.hello, 1) < 0)
			return -EBADMSG;
		if (require(r, seen, K_HELLO_VERSIONS, "versions") < 0 ||
		    require(r, seen, K_HELLO_ROLE, "role") < 0 ||
		    require(r, seen, K_HELLO_NAME, "name") < 0)
			return -EBADMSG;
		return 0;
	case PS_WELCOME:
		memset(&m->u.welcome, 0, sizeof(m->u.welcome));
		if (rd_map(r, "body", &seen, welcome_field, &m->u.welcome, 1) < 0)
			return -EBADMSG;
		if (require(r, seen, K_WELCOME_VERSION, "version") < 0 ||
		    require(r, seen, K_WELCOME_SERVER_ID, "server_id") < 0 ||
		    require(r, seen, K_WELCOME_EPOCH, "boot_epoch") < 0)
			return -EBADMSG;
		return 0;
	case PS_ERROR:
		memset(&m->u.error, 0, sizeof(m->u.error));
		if (rd_map(r, "body", &seen, error_field, &m->u.error, 1) < 0)
			return -EBADMSG;
		return require(r, seen, K_ERROR_CODE, "code");
	case PS_PING:
	case PS_PONG:
	case PS_FEED_BEGIN:
	case PS_FEED_END:
	case PS_BYE:
		s.name = m->type == PS_BYE ? "flags"
		    : (m->type == PS_PING || m->type == PS_PONG) ? "token"
								 : "generation";
		s.max = m->type == PS_BYE ? UINT32_MAX : UINT64_MAX;
		if (rd_map(r, "body", &seen, single_uint, &s, 1) < 0 ||
		    require(r, seen, K_SINGLE, s.name) < 0)
			return -EBADMSG;
		if (m->type == PS_BYE)
			m->u.bye_flags = (uint32_t)s.v;
		else if (m->type == PS_PING || m->type == PS_PONG)
			m->u.token = s.v;
		else
			m->u.generation = s.v;
		return 0;
	case PS_ROUTE:
		return rd_route(r, &m->u.route, false);
	case PS_LEARN:
		return rd_route(r, &m->u.route, true);
	case PS_WITHDRAW: {
		struct route_ctx c = { .key = &m->u.withdraw };
		memset(&m->u.withdraw, 0, sizeof(m->u.withdraw));
		if (rd_map(r, "body", &seen, withdraw_field, &c, 1) < 0)
			return -EBADMSG;
		return finish_key(r, &c, seen);
	}
	case PS_ROUTE_STATUS:
		m->u.status.n = 0;
		m->u.status.has = 0;
		m->u.status.installed = m->u.status.removed = 0;
		if (rd_map(r, "body", &seen, status_results, &m->u.status, 1) < 0)
			return -EBADMSG;
		if ((m->u.status.has & PS_STATUS_COUNTS) &&
		    (require(r, seen, K_STATUS_INSTALLED, "installed") < 0 ||
		     require(r, seen, K_STATUS_REMOVED, "removed") < 0))
			return -EBADMSG;
		return require(r, seen, K_STATUS_RESULTS, "results");
	case PS_REFEED:
		m->u.reason.ptr = NULL;
		m->u.reason.len = 0;
		return rd_map(r, "body", &seen, single_text, &m->u.reason, 1);
	case PS_LEARN_REFRESH:
		memset(&m->u.refresh, 0, sizeof(m->u.refresh));
		if (rd_map(r, "body", &seen, refresh_field, &m->u.refresh, 1) < 0 ||
		    require(r, seen, K_REFRESH_TABLE, "table") < 0 ||
		    require(r, seen, K_REFRESH_FAMILY, "family") < 0 ||
		    require(r, seen, K_REFRESH_PHASE, "phase") < 0)
			return -EBADMSG;
		return 0;
	case PS_CTL_REQUEST:
		memset(&m->u.ctl_request, 0, offsetof(struct ps_ctl_request, args));
		if (rd_map(r, "body", &seen, ctl_field, m, 1) < 0 ||
		    require(r, seen, K_CTL_REQ, "req") < 0 ||
		    require(r, seen, K_CTL_CMD, "cmd") < 0)
			return -EBADMSG;
		return 0;
	case PS_CTL_CHUNK:
		memset(&m->u.ctl_chunk, 0, sizeof(m->u.ctl_chunk));
		if (rd_map(r, "body", &seen, ctl_field, m, 1) < 0 ||
		    require(r, seen, K_CTL_REQ, "req") < 0 ||
		    require(r, seen, K_CHUNK_DATA, "data") < 0)
			return -EBADMSG;
		return 0;
	case PS_CTL_END:
		memset(&m->u.ctl_end, 0, sizeof(m->u.ctl_end));
		if (rd_map(r, "body", &seen, ctl_field, m, 1) < 0 ||
		    require(r, seen, K_CTL_REQ, "req") < 0 ||
		    require(r, seen, K_END_CODE, "code") < 0)
			return -EBADMSG;
		return 0;
	}
	ps_fault_set(r->fault, PS_E_UNKNOWN_TYPE, "type", "message type %u is not known",
	    m->type);
	return -EBADMSG;
}

/* Decode the complete message in [p, end) into m. */
static int
read_msg(const uint8_t *p, const uint8_t *end, struct ps_msg *m, struct ps_fault *fault)
{
	struct rd r = { p, end, fault, "message" };
	struct mp_hdr h;
	uint64_t type;

	if (rd_hdr(&r, &h) < 0)
		return -EBADMSG;
	if (h.kind != MP_ARRAY || h.count != 2) {
		ps_fault_set(fault, PS_E_MALFORMED, "", "message is not a [type, body] array");
		return -EBADMSG;
	}
	r.field = "type";
	if (rd_uint(&r, 255, &type) < 0) {
		ps_fault_set(fault, PS_E_MALFORMED, "type", "message type is not a small unsigned integer");
		return -EBADMSG;
	}
	m->type = (uint8_t)type;
	if (rd_body(&r, m) < 0)
		return -EBADMSG;
	if (r.p != end) {
		ps_fault_set(fault, PS_E_MALFORMED, "", "message has trailing bytes");
		return -EBADMSG;
	}
	if (ps_msg_validate(m, fault) < 0)
		return -EBADMSG;
	return 0;
}

/* ---- stream API ---- */

PS_EXPORT struct ps_dec *
ps_dec_new(size_t max_msg)
{
	struct ps_dec *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	if (max_msg == 0)
		max_msg = PS_MSG_MAX_DEFAULT;
	d->max_msg = max_msg < PS_MSG_MAX_FLOOR ? PS_MSG_MAX_FLOOR : max_msg;
	return d;
}

PS_EXPORT struct ps_dec *
ps_dec_free(struct ps_dec *d)
{
	if (d) {
		free(d->buf);
		free(d);
	}
	return NULL;
}

/* Forget the message returned last: its bytes are consumed. */
static void
release_done(struct ps_dec *d)
{
	if (d->depth == 0)
		d->start = d->scan;
}

/* Move the unconsumed bytes to the front of the buffer. */
static void
compact(struct ps_dec *d)
{
	release_done(d);
	if (d->start == 0)
		return;
	memmove(d->buf, d->buf + d->start, d->len - d->start);
	d->len -= d->start;
	d->scan -= d->start;
	d->start = 0;
}

PS_EXPORT int
ps_dec_reserve(struct ps_dec *d, size_t want, void **ret_ptr, size_t *ret_len)
{
	size_t need, cap;

	if (d->failed)
		return d->failed;
	if (want == 0)
		want = DEC_READ_DEFAULT;
	compact(d);
	/*
	 * The buffer never needs to hold more than one maximal message plus one read
	 * once complete messages are drained: a partial message longer than the limit
	 * is refused by the framer. A full buffer means the caller must drain first.
	 */
	if (d->len >= d->max_msg + DEC_READ_DEFAULT)
		return -ENOBUFS;
	if (want > d->max_msg + DEC_READ_DEFAULT - d->len)
		want = d->max_msg + DEC_READ_DEFAULT - d->len;
	need = d->len + want;
	if (need > d->cap) {
		uint8_t *nb;
		cap = d->cap ? d->cap : 4096;
		while (cap < need)
			cap *= 2;
		nb = realloc(d->buf, cap);
		if (!nb)
			return -ENOMEM;
		d->buf = nb;
		d->cap = cap;
	}
	*ret_ptr = d->buf + d->len;
	*ret_len = d->cap - d->len;
	return 0;
}

PS_EXPORT void
ps_dec_commit(struct ps_dec *d, size_t n)
{
	if (n > d->cap - d->len)
		n = d->cap - d->len;
	d->len += n;
}

PS_EXPORT int
ps_dec_feed(struct ps_dec *d, const void *data, size_t len)
{
	void *dst;
	size_t room;
	int r;

	if ((r = ps_dec_reserve(d, len, &dst, &room)) < 0)
		return r;
	if (room > len)
		room = len;
	if (room > INT_MAX)
		room = INT_MAX;
	memcpy(dst, data, room);
	ps_dec_commit(d, room);
	return (int)room;
}

PS_EXPORT int
ps_dec_next(struct ps_dec *d, const struct ps_msg **ret_msg)
{
	int r;

	if (d->failed)
		return d->failed;
	release_done(d);
	r = frame(d);
	if (r <= 0)
		return r;
	if (read_msg(d->buf + d->start, d->buf + d->scan, &d->msg, &d->fault) < 0) {
		d->failed = -EBADMSG;
		return d->failed;
	}
	*ret_msg = &d->msg;
	return 1;
}

PS_EXPORT const struct ps_fault *
ps_dec_fault(const struct ps_dec *d)
{
	return d->failed ? &d->fault : NULL;
}

PS_EXPORT size_t
ps_dec_pending(const struct ps_dec *d)
{
	return d->len - d->start;
}

PS_EXPORT int
ps_dec_one(const void *data, size_t len, size_t max_msg, struct ps_msg *ret_msg,
    struct ps_fault *ret_fault)
{
	struct ps_dec d = { 0 };
	int r;

	d.buf = (uint8_t *)(uintptr_t)data;
	d.len = d.cap = len;
	d.max_msg = max_msg ? max_msg : PS_MSG_MAX_DEFAULT;
	r = frame(&d);
	if (r < 0) {
		if (ret_fault)
			*ret_fault = d.fault;
		return r;
	}
	if (r == 0)
		return 0;
	if (read_msg(d.buf, d.buf + d.scan, ret_msg, ret_fault) < 0)
		return -EBADMSG;
	return (int)d.scan;
}
