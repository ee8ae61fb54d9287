/*
 * Fuzz target for fibd's reading of kernel route messages (libFuzzer entry
 * point; the replay driver runs the corpus in CI): the dump parser dump_parse
 * on the input as one datagram (byte 0 picks the family; the first message's
 * sequence number is taken for the request's), and the codec's kmsg_rt_parse
 * and kmsg_rt_attrs on each route message in it.
 *
 * Beyond "no crash, no leak, no undefined behaviour": a route fibd takes from
 * the kernel (to adopt it, or to hand it to BIRD as a LEARN) is one the wire
 * protocol's encoder accepts, and one fibd can intern; and what fibd writes for
 * it (kmsg_put_route, inline) is a well-formed message within KMSG_MAX that
 * reads back as the same attribute set. The kernel stops reading a send at a
 * malformed message and answers none of the rest: the writer, which asks for
 * an ACK of a batch's last message only, relies on fibd writing none.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

#include <proto-shim/enc.h>

#include "dump.h"
#include "fuzz.h"
#include "kmsg.h"
#include "rattr.h"
#include "table.h"

static struct ps_msg m;
static struct ps_buf out;

static void
on_route(const struct nlmsghdr *nlh, const struct kmsg_rt *kr, void *ctx)
{
	(void)nlh;
	(void)kr;
	(void)ctx;
}

/* Interfaces 1 to 9 exist (veth1 ..); fibd made no nexthop object. */
static bool
fuzz_ifname(int ifindex, char *name)
{
	if (ifindex < 1 || ifindex > 9)
		return false;
	snprintf(name, PS_IFNAMSIZ, "veth%d", ifindex);
	return true;
}

static const struct kmsg_env env = { .ifname = fuzz_ifname };

/* kr's attributes as fibd reads them, into m's route (a LEARN); false if fibd cannot express them. */
static bool
read_route(const struct kmsg_rt *kr)
{
	memset(&m, 0, sizeof(m));
	m.type = PS_LEARN;
	if (!kmsg_rt_attrs(kr, &env, &m.u.route, NULL))
		return false;
	m.u.route.key.plen = kr->plen;
	return true;
}

/* fuzz_ifname's inverse: the index of "vethN" is N. */
static int
fuzz_ifindex(const char *name)
{
	return strncmp(name, "veth", 4) ? 0 : atoi(name + 4);
}

/* The attributes after the message's header of hlen bytes fill it exactly, each well-formed. */
static bool
attrs_fill(const struct nlmsghdr *nlh, size_t hlen)
{
	const char *p = mnl_nlmsg_get_payload_offset(nlh, hlen), *end = (const char *)nlh + nlh->nlmsg_len;

	while (p < end) {
		const struct nlattr *at = (const struct nlattr *)p;
		if (!mnl_attr_ok(at, (int)(end - p)))
			return false;
		p += MNL_ALIGN(at->nla_len);
	}
	return p == end;
}

/* What fibd writes for attribute set a (read from kr): well-formed, and read back as a. */
static void
check_written(const struct kmsg_rt *kr, struct rattr *a)
{
	static _Alignas(8) char w[KMSG_MAX];
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)w;
	struct kmsg_key k = { .table = 100, .family = kr->family, .prefix = kr->prefix,
		.plen = kr->plen, .tos = kr->tos, .metric = kr->metric };
	struct kmsg_rt back;
	struct rattr *b;
	size_t len;

	for (unsigned i = 0; i < a->n_nh; i++)
		a->nh[i].ifindex = a->nh[i].ifname[0] ? fuzz_ifindex(a->nh[i].ifname) : 0;
	len = kmsg_put_route(w, 1, KMSG_REPLACE, &k, 12, a, KMSG_INLINE);
	if (len > KMSG_MAX || !kmsg_ok(nlh, (int)len) || nlh->nlmsg_len != len ||
	    !attrs_fill(nlh, sizeof(struct rtmsg))) {
		fprintf(stderr, "fibd writes a malformed message (%zu bytes) for a route it read\n", len);
		abort();
	}
	if (kmsg_rt_parse(nlh, &back) < 0) {
		fprintf(stderr, "fibd cannot read back the message it writes for a route it read\n");
		abort();
	}
	if (!read_route(&back)) {
		fprintf(stderr, "fibd writes a route it cannot express for one it read\n");
		abort();
	}
	if (!(b = rattr_intern(&m.u.route)))
		abort();
	if (b != a) {
		fprintf(stderr, "a route fibd writes reads back with other attributes\n");
		abort();
	}
	rattr_unref(b);
}

/* A route the kernel sent, as fibd reads it: encodable and internable, or refused. */
static void
check_route(const struct nlmsghdr *nlh)
{
	struct kmsg_rt kr;
	struct ps_fault f;
	struct rattr *a;

	if (kmsg_rt_parse(nlh, &kr) < 0)
		return;
	if (!read_route(&kr))
		return;
	memset(&m.u.route.key.prefix, 0, sizeof(m.u.route.key.prefix)); /* the key is not the point */
	m.u.route.learn_op = PS_LEARN_ADD;
	m.u.route.key.has = PS_KEY_TABLE;
	m.u.route.key.table = 100;
	out.len = 0;
	if (ps_enc_msg(&out, &m, &f) <= 0) {
		fprintf(stderr, "a route read from the kernel does not encode: %s\n", f.text);
		abort();
	}
	if (!(a = rattr_intern(&m.u.route)))
		abort();
	check_written(&kr, a);
	rattr_unref(a);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	static _Alignas(8) char buf[65536];
	const struct nlmsghdr *nlh;
	uint64_t stale = 0;
	uint32_t seq = 0;
	uint8_t fam;
	int left;

	if (!ready) {
		if (table_init() < 0)
			abort();
		ps_buf_init(&out);
		ready = 1;
	}
	if (size < 1 || size - 1 > sizeof(buf))
		return 0;
	fam = data[0] & 1 ? PS_FAM_V6 : PS_FAM_V4;
	memcpy(buf, data + 1, size - 1);
	if (size - 1 >= sizeof(struct nlmsghdr))
		seq = ((const struct nlmsghdr *)buf)->nlmsg_seq;
	dump_parse(buf, size - 1, seq, 0, 100, fam, on_route, NULL, &stale);
	left = (int)(size - 1);
	for (nlh = (const struct nlmsghdr *)buf; kmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left))
		if (nlh->nlmsg_type == RTM_NEWROUTE || nlh->nlmsg_type == RTM_DELROUTE)
			check_route(nlh);
	return 0;
}
