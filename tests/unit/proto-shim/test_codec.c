/*
 * proto-shim codec tests: round trips of every message type with edge values,
 * any split of the stream, every validation failure, truncated, oversized and
 * malformed input, unknown keys skipped.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <msgpack.h>
#include <proto-shim/dec.h>
#include <proto-shim/enc.h>

#include "samples.h"

#define TEXT_MAX (2 * 1024 * 1024)

static char *
fmt(const struct ps_msg *m)
{
	size_t n = ps_msg_format(m, NULL, 0);
	char *s = malloc(n + 1);

	assert_non_null(s);
	assert_int_equal(ps_msg_format(m, s, n + 1), n);
	return s;
}

/* Encode, decode with ps_dec_one, compare text and re-encoded bytes. */
static void
test_roundtrip_every_sample(void **state)
{
	struct samples s;
	unsigned seen_types = 0;
	(void)state;

	samples_make(&s);
	for (unsigned i = 0; i < s.n; i++) {
		struct ps_buf a, b;
		struct ps_msg *out = malloc(sizeof(*out));
		struct ps_fault f;
		char *t1, *t2;
		int n;

		assert_non_null(out);
		ps_buf_init(&a);
		ps_buf_init(&b);
		n = ps_enc_msg(&a, s.m[i], &f);
		if (n < 0)
			fail_msg("%s: encode failed: %s", s.name[i], f.text);
		assert_int_equal((size_t)n, a.len);
		n = ps_dec_one(a.data, a.len, 0, out, &f);
		if (n < 0)
			fail_msg("%s: decode failed: %s (field %s)", s.name[i], f.text, f.field);
		assert_int_equal((size_t)n, a.len);
		t1 = fmt(s.m[i]);
		t2 = fmt(out);
		if (strcmp(t1, t2))
			fail_msg("%s: text differs:\n%.300s\n%.300s", s.name[i], t1, t2);
		assert_true(ps_enc_msg(&b, out, NULL) > 0);
		assert_int_equal(a.len, b.len);
		assert_memory_equal(a.data, b.data, a.len);
		seen_types |= 1u << (s.m[i]->type % 32);
		free(t1);
		free(t2);
		free(out);
		ps_buf_release(&a);
		ps_buf_release(&b);
	}
	/* Every message type is among the samples. */
	for (unsigned t = 0; t < 64; t++)
		if (ps_msg_type_name(t))
			assert_true(seen_types & (1u << (t % 32)));
	samples_free(&s);
}

/* Specific fields survive exactly, not only through the text form. */
static void
test_roundtrip_fields(void **state)
{
	struct samples s;
	struct ps_buf a;
	struct ps_msg *out = malloc(sizeof(*out));
	(void)state;

	assert_non_null(out);
	samples_make(&s);
	ps_buf_init(&a);
	for (unsigned i = 0; i < s.n; i++) {
		const struct ps_msg *m = s.m[i];
		a.len = 0;
		assert_true(ps_enc_msg(&a, m, NULL) > 0);
		assert_true(ps_dec_one(a.data, a.len, 0, out, NULL) > 0);
		assert_int_equal(out->type, m->type);
		if (!strcmp(s.name[i], "route-ecmp-256")) {
			assert_int_equal(out->u.route.n_nexthops, 256);
			for (unsigned k = 0; k < 256; k++) {
				assert_int_equal(out->u.route.nh[k].weight, k + 1);
				assert_memory_equal(out->u.route.nh[k].gw.b, m->u.route.nh[k].gw.b, 16);
				assert_string_equal(out->u.route.nh[k].ifname, m->u.route.nh[k].ifname);
			}
		} else if (!strcmp(s.name[i], "hello-full")) {
			assert_int_equal(out->u.hello.has, m->u.hello.has);
			assert_int_equal(out->u.hello.table, UINT32_MAX);
			assert_int_equal(out->u.hello.stale_time, PS_STALE_TIME_MAX);
			assert_int_equal(strlen(out->u.hello.name), PS_NAME_MAX);
			assert_int_equal(out->u.hello.n_versions, PS_VERSIONS_MAX);
			assert_int_equal(ps_version_pick(&out->u.hello), 1);
		} else if (!strcmp(s.name[i], "ctl-chunk-max")) {
			assert_int_equal(out->u.ctl_chunk.data.len, PS_CHUNK_MAX);
			assert_memory_equal(out->u.ctl_chunk.data.ptr, s.storage, PS_CHUNK_MAX);
		} else if (!strcmp(s.name[i], "welcome")) {
			assert_true(out->u.welcome.boot_epoch == UINT64_MAX);
		} else if (!strcmp(s.name[i], "route-status-256")) {
			assert_int_equal(out->u.status.n, 256);
			assert_int_equal(out->u.status.e[255].key.metric, 255);
			assert_int_equal(out->u.status.e[2].error, 101);
			assert_int_equal(out->u.status.e[2].text.len, PS_TEXT_MAX);
		}
	}
	ps_buf_release(&a);
	samples_free(&s);
	free(out);
}

/* All samples back to back in one stream, and the text of each, in order. */
static void
stream_of_samples(struct ps_buf *stream, char ***ret_texts, unsigned *ret_n)
{
	struct samples s;
	char **texts;

	samples_make(&s);
	texts = calloc(s.n, sizeof(*texts));
	assert_non_null(texts);
	ps_buf_init(stream);
	for (unsigned i = 0; i < s.n; i++) {
		assert_true(ps_enc_msg(stream, s.m[i], NULL) > 0);
		texts[i] = fmt(s.m[i]);
	}
	*ret_texts = texts;
	*ret_n = s.n;
	samples_free(&s);
}

/*
 * Feed the stream in pieces whose sizes come from next_size, draining messages
 * after every piece; every message must come out once, in order, intact.
 */
