/*
 * Sample messages for the codec tests: every type, with the edge values the
 * protocol allows (v4 /0 and /32, v6 /0 and /128, 256-way ECMP, longest names,
 * largest texts and counts).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "samples.h"

static struct ps_msg *
add(struct samples *s, const char *name, unsigned type)
{
	struct ps_msg *m = calloc(1, sizeof(*m));

	if (!m || s->n >= SAMPLES_MAX)
		abort();
	m->type = (uint8_t)type;
	s->m[s->n] = m;
	s->name[s->n] = name;
	s->n++;
	return m;
}

static void
addr(unsigned fam, const char *text, union ps_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (inet_pton(fam == PS_FAM_V4 ? AF_INET : AF_INET6, text, a->b) != 1)
		abort();
}

static void
key(struct ps_key *k, unsigned fam, const char *prefix, unsigned plen)
{
	memset(k, 0, sizeof(*k));
	k->family = (uint8_t)fam;
	k->plen = (uint8_t)plen;
	addr(fam, prefix, &k->prefix);
}

static void
nexthop(struct ps_nexthop *nh, unsigned fam, const char *gw, const char *dev, unsigned weight)
{
	memset(nh, 0, sizeof(*nh));
	if (gw) {
		nh->gw_family = (uint8_t)fam;
		addr(fam, gw, &nh->gw);
	}
	if (dev)
		snprintf(nh->ifname, sizeof(nh->ifname), "%s", dev);
	nh->weight = (uint16_t)weight;
}

void
sample_route_v4(struct ps_msg *m, const char *prefix, unsigned plen, const char *gw,
    const char *dev)
{
	memset(m, 0, offsetof(struct ps_msg, u) + offsetof(struct ps_route, nh));
	m->type = PS_ROUTE;
	key(&m->u.route.key, PS_FAM_V4, prefix, plen);
	m->u.route.type = PS_RT_UNICAST;
	m->u.route.n_nexthops = 1;
	nexthop(&m->u.route.nh[0], PS_FAM_V4, gw, dev, 1);
}

void
samples_make(struct samples *s)
{
	struct ps_msg *m;
	char *text;
	size_t off = 0;

	memset(s, 0, sizeof(*s));
	/* Text storage: 32 control args of 256 bytes, a 256 KiB chunk, long texts. */
	s->storage = malloc(1 << 20);
	if (!s->storage)
		abort();
	text = s->storage;
	for (size_t i = 0; i < (1 << 20); i++)
		text[i] = (char)('a' + i % 26);

	m = add(s, "hello-full", PS_HELLO);
	m->u.hello.n_versions = PS_VERSIONS_MAX;
	for (unsigned i = 0; i < PS_VERSIONS_MAX; i++)
		m->u.hello.versions[i] = (uint8_t)(i + 1);
	m->u.hello.role = PS_ROLE_FEED;
	memset(m->u.hello.name, 'n', PS_NAME_MAX);
	m->u.hello.has = PS_HELLO_TABLE | PS_HELLO_FAMILIES | PS_HELLO_METRIC |
	    PS_HELLO_PROTOCOL | PS_HELLO_STALE | PS_HELLO_PERSIST | PS_HELLO_LEARN |
	    PS_HELLO_RESULTS | PS_HELLO_REFRESH;
	m->u.hello.table = UINT32_MAX;
	m->u.hello.families = PS_HELLO_FAM_V4 | PS_HELLO_FAM_V6;
	m->u.hello.metric = UINT32_MAX;
	m->u.hello.protocol = 255;
	m->u.hello.stale_time = PS_STALE_TIME_MAX;
	m->u.hello.persist = 1;
	m->u.hello.learn = 1;
	m->u.hello.results = PS_RESULTS_FAILURES;
	m->u.hello.refresh = 1;

	m = add(s, "hello-min", PS_HELLO);
	m->u.hello.n_versions = 1;
	m->u.hello.versions[0] = 1;
	m->u.hello.role = PS_ROLE_CONTROL;
	strcpy(m->u.hello.name, "fibctl");

	m = add(s, "welcome", PS_WELCOME);
	m->u.welcome.version = 1;
	memset(m->u.welcome.server_id, 's', PS_NAME_MAX);
	m->u.welcome.boot_epoch = UINT64_MAX;

	m = add(s, "error-full", PS_ERROR);
	m->u.error.code = PS_E_LAST;
	memset(m->u.error.field, 'f', PS_FIELD_MAX);
	m->u.error.text.ptr = text;
	m->u.error.text.len = PS_TEXT_MAX;

	m = add(s, "error-min", PS_ERROR);
	m->u.error.code = PS_E_MALFORMED;

	m = add(s, "ping", PS_PING);
	m->u.token = UINT64_MAX;
	m = add(s, "pong", PS_PONG);
	m->u.token = 0;
	m = add(s, "bye", PS_BYE);
	m->u.bye_flags = PS_BYE_FLUSH;
	m = add(s, "feed-begin", PS_FEED_BEGIN);
	m->u.generation = 0;
	m = add(s, "feed-end", PS_FEED_END);
	m->u.generation = UINT64_MAX;

	m = add(s, "route-v4-default", PS_ROUTE);
	sample_route_v4(m, "0.0.0.0", 0, "198.51.100.1", "veth0");
	m = add(s, "route-v4-host", PS_ROUTE);
	sample_route_v4(m, "203.0.113.255", 32, NULL, "veth0");
	m->u.route.key.has = PS_KEY_TABLE | PS_KEY_METRIC | PS_KEY_TOS;
	m->u.route.key.table = 1;
	m->u.route.key.metric = 0;
	m->u.route.key.tos = 255;

	m = add(s, "route-v6-default", PS_ROUTE);
	key(&m->u.route.key, PS_FAM_V6, "::", 0);
	m->u.route.type = PS_RT_UNICAST;
	m->u.route.n_nexthops = 1;
	nexthop(&m->u.route.nh[0], PS_FAM_V6, "fe80::1", "abcdefghijklmno", 256);
	m->u.route.nh[0].flags = PS_NH_ONLINK;

	m = add(s, "route-v6-host-attrs", PS_ROUTE);
	key(&m->u.route.key, PS_FAM_V6, "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", 128);
	m->u.route.key.has = PS_KEY_TABLE | PS_KEY_METRIC;
	m->u.route.key.table = 254;
	m->u.route.key.metric = UINT32_MAX;
	m->u.route.type = PS_RT_UNICAST;
	m->u.route.n_nexthops = 1;
	nexthop(&m->u.route.nh[0], PS_FAM_V6, "2001:db8::1", NULL, 1);
	m->u.route.has = PS_RA_PREFSRC | PS_RA_REALM | PS_RA_SCOPE | PS_RA_MTU;
	addr(PS_FAM_V6, "2001:db8::2", &m->u.route.prefsrc);
	m->u.route.realm = UINT32_MAX;
	m->u.route.scope = 253;
	m->u.route.mtu = 65535;

	m = add(s, "route-ecmp-256", PS_ROUTE);
	key(&m->u.route.key, PS_FAM_V4, "192.0.2.0", 24);
	m->u.route.type = PS_RT_UNICAST;
	m->u.route.n_nexthops = PS_NEXTHOPS_MAX;
	for (unsigned i = 0; i < PS_NEXTHOPS_MAX; i++) {
		char gw[32], dev[16];
		snprintf(gw, sizeof(gw), "198.51.100.%u", i);
		snprintf(dev, sizeof(dev), "veth%u", i % 4);
		nexthop(&m->u.route.nh[i], PS_FAM_V4, gw, dev, i + 1);
	}

	m = add(s, "route-v4-via-v6", PS_ROUTE);
	key(&m->u.route.key, PS_FAM_V4, "198.51.100.0", 24);
	m->u.route.type = PS_RT_UNICAST;
	m->u.route.n_nexthops = 1;
	nexthop(&m->u.route.nh[0], PS_FAM_V6, "2001:db8::1", "veth1", 1);

	m = add(s, "route-blackhole", PS_ROUTE);
	key(&m->u.route.key, PS_FAM_V4, "203.0.113.0", 24);
	m->u.route.type = PS_RT_BLACKHOLE;
	m = add(s, "route-unreachable", PS_ROUTE);
	key(&m->u.route.key, PS_FAM_V6, "2001:db8::", 32);
	m->u.route.type = PS_RT_UNREACHABLE;
	m = add(s, "route-prohibit", PS_ROUTE);
	key(&m->u.route.key, PS_FAM_V4, "192.0.2.128", 25);
	m->u.route.type = PS_RT_PROHIBIT;

	m = add(s, "withdraw-v4", PS_WITHDRAW);
	key(&m->u.withdraw, PS_FAM_V4, "192.0.2.0", 24);
	m = add(s, "withdraw-v6-full-key", PS_WITHDRAW);
	key(&m->u.withdraw, PS_FAM_V6, "2001:db8:1::", 48);
	m->u.withdraw.has = PS_KEY_TABLE | PS_KEY_METRIC | PS_KEY_TOS;
	m->u.withdraw.table = 100;
	m->u.withdraw.metric = 1024;
	m->u.withdraw.tos = 0;

	m = add(s, "route-status-256", PS_ROUTE_STATUS);
	m->u.status.n = PS_STATUS_MAX;
	for (unsigned i = 0; i < PS_STATUS_MAX; i++) {
		struct ps_status_entry *e = &m->u.status.e[i];
		char p[32];
		memset(e, 0, sizeof(*e));
		snprintf(p, sizeof(p), "10.%u.0.0", i);
		key(&e->key, PS_FAM_V4, p, 16);
		e->key.has = PS_KEY_TABLE | PS_KEY_METRIC | PS_KEY_TOS;
		e->key.table = 100;
		e->key.metric = i;
		e->state = (uint8_t)(PS_RS_INSTALLED + i % 5);
		e->error = e->state == PS_RS_FAILED ? 101 : 0;
		if (e->state == PS_RS_FAILED) {
			e->text.ptr = text;
			e->text.len = PS_TEXT_MAX;
		}
	}

	m = add(s, "route-status-counts", PS_ROUTE_STATUS);
	m->u.status.has = PS_STATUS_COUNTS;
	m->u.status.installed = UINT64_MAX;
	m->u.status.removed = 0;
	m->u.status.n = 1;
	key(&m->u.status.e[0].key, PS_FAM_V6, "2001:db8:1::", 48);
	m->u.status.e[0].key.has = PS_KEY_TABLE | PS_KEY_METRIC | PS_KEY_TOS;
	m->u.status.e[0].key.table = 100;
	m->u.status.e[0].key.metric = 1024;
	m->u.status.e[0].state = PS_RS_WAITING;
	m->u.status.e[0].error = 101;

	m = add(s, "learn-add", PS_LEARN);
	key(&m->u.route.key, PS_FAM_V4, "192.0.2.0", 24);
	m->u.route.key.has = PS_KEY_TABLE | PS_KEY_METRIC;
	m->u.route.key.table = 254;
	m->u.route.type = PS_RT_UNICAST;
	m->u.route.n_nexthops = 1;
	nexthop(&m->u.route.nh[0], PS_FAM_V4, NULL, "veth0", 1);
	m->u.route.has = PS_RA_PROTOCOL | PS_RA_SCOPE;
	m->u.route.scope = 253;
	m->u.route.protocol = 2;
	m->u.route.learn_op = PS_LEARN_ADD;

	m = add(s, "learn-delete", PS_LEARN);
	key(&m->u.route.key, PS_FAM_V6, "2001:db8::", 64);
	m->u.route.type = PS_RT_UNICAST;
	m->u.route.has = PS_RA_PROTOCOL;
	m->u.route.protocol = 4;
	m->u.route.learn_op = PS_LEARN_DELETE;

	m = add(s, "learn-refresh", PS_LEARN_REFRESH);
	m->u.refresh.table = UINT32_MAX;
	m->u.refresh.family = PS_FAM_V6;
	m->u.refresh.phase = PS_REFRESH_END;

	m = add(s, "refeed", PS_REFEED);
	m->u.reason = ps_str_from("fibd restarted");
	m = add(s, "refeed-empty", PS_REFEED);

	m = add(s, "ctl-request-max", PS_CTL_REQUEST);
	m->u.ctl_request.req = UINT32_MAX;
	m->u.ctl_request.flags = PS_CTL_JSON;
	memset(m->u.ctl_request.cmd, 'c', PS_CTL_CMD_MAX);
	m->u.ctl_request.n_args = PS_CTL_ARGS_MAX;
	for (unsigned i = 0; i < PS_CTL_ARGS_MAX; i++) {
		m->u.ctl_request.args[i].ptr = text + off;
		m->u.ctl_request.args[i].len = PS_CTL_ARG_MAX;
		off += 7;
	}
	m = add(s, "ctl-request-min", PS_CTL_REQUEST);
	m->u.ctl_request.req = 0;
	strcpy(m->u.ctl_request.cmd, "status");

	m = add(s, "ctl-chunk-max", PS_CTL_CHUNK);
	m->u.ctl_chunk.req = 7;
	m->u.ctl_chunk.data.ptr = text;
	m->u.ctl_chunk.data.len = PS_CHUNK_MAX;
	m = add(s, "ctl-chunk-empty", PS_CTL_CHUNK);
	m->u.ctl_chunk.req = 8;

	m = add(s, "ctl-end-ok", PS_CTL_END);
	m->u.ctl_end.req = 7;
	m = add(s, "ctl-end-error", PS_CTL_END);
	m->u.ctl_end.req = 9;
	m->u.ctl_end.code = PS_E_ARGS;
	m->u.ctl_end.text = ps_str_from("table 0 is not a routing table");
}

void
samples_free(struct samples *s)
{
	for (unsigned i = 0; i < s->n; i++)
		free(s->m[i]);
	free(s->storage);
	memset(s, 0, sizeof(*s));
}
