/*
 * Fuzz target for fibd's reading of kernel route messages (libFuzzer entry
 * point; the replay driver runs the corpus in CI): the dump parser sync_parse
 * on the input as one datagram (byte 0 picks the family), and
 * sync_route_from_msg on each route message in it.
 *
 * Beyond "no crash, no leak, no undefined behaviour": a route fibd takes from
 * the kernel (to adopt it, or to hand it to BIRD as a LEARN) is one the wire
 * protocol's encoder accepts, and one fibd can intern.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

#include <proto-shim/enc.h>

#include "fuzz.h"
#include "nl.h"
#include "rattr.h"
#include "sync.h"
#include "table.h"

static struct ps_msg m;
static struct ps_buf out;

static void
on_route(const struct sync_key *k, void *ctx)
{
	(void)ctx;
	rattr_unref(k->attrs);
}

static int
attr_cb(const struct nlattr *attr, void *data)
{
	const struct nlattr **tb = data;

	if (mnl_attr_get_type(attr) <= RTA_MAX)
		tb[mnl_attr_get_type(attr)] = attr;
	return MNL_CB_OK;
}

/* A route the kernel sent, as fibd reads it: encodable and internable, or refused. */
static void
check_route(const struct nlmsghdr *nlh, uint8_t fam)
{
	const struct nlattr *tb[RTA_MAX + 1] = { 0 };
	const struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);
	struct ps_fault f;
	struct rattr *a;

	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*rtm)) ||
	    mnl_attr_parse(nlh, sizeof(*rtm), attr_cb, tb) < 0)
		return;
	memset(&m, 0, sizeof(m));
	m.type = PS_LEARN;
	if (!sync_route_from_msg(rtm, tb, fam, &m.u.route, NULL))
		return;
	m.u.route.key.plen = rtm->rtm_dst_len > (fam == PS_FAM_V4 ? 32 : 128) ? 0 : rtm->rtm_dst_len;
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
	rattr_unref(a);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	static _Alignas(8) char buf[65536];
	const struct nlmsghdr *nlh;
	uint64_t foreign = 0;
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
	sync_parse(buf, size - 1, 100, fam, 12, on_route, NULL, &foreign);
	left = (int)(size - 1);
	for (nlh = (const struct nlmsghdr *)buf; nl_msg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left))
		if (nlh->nlmsg_type == RTM_NEWROUTE || nlh->nlmsg_type == RTM_DELROUTE)
			check_route(nlh, fam);
	return 0;
}