static void
decode_in_pieces(const struct ps_buf *stream, char **texts, unsigned n,
    size_t (*next_size)(void *), void *ctx)
{
	struct ps_dec *d = ps_dec_new(0);
	size_t off = 0;
	unsigned got = 0;

	assert_non_null(d);
	while (off < stream->len || got < n) {
		const struct ps_msg *m;
		int r;

		if (off < stream->len) {
			size_t piece = next_size(ctx);
			if (piece > stream->len - off)
				piece = stream->len - off;
			r = ps_dec_feed(d, stream->data + off, piece);
			assert_true(r >= 0);
			off += (size_t)r;
		}
		while ((r = ps_dec_next(d, &m)) == 1) {
			char *t = fmt(m);
			assert_true(got < n);
			if (strcmp(t, texts[got]))
				fail_msg("message %u differs:\n%.200s\n%.200s", got, t, texts[got]);
			free(t);
			got++;
		}
		assert_int_equal(r, 0);
		if (off == stream->len && got < n)
			fail_msg("stream ended after %u of %u messages", got, n);
	}
	assert_int_equal(ps_dec_pending(d), 0);
	ps_dec_free(d);
}

static size_t
size_one(void *ctx)
{
	(void)ctx;
	return 1;
}

static size_t
size_all(void *ctx)
{
	(void)ctx;
	return SIZE_MAX;
}

static size_t
size_random(void *ctx)
{
	unsigned *seed = ctx;
	unsigned r = (unsigned)rand_r(seed);

	/* Mostly small pieces, sometimes large ones that span messages. */
	return (r % 4 == 0) ? 1 + r % 300000 : 1 + r % 97;
}

static void
test_stream_splits(void **state)
{
	struct ps_buf stream;
	char **texts;
	unsigned n;
	(void)state;

	stream_of_samples(&stream, &texts, &n);
	decode_in_pieces(&stream, texts, n, size_all, NULL);
	decode_in_pieces(&stream, texts, n, size_one, NULL);
	for (unsigned seed = 1; seed <= 40; seed++) {
		unsigned s = seed;
		decode_in_pieces(&stream, texts, n, size_random, &s);
	}
	for (unsigned i = 0; i < n; i++)
		free(texts[i]);
	free(texts);
	ps_buf_release(&stream);
}

/* The reserve/commit path as a socket reader uses it, over 20,000 routes. */
static void
test_stream_reserve_commit(void **state)
{
	struct ps_buf stream;
	struct ps_msg *m = malloc(sizeof(*m));
	struct ps_dec *d = ps_dec_new(0);
	size_t off = 0;
	unsigned got = 0;
	(void)state;

	assert_non_null(m);
	ps_buf_init(&stream);
	for (unsigned i = 0; i < 20000; i++) {
		char p[32];
		snprintf(p, sizeof(p), "10.%u.%u.0", i / 256, i % 256);
		sample_route_v4(m, p, 24, "198.51.100.1", "veth0");
		m->u.route.key.has = PS_KEY_METRIC;
		m->u.route.key.metric = i;
		assert_true(ps_enc_msg(&stream, m, NULL) > 0);
	}
	while (off < stream.len) {
		void *dst;
		size_t room, n;
		const struct ps_msg *out;

		assert_int_equal(ps_dec_reserve(d, 0, &dst, &room), 0);
		assert_true(room >= 4096);
		n = room < stream.len - off ? room : stream.len - off;
		if (n > 10007)
			n = 10007; /* an odd read size, so messages straddle reads */
		memcpy(dst, stream.data + off, n);
		ps_dec_commit(d, n);
		off += n;
		while (ps_dec_next(d, &out) == 1) {
			assert_int_equal(out->type, PS_ROUTE);
			assert_int_equal(out->u.route.key.metric, got);
			got++;
		}
	}
	assert_int_equal(got, 20000);
	ps_dec_free(d);
	ps_buf_release(&stream);
	free(m);
}

/* Every strict prefix of a valid message is "need more", never an error. */
static void
test_truncated(void **state)
{
	struct samples s;
	struct ps_msg *out = malloc(sizeof(*out));
	(void)state;

	assert_non_null(out);
	samples_make(&s);
	for (unsigned i = 0; i < s.n; i++) {
		struct ps_buf a;
		size_t step;
		ps_buf_init(&a);
		assert_true(ps_enc_msg(&a, s.m[i], NULL) > 0);
		step = a.len > 5000 ? 997 : 1; /* large messages: a sample of prefixes */
		for (size_t cut = 0; cut < a.len; cut += step) {
			struct ps_fault f;
			int r = ps_dec_one(a.data, cut, 0, out, &f);
			if (r != 0)
				fail_msg("%s cut at %zu/%zu: %d %s", s.name[i], cut, a.len, r,
				    r < 0 ? f.text : "");
		}
		ps_buf_release(&a);
	}
	samples_free(&s);
	free(out);
}

/* ---- raw msgpack, to build messages the encoder would refuse ---- */

struct raw {
	msgpack_sbuffer sb;
	msgpack_packer pk;
};

static void
raw_init(struct raw *r)
{
	msgpack_sbuffer_init(&r->sb);
	msgpack_packer_init(&r->pk, &r->sb, msgpack_sbuffer_write);
}

static void
raw_free(struct raw *r)
{
	msgpack_sbuffer_destroy(&r->sb);
}

static void
raw_u(struct raw *r, uint64_t v)
{
	msgpack_pack_uint64(&r->pk, v);
}

static void
raw_bin(struct raw *r, const void *p, size_t n)
{
	msgpack_pack_bin_with_body(&r->pk, p, n);
}

static void
raw_str(struct raw *r, const char *s)
{
	msgpack_pack_str_with_body(&r->pk, s, strlen(s));
}

/* The head of a message: [type, a map of that many fields]; the fields follow. */
static void
raw_head(struct raw *r, uint64_t type, unsigned fields)
{
	msgpack_pack_array(&r->pk, 2);
	raw_u(r, type);
	msgpack_pack_map(&r->pk, fields);
}

/* Decode raw bytes: expect an error with this code and field (field NULL: any). */
static void
expect_fault(const struct raw *r, int err, int code, const char *field, const char *what)
{
	struct ps_msg *out = malloc(sizeof(*out));
	struct ps_fault f;
	struct ps_dec *d = ps_dec_new(0);
	const struct ps_msg *m;
	int rc;

	assert_non_null(out);
	memset(&f, 0, sizeof(f));
	rc = ps_dec_one(r->sb.data, r->sb.size, 0, out, &f);
	if (rc != err)
		fail_msg("%s: ps_dec_one returned %d, expected %d", what, rc, err);
	if (f.code != code || (field && strcmp(f.field, field)))
		fail_msg("%s: fault code %d field '%s' (%s), expected %d '%s'", what, f.code,
		    f.field, f.text, code, field ? field : "*");
	assert_true(f.text[0] != '\0');

	/* The streaming decoder fails the same way, and stays failed. */
	assert_true(ps_dec_feed(d, r->sb.data, r->sb.size) >= 0);
	rc = ps_dec_next(d, &m);
	assert_int_equal(rc, err);
	assert_non_null(ps_dec_fault(d));
	assert_int_equal(ps_dec_fault(d)->code, code);
	assert_int_equal(ps_dec_next(d, &m), err);
	ps_dec_free(d);
	free(out);
}

/* A ROUTE body with an overridable field: `skip` omits a key, `over` replaces it. */
struct route_spec {
	unsigned skip;
	unsigned over;
	void (*write)(struct raw *r);
	unsigned extra;  /* add this key (after the others) with write_extra */
	void (*write_extra)(struct raw *r);
};

static const uint8_t prefix_v4[4] = { 192, 0, 2, 0 };
static const uint8_t gw_v4[4] = { 198, 51, 100, 1 };

static void
raw_route(struct raw *r, const struct route_spec *sp)
{
	unsigned keys[] = { 2, 3, 4, 8 };
	unsigned n = 0;

	for (unsigned i = 0; i < 4; i++)
		n += keys[i] != sp->skip;
	n += !!sp->extra;
	raw_head(r, PS_ROUTE, n);
	for (unsigned i = 0; i < 4; i++) {
		unsigned k = keys[i];
		if (k == sp->skip)
			continue;
		raw_u(r, k);
		if (k == sp->over) {
			sp->write(r);
			continue;
		}
		switch (k) {
		case 2:
			raw_u(r, 4);
			break;
		case 3:
			raw_bin(r, prefix_v4, 4);
			break;
		case 4:
			raw_u(r, 24);
			break;
		case 8:
			msgpack_pack_array(&r->pk, 1);
			msgpack_pack_map(&r->pk, 2);
			raw_u(r, 1);
			raw_bin(r, gw_v4, 4);
			raw_u(r, 2);
			raw_str(r, "veth0");
			break;
		}
	}
	if (sp->extra) {
		raw_u(r, sp->extra);
		sp->write_extra(r);
	}
}

static void w_plen33(struct raw *r) { raw_u(r, 33); }
static void w_plen_big(struct raw *r) { raw_u(r, 300); }
static void w_fam5(struct raw *r) { raw_u(r, 5); }
static void w_prefix_host(struct raw *r) { static const uint8_t p[4] = { 192, 0, 2, 1 }; raw_bin(r, p, 4); }
static void w_prefix_len5(struct raw *r) { static const uint8_t p[5] = { 0 }; raw_bin(r, p, 5); }
static void w_prefix_v6(struct raw *r) { static const uint8_t p[16] = { 0x20, 1, 0xd, 0xb8 }; raw_bin(r, p, 16); }
static void w_prefix_str(struct raw *r) { raw_str(r, "192.0.2.0"); }
static void w_neg(struct raw *r) { msgpack_pack_int64(&r->pk, -1); }
static void w_nil(struct raw *r) { msgpack_pack_nil(&r->pk); }
static void w_type9(struct raw *r) { raw_u(r, 9); }
static void w_type_bh(struct raw *r) { raw_u(r, PS_RT_BLACKHOLE); }
static void w_scope7(struct raw *r) { raw_u(r, 7); }
static void w_mtu10(struct raw *r) { raw_u(r, 10); }
static void w_table0(struct raw *r) { raw_u(r, 0); }
static void w_u33bit(struct raw *r) { raw_u(r, 1ull << 32); }

static void
w_nh(struct raw *r, unsigned n, const char *ifname, unsigned weight, unsigned flags, int gw)
{
	msgpack_pack_array(&r->pk, n);
	for (unsigned i = 0; i < n; i++) {
		msgpack_pack_map(&r->pk, (gw ? 1 : 0) + (ifname ? 1 : 0) + 2);
		if (gw) {
			raw_u(r, 1);
			raw_bin(r, gw_v4, 4);
		}
		if (ifname) {
			raw_u(r, 2);
			raw_str(r, ifname);
		}
		raw_u(r, 3);
		raw_u(r, weight);
		raw_u(r, 4);
		raw_u(r, flags);
	}
}

static void w_nh_257(struct raw *r) { w_nh(r, 257, "veth0", 1, 0, 1); }
static void w_nh_none(struct raw *r) { w_nh(r, 0, "veth0", 1, 0, 1); }
static void w_nh_ifname16(struct raw *r) { w_nh(r, 1, "abcdefghijklmnop", 1, 0, 1); }
static void w_nh_ifname_slash(struct raw *r) { w_nh(r, 1, "a/b", 1, 0, 1); }
static void w_nh_weight0(struct raw *r) { w_nh(r, 1, "veth0", 0, 0, 1); }
static void w_nh_weight257(struct raw *r) { w_nh(r, 1, "veth0", 257, 0, 1); }
static void w_nh_flags(struct raw *r) { w_nh(r, 1, "veth0", 1, 0x80, 1); }
static void w_nh_onlink_nodev(struct raw *r) { w_nh(r, 1, NULL, 1, PS_NH_ONLINK, 1); }
static void w_nh_empty(struct raw *r) { w_nh(r, 1, NULL, 1, 0, 0); }

struct fault_case {
	const char *what;
	struct route_spec spec;
	int err;
	int code;
	const char *field;
};

static void
test_route_validation(void **state)
{
	static const struct fault_case cases[] = {
		{ "plen 33", { .over = 4, .write = w_plen33 }, -EBADMSG, PS_E_FIELD, "plen" },
		{ "plen 300", { .over = 4, .write = w_plen_big }, -EBADMSG, PS_E_FIELD, "plen" },
		{ "family 5", { .over = 2, .write = w_fam5 }, -EBADMSG, PS_E_FIELD, "family" },
		{ "host bits", { .over = 3, .write = w_prefix_host }, -EBADMSG, PS_E_FIELD, "prefix" },
		{ "prefix 5 bytes", { .over = 3, .write = w_prefix_len5 }, -EBADMSG, PS_E_FIELD, "prefix" },
		{ "v6 prefix, family 4", { .over = 3, .write = w_prefix_v6 }, -EBADMSG, PS_E_FIELD, "prefix" },
		{ "prefix as string", { .over = 3, .write = w_prefix_str }, -EBADMSG, PS_E_FIELD, "prefix" },
		{ "negative plen", { .over = 4, .write = w_neg }, -EBADMSG, PS_E_FIELD, "plen" },
		{ "nil plen", { .over = 4, .write = w_nil }, -EBADMSG, PS_E_FIELD, "plen" },
		{ "missing family", { .skip = 2 }, -EBADMSG, PS_E_FIELD, "family" },
		{ "missing prefix", { .skip = 3 }, -EBADMSG, PS_E_FIELD, "prefix" },
		{ "missing plen", { .skip = 4 }, -EBADMSG, PS_E_FIELD, "plen" },
		{ "unicast without nexthops", { .skip = 8 }, -EBADMSG, PS_E_FIELD, "nexthops" },
		{ "empty nexthop list", { .over = 8, .write = w_nh_none }, -EBADMSG, PS_E_FIELD, "nexthops" },
		{ "257 nexthops", { .over = 8, .write = w_nh_257 }, -EBADMSG, PS_E_FIELD, "nexthops" },
		{ "ifname 16 bytes", { .over = 8, .write = w_nh_ifname16 }, -EBADMSG, PS_E_FIELD, "ifname" },
		{ "ifname with /", { .over = 8, .write = w_nh_ifname_slash }, -EBADMSG, PS_E_FIELD, "ifname" },
		{ "weight 0", { .over = 8, .write = w_nh_weight0 }, -EBADMSG, PS_E_FIELD, "weight" },
		{ "weight 257", { .over = 8, .write = w_nh_weight257 }, -EBADMSG, PS_E_FIELD, "weight" },
		{ "unknown nexthop flag", { .over = 8, .write = w_nh_flags }, -EBADMSG, PS_E_FIELD, "flags" },
		{ "onlink without dev", { .over = 8, .write = w_nh_onlink_nodev }, -EBADMSG, PS_E_FIELD, "flags" },
		{ "nexthop without gw or dev", { .over = 8, .write = w_nh_empty }, -EBADMSG, PS_E_FIELD, "nexthops" },
		{ "route type 9", { .extra = 7, .write_extra = w_type9 }, -EBADMSG, PS_E_FIELD, "type" },
		{ "blackhole with nexthops", { .extra = 7, .write_extra = w_type_bh }, -EBADMSG, PS_E_FIELD, "nexthops" },
		{ "scope 7", { .extra = 11, .write_extra = w_scope7 }, -EBADMSG, PS_E_FIELD, "scope" },
		{ "mtu 10", { .extra = 12, .write_extra = w_mtu10 }, -EBADMSG, PS_E_FIELD, "mtu" },
		{ "table 0", { .extra = 1, .write_extra = w_table0 }, -EBADMSG, PS_E_FIELD, "table" },
		{ "table over 32 bits", { .extra = 1, .write_extra = w_u33bit }, -EBADMSG, PS_E_FIELD, "table" },
		{ "metric over 32 bits", { .extra = 6, .write_extra = w_u33bit }, -EBADMSG, PS_E_FIELD, "metric" },
		{ "protocol in ROUTE", { .extra = 13, .write_extra = w_scope7 }, -EBADMSG, PS_E_FIELD, "protocol" },
		{ "duplicate plen", { .extra = 4, .write_extra = w_plen33 }, -EBADMSG, PS_E_MALFORMED, "body" },
	};
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct raw r;
		raw_init(&r);
		raw_route(&r, &cases[i].spec);
		expect_fault(&r, cases[i].err, cases[i].code, cases[i].field, cases[i].what);
		raw_free(&r);
	}
}

/* The encoder refuses the same things, naming the same fields, and writes nothing. */
static void
test_encoder_refuses(void **state)
{
	struct ps_msg *m = malloc(sizeof(*m));
	struct ps_buf b;
	struct ps_fault f;
	(void)state;

	assert_non_null(m);
	ps_buf_init(&b);
	assert_true(ps_enc_msg(&b, (sample_route_v4(m, "192.0.2.0", 24, "198.51.100.1", NULL), m),
			NULL) > 0);
	b.len = 0;

#define REFUSE(mutate, fieldname)                                                           \
	do {                                                                                \
		sample_route_v4(m, "192.0.2.0", 24, "198.51.100.1", "veth0");               \
		mutate;                                                                     \
		assert_int_equal(ps_enc_msg(&b, m, &f), -EINVAL);                           \
		assert_string_equal(f.field, fieldname);                                    \
		assert_int_equal(b.len, 0);                                                 \
	} while (0)

	REFUSE(m->u.route.key.plen = 33, "plen");
	REFUSE(m->u.route.key.prefix.b[3] = 1, "prefix");
	REFUSE(m->u.route.key.family = 5, "family");
	REFUSE(m->u.route.n_nexthops = 0, "nexthops");
	REFUSE(m->u.route.n_nexthops = 257, "nexthops");
	REFUSE(m->u.route.nh[0].weight = 0, "weight");
	REFUSE(m->u.route.type = 2, "type");
	REFUSE((m->u.route.has |= PS_RA_MTU, m->u.route.mtu = 0), "mtu");
	REFUSE(memset(m->u.route.nh[0].ifname, 'x', 16), "ifname");
	REFUSE((m->u.route.key.family = PS_FAM_V6, m->u.route.key.has |= PS_KEY_TOS,
		   m->u.route.key.tos = 1, m->u.route.nh[0].gw_family = PS_FAM_V6), "tos");
	REFUSE((m->u.route.key.family = PS_FAM_V6, m->u.route.nh[0].gw_family = PS_FAM_V4),
	    "gateway");
	REFUSE(m->u.route.learn_op = PS_LEARN_ADD, "op");

	m->type = PS_HELLO;
	memset(&m->u.hello, 0, sizeof(m->u.hello));
	m->u.hello.n_versions = 1;
	m->u.hello.versions[0] = 1;
	m->u.hello.role = PS_ROLE_FEED;
	strcpy(m->u.hello.name, "bird");
	assert_true(ps_enc_msg(&b, m, NULL) > 0);
	b.len = 0;
	strcpy(m->u.hello.name, "has space");
	assert_int_equal(ps_enc_msg(&b, m, &f), -EINVAL);
	assert_string_equal(f.field, "name");
	strcpy(m->u.hello.name, "bird");
	m->u.hello.role = 3;
	assert_int_equal(ps_enc_msg(&b, m, &f), -EINVAL);
	assert_string_equal(f.field, "role");
	m->u.hello.role = PS_ROLE_FEED;
	m->u.hello.n_versions = 0;
	assert_int_equal(ps_enc_msg(&b, m, &f), -EINVAL);
	assert_string_equal(f.field, "versions");
	m->u.hello.n_versions = 1;
	m->u.hello.has = PS_HELLO_STALE;
	m->u.hello.stale_time = PS_STALE_TIME_MAX + 1;
	assert_int_equal(ps_enc_msg(&b, m, &f), -EINVAL);
	assert_string_equal(f.field, "stale_time");
	m->u.hello.has = PS_HELLO_FAMILIES;
	m->u.hello.families = 0;
	assert_int_equal(ps_enc_msg(&b, m, &f), -EINVAL);
	assert_string_equal(f.field, "families");

	m->type = PS_CTL_REQUEST;
	memset(&m->u.ctl_request, 0, sizeof(m->u.ctl_request));
	strcpy(m->u.ctl_request.cmd, "Status");
	assert_int_equal(ps_enc_msg(&b, m, &f), -EINVAL);
	assert_string_equal(f.field, "cmd");
	strcpy(m->u.ctl_request.cmd, "status");
	m->u.ctl_request.n_args = 1;
	m->u.ctl_request.args[0].ptr = "x";
	m->u.ctl_request.args[0].len = PS_CTL_ARG_MAX + 1;
	assert_int_equal(ps_enc_msg(&b, m, &f), -EINVAL);
	assert_string_equal(f.field, "args");

	m->type = PS_ERROR;
	memset(&m->u.error, 0, sizeof(m->u.error));
	assert_int_equal(ps_enc_msg(&b, m, &f), -EINVAL);
	assert_string_equal(f.field, "code");

	m->type = PS_ROUTE_STATUS;
	m->u.status.n = 0;
	assert_int_equal(ps_enc_msg(&b, m, &f), -EINVAL);
	assert_string_equal(f.field, "results");

	m->type = 99;
	assert_int_equal(ps_enc_msg(&b, m, &f), -EINVAL);
	assert_int_equal(f.code, PS_E_UNKNOWN_TYPE);
	assert_int_equal(b.len, 0);
#undef REFUSE
	ps_buf_release(&b);
	free(m);
}

/*
 * The encoder writes msgpack itself. Here msgpack-c's packer is the reference:
 * at every size boundary the protocol's limits reach (each integer width, str
 * headers of 8 and 16 bits, bin of 8, 16 and 32, fixarray and array 16, bools),
 * both give the same bytes.
 */
static void
expect_same_bytes(const struct ps_msg *m, const struct raw *r, const char *what)
{
	struct ps_buf b;
	struct ps_fault f;
	int n;

	ps_buf_init(&b);
	n = ps_enc_msg(&b, m, &f);
	if (n < 0)
		fail_msg("%s: encode failed: %s", what, f.text);
	if ((size_t)n != r->sb.size || memcmp(b.data, r->sb.data, r->sb.size))
		fail_msg("%s: %d bytes, msgpack-c's packer writes %zu (or other bytes)", what, n,
		    r->sb.size);
	ps_buf_release(&b);
}

static void
test_encoder_matches_msgpack_c(void **state)
{
	static const uint64_t ints[] = { 0, 1, 127, 128, 255, 256, 65535, 65536, UINT32_MAX,
		(uint64_t)UINT32_MAX + 1, UINT64_MAX };
	static const size_t lens[] = { 0, 1, 31, 32, 255, 256, PS_TEXT_MAX, 65535, 65536,
		PS_CHUNK_MAX };
	static const unsigned counts[] = { 0, 1, 15, 16, PS_CTL_ARGS_MAX };
	struct ps_msg *m = calloc(1, sizeof(*m));
	char *data = malloc(PS_CHUNK_MAX), what[64];
	(void)state;

	assert_non_null(m);
	assert_non_null(data);
	for (size_t i = 0; i < PS_CHUNK_MAX; i++)
		data[i] = (char)('a' + i % 26);

	/* Integers: a PING's token is 64 bits. */
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		struct raw r;
		raw_init(&r);
		raw_head(&r, PS_PING, 1);
		raw_u(&r, 1);
		raw_u(&r, ints[i]);
		memset(m, 0, sizeof(*m));
		m->type = PS_PING;
		m->u.token = ints[i];
		snprintf(what, sizeof(what), "PING token %llu", (unsigned long long)ints[i]);
		expect_same_bytes(m, &r, what);
		raw_free(&r);
	}

	/* bin: CTL_CHUNK data; str: CTL_END text (up to its limit). */
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct raw r;
		raw_init(&r);
		raw_head(&r, PS_CTL_CHUNK, 2);
		raw_u(&r, 1);
		raw_u(&r, 70000);
		raw_u(&r, 2);
		raw_bin(&r, data, lens[i]);
		memset(m, 0, sizeof(*m));
		m->type = PS_CTL_CHUNK;
		m->u.ctl_chunk.req = 70000;
		m->u.ctl_chunk.data = (struct ps_str){ data, lens[i] };
		snprintf(what, sizeof(what), "CTL_CHUNK of %zu bytes", lens[i]);
		expect_same_bytes(m, &r, what);
		raw_free(&r);

		if (!lens[i] || lens[i] > PS_TEXT_MAX)
			continue;
		raw_init(&r);
		raw_head(&r, PS_CTL_END, 3);
		raw_u(&r, 1);
		raw_u(&r, 300);
		raw_u(&r, 2);
		raw_u(&r, PS_E_ARGS);
		raw_u(&r, 3);
		msgpack_pack_str_with_body(&r.pk, data, lens[i]);
		memset(m, 0, sizeof(*m));
		m->type = PS_CTL_END;
		m->u.ctl_end.req = 300;
		m->u.ctl_end.code = PS_E_ARGS;
		m->u.ctl_end.text = (struct ps_str){ data, lens[i] };
		snprintf(what, sizeof(what), "CTL_END text of %zu bytes", lens[i]);
		expect_same_bytes(m, &r, what);
		raw_free(&r);
	}

	/* Arrays: CTL_REQUEST's arguments, and a bool: HELLO's persist. */
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		struct raw r;
		raw_init(&r);
		raw_head(&r, PS_CTL_REQUEST, 2 + !!counts[i]);
		raw_u(&r, 1);
		raw_u(&r, 7);
		raw_u(&r, 2);
		raw_str(&r, "show");
		memset(m, 0, sizeof(*m));
		m->type = PS_CTL_REQUEST;
		m->u.ctl_request.req = 7;
		strcpy(m->u.ctl_request.cmd, "show");
		m->u.ctl_request.n_args = (uint8_t)counts[i];
		if (counts[i]) {
			raw_u(&r, 3);
			msgpack_pack_array(&r.pk, counts[i]);
		}
		for (unsigned k = 0; k < counts[i]; k++) {
			msgpack_pack_str_with_body(&r.pk, data, k);
			m->u.ctl_request.args[k] = (struct ps_str){ data, k };
		}
		snprintf(what, sizeof(what), "CTL_REQUEST with %u arguments", counts[i]);
		expect_same_bytes(m, &r, what);
		raw_free(&r);
	}
	for (int v = 0; v < 2; v++) {
		struct raw r;
		raw_init(&r);
		raw_head(&r, PS_HELLO, 4);
		raw_u(&r, 1);
		msgpack_pack_array(&r.pk, 1);
		raw_u(&r, 1);
		raw_u(&r, 2);
		raw_u(&r, PS_ROLE_FEED);
		raw_u(&r, 3);
		raw_str(&r, "f");
		raw_u(&r, 9);
		if (v)
			msgpack_pack_true(&r.pk);
		else
			msgpack_pack_false(&r.pk);
		memset(m, 0, sizeof(*m));
		m->type = PS_HELLO;
		m->u.hello.n_versions = 1;
		m->u.hello.versions[0] = 1;
		m->u.hello.role = PS_ROLE_FEED;
		strcpy(m->u.hello.name, "f");
		m->u.hello.has = PS_HELLO_PERSIST;
		m->u.hello.persist = v;
		expect_same_bytes(m, &r, v ? "HELLO persist true" : "HELLO persist false");
		raw_free(&r);
	}
	free(data);
	free(m);
}

/* Messages that are not [type, body] with a map body, or not msgpack at all. */
static void
test_malformed(void **state)
{
	struct raw r;
	(void)state;

	raw_init(&r);
	msgpack_pack_map(&r.pk, 0);
	expect_fault(&r, -EBADMSG, PS_E_MALFORMED, "", "top-level map");
	raw_free(&r);

	raw_init(&r);
	msgpack_pack_array(&r.pk, 3);
	raw_u(&r, 4);
	msgpack_pack_map(&r.pk, 0);
	raw_u(&r, 0);
	expect_fault(&r, -EBADMSG, PS_E_MALFORMED, "", "three-element array");
	raw_free(&r);

	raw_init(&r);
	msgpack_pack_array(&r.pk, 2);
	raw_str(&r, "PING");
	msgpack_pack_map(&r.pk, 0);
	expect_fault(&r, -EBADMSG, PS_E_MALFORMED, "type", "type as string");
	raw_free(&r);

	raw_init(&r);
	raw_head(&r, 99, 0);
	expect_fault(&r, -EBADMSG, PS_E_UNKNOWN_TYPE, "type", "unknown type");
	raw_free(&r);

	raw_init(&r);
	msgpack_pack_array(&r.pk, 2);
	raw_u(&r, PS_PING);
	msgpack_pack_array(&r.pk, 1);
	raw_u(&r, 1);
	expect_fault(&r, -EBADMSG, PS_E_FIELD, "body", "body as array");
	raw_free(&r);

	raw_init(&r);
	raw_head(&r, PS_PING, 1);
	raw_str(&r, "token");
	raw_u(&r, 1);
	expect_fault(&r, -EBADMSG, PS_E_MALFORMED, "body", "string key");
	raw_free(&r);

	raw_init(&r);
	raw_head(&r, PS_PING, 0);
	expect_fault(&r, -EBADMSG, PS_E_FIELD, "token", "missing token");
	raw_free(&r);

	raw_init(&r);
	raw_head(&r, PS_HELLO, 2);
	raw_u(&r, 1);
	msgpack_pack_array(&r.pk, 1);
	raw_u(&r, 1);
	raw_u(&r, 2);
	raw_u(&r, 1);
	expect_fault(&r, -EBADMSG, PS_E_FIELD, "name", "hello without name");
	raw_free(&r);

	raw_init(&r);
	raw_head(&r, PS_HELLO, 3);
	raw_u(&r, 1);
	msgpack_pack_array(&r.pk, 17);
	for (int i = 0; i < 17; i++)
		raw_u(&r, 1);
	raw_u(&r, 2);
	raw_u(&r, 1);
	raw_u(&r, 3);
	raw_str(&r, "bird");
	expect_fault(&r, -EBADMSG, PS_E_FIELD, "versions", "17 versions");
	raw_free(&r);

	raw_init(&r);
	raw_head(&r, PS_HELLO, 3);
	raw_u(&r, 1);
	msgpack_pack_array(&r.pk, 1);
	raw_u(&r, 1);
	raw_u(&r, 2);
	raw_u(&r, 1);
	raw_u(&r, 3);
	msgpack_pack_str_with_body(&r.pk, "bi\0rd", 5);
	expect_fault(&r, -EBADMSG, PS_E_FIELD, "name", "NUL in name");
	raw_free(&r);

	/* 0xc1 is never valid msgpack. */
	raw_init(&r);
	msgpack_pack_array(&r.pk, 2);
	raw_u(&r, PS_PING);
	msgpack_sbuffer_write(&r.sb, "\xc1", 1);
	expect_fault(&r, -EBADMSG, PS_E_MALFORMED, "", "byte 0xc1");
	raw_free(&r);

	/* Nesting past PS_DEPTH_MAX, even inside an unknown key. */
	raw_init(&r);
	raw_head(&r, PS_PING, 2);
	raw_u(&r, 1);
	raw_u(&r, 5);
	raw_u(&r, 40);
	for (int i = 0; i < PS_DEPTH_MAX; i++)
		msgpack_pack_array(&r.pk, 1);
	raw_u(&r, 0);
	expect_fault(&r, -EBADMSG, PS_E_MALFORMED, "", "deep nesting");
	raw_free(&r);
}

/* Oversized messages are refused from their headers, before the bytes arrive. */
static void
test_oversized(void **state)
{
	struct ps_dec *d;
	const struct ps_msg *m;
	uint8_t hdr[16];
	struct ps_buf b;
	struct ps_msg *big = malloc(sizeof(*big));
	char *data = calloc(1, 8192);
	(void)state;

	assert_non_null(big);
	assert_non_null(data);

	/* A CTL_CHUNK whose bin header claims 2 MiB: refused after 9 bytes. */
	d = ps_dec_new(0);
	hdr[0] = 0x92;
	hdr[1] = PS_CTL_CHUNK;
	hdr[2] = 0x82;
	hdr[3] = 0x01;
	hdr[4] = 0x00;
	hdr[5] = 0x02;
	hdr[6] = 0xc6; /* bin32 */
	hdr[7] = 0x00;
	hdr[8] = 0x20;
	hdr[9] = 0x00;
	hdr[10] = 0x00;
	assert_int_equal(ps_dec_feed(d, hdr, 11), 11);
	assert_int_equal(ps_dec_next(d, &m), -EMSGSIZE);
	assert_int_equal(ps_dec_fault(d)->code, PS_E_TOO_LARGE);
	ps_dec_free(d);

	/* A map header claiming 2^31 entries: refused at once, nothing allocated for it. */
	d = ps_dec_new(0);
	hdr[2] = 0xdf;
	hdr[3] = 0x80;
	hdr[4] = 0x00;
	hdr[5] = 0x00;
	hdr[6] = 0x00;
	assert_int_equal(ps_dec_feed(d, hdr, 7), 7);
	assert_int_equal(ps_dec_next(d, &m), -EMSGSIZE);
	ps_dec_free(d);

	/* A decoder with a 4 KiB limit refuses a valid 8 KiB chunk, and takes a 3 KiB one. */
	ps_buf_init(&b);
	big->type = PS_CTL_CHUNK;
	big->u.ctl_chunk.req = 1;
	big->u.ctl_chunk.data.ptr = data;
	big->u.ctl_chunk.data.len = 3000;
	assert_true(ps_enc_msg(&b, big, NULL) > 0);
	big->u.ctl_chunk.data.len = 8192;
	assert_true(ps_enc_msg(&b, big, NULL) > 0);
	d = ps_dec_new(4096);
	assert_true(ps_dec_feed(d, b.data, b.len) > 0);
	assert_int_equal(ps_dec_next(d, &m), 1);
	assert_int_equal(m->u.ctl_chunk.data.len, 3000);
	assert_int_equal(ps_dec_next(d, &m), -EMSGSIZE);
	assert_string_equal(ps_dec_fault(d)->text, "message exceeds the limit of 4096 bytes");
	/* Failed for good: more bytes do not revive it. */
	assert_true(ps_dec_feed(d, b.data, 10) < 0);
	ps_dec_free(d);

	/* A message whose elements keep coming, each small: refused at the limit. */
	d = ps_dec_new(4096);
	hdr[0] = 0x92;
	hdr[1] = PS_PING;
	hdr[2] = 0xde; /* map16 with 1000 entries: key 40, a 9-byte string, again and again */
	hdr[3] = 0x03;
	hdr[4] = 0xe8;
	assert_int_equal(ps_dec_feed(d, hdr, 5), 5);
	{
		static const uint8_t entry[11] = { 40, 0xa9, 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a' };
		int r = 0, i;
		for (i = 0; i < 1000 && r == 0; i++) {
			assert_true(ps_dec_feed(d, entry, sizeof(entry)) >= 0);
			r = ps_dec_next(d, &m);
		}
		assert_int_equal(r, -EMSGSIZE);
		assert_true(i * sizeof(entry) <= 4096 + sizeof(entry));
	}
	ps_dec_free(d);

	ps_buf_release(&b);
	free(big);
	free(data);
}

/* Unknown keys, known keys in any order, and wider-than-needed integers are accepted. */
static void
test_unknown_keys_skipped(void **state)
{
	struct raw r;
	struct ps_msg *out = malloc(sizeof(*out));
	struct ps_msg *ref = malloc(sizeof(*ref));
	struct ps_fault f;
	char *t1, *t2;
	(void)state;

	assert_non_null(out);
	assert_non_null(ref);
	raw_init(&r);
	raw_head(&r, PS_ROUTE, 6);
	raw_u(&r, 40); /* unknown: a nested map of arrays */
	msgpack_pack_map(&r.pk, 1);
	raw_str(&r, "x");
	msgpack_pack_array(&r.pk, 2);
	msgpack_pack_float(&r.pk, 1.5f);
	msgpack_pack_nil(&r.pk);
	raw_u(&r, 8); /* nexthops, before the key fields */
	msgpack_pack_array(&r.pk, 1);
	msgpack_pack_map(&r.pk, 3);
	raw_u(&r, 2);
	raw_str(&r, "veth0");
	raw_u(&r, 63); /* unknown key inside a nexthop */
	msgpack_pack_ext_with_body(&r.pk, "abc", 3, 5);
	raw_u(&r, 1);
	raw_bin(&r, gw_v4, 4);
	raw_u(&r, 4);
	/* plen 24 as a uint32 and a signed int64: both accepted */
	msgpack_sbuffer_write(&r.sb, "\xce\x00\x00\x00\x18", 5);
	raw_u(&r, 1000); /* unknown key beyond the tracked range */
	msgpack_pack_true(&r.pk);
	raw_u(&r, 2);
	msgpack_sbuffer_write(&r.sb, "\xd3\x00\x00\x00\x00\x00\x00\x00\x04", 9);
	raw_u(&r, 3);
	raw_bin(&r, prefix_v4, 4);

	if (ps_dec_one(r.sb.data, r.sb.size, 0, out, &f) <= 0)
		fail_msg("not accepted: %s", f.text);
	sample_route_v4(ref, "192.0.2.0", 24, "198.51.100.1", "veth0");
	t1 = fmt(out);
	t2 = fmt(ref);
	assert_string_equal(t1, t2);
	free(t1);
	free(t2);
	raw_free(&r);
	free(out);
	free(ref);
}

static void
test_version_pick(void **state)
{
	struct ps_hello h;
	(void)state;

	memset(&h, 0, sizeof(h));
	h.n_versions = 3;
	h.versions[0] = 7;
	h.versions[1] = 1;
	h.versions[2] = 200;
	assert_int_equal(ps_version_pick(&h), 1);
	h.versions[1] = 2;
	assert_int_equal(ps_version_pick(&h), 0);
	h.n_versions = 0;
	assert_int_equal(ps_version_pick(&h), 0);
}

static void
test_names(void **state)
{
	(void)state;
	assert_string_equal(ps_msg_type_name(PS_ROUTE_STATUS), "ROUTE_STATUS");
	assert_null(ps_msg_type_name(7));
	assert_null(ps_msg_type_name(1000));
	assert_string_equal(ps_err_name(PS_E_CONFLICT), "CONFLICT");
	assert_null(ps_err_name(PS_E_LAST + 1));
}

/* Text with bytes outside printable ASCII is escaped in the text form. */
static void
test_format_escapes(void **state)
{
	struct ps_msg m;
	char buf[128];
	(void)state;

	memset(&m, 0, sizeof(m));
	m.type = PS_REFEED;
	m.u.reason.ptr = "a\"b\n\xff";
	m.u.reason.len = 5;
	size_t n = ps_msg_format(&m, buf, sizeof(buf));
	assert_int_equal(n, strlen(buf));
	assert_string_equal(buf, "REFEED reason \"a\\x22b\\x0a\\xff\"");
	/* Truncation reports the full length, like snprintf. */
	assert_int_equal(ps_msg_format(&m, buf, 4), strlen("REFEED reason \"a\\x22b\\x0a\\xff\""));
	assert_string_equal(buf, "REF");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_every_sample),
		cmocka_unit_test(test_roundtrip_fields),
		cmocka_unit_test(test_stream_splits),
		cmocka_unit_test(test_stream_reserve_commit),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_route_validation),
		cmocka_unit_test(test_encoder_refuses),
		cmocka_unit_test(test_encoder_matches_msgpack_c),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_oversized),
		cmocka_unit_test(test_unknown_keys_skipped),
		cmocka_unit_test(test_version_pick),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_format_escapes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
