/*
 * fibctl's command lines (args.c) and the route text fibd writes for it
 * (format.c): what each command sends, what is refused before anything is
 * sent, and that a route's text reads back (parser.c) as the very same route.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "args.h"
#include "format.h"
#include "parser.h"
#include "table.h"

/* The request a command line makes, as "cmd key=value ...", or "error: reason". */
static const char *
request(const char *line)
{
	static char out[512], copy[256];
	static struct ps_ctl_request req;
	char *argv[16], err[256];
	int argc = 0;

	snprintf(copy, sizeof(copy), "%s", line);
	for (char *w = strtok(copy, " "); w && argc < 16; w = strtok(NULL, " "))
		argv[argc++] = w;
	if (args_request(argc, argv, &req, err, sizeof(err)) < 0) {
		snprintf(out, sizeof(out), "error: %s", err);
		return out;
	}
	snprintf(out, sizeof(out), "%s", req.cmd);
	for (unsigned i = 0; i + 1 < req.n_args; i += 2)
		snprintf(out + strlen(out), sizeof(out) - strlen(out), " %.*s=%.*s", (int)req.args[i].len,
		    req.args[i].ptr, (int)req.args[i + 1].len, req.args[i + 1].ptr);
	return out;
}

static void
test_commands(void **state)
{
	(void)state;
	assert_string_equal(request("status"), "status");
	assert_string_equal(request("clients"), "clients");
	assert_string_equal(request("tables"), "tables");
	assert_string_equal(request("metrics"), "metrics");
	assert_string_equal(request("show route"), "show-route");
	assert_string_equal(request("show route table 100 192.0.2.0/24 longer"),
	    "show-route table=100 prefix=192.0.2.0/24 match=longer");
	assert_string_equal(request("show route --table 7 2001:db8::1"),
	    "show-route table=7 prefix=2001:db8::1");
	assert_string_equal(request("dump"), "dump");
	assert_string_equal(request("dump --table 100 --family 6 --format binary"),
	    "dump table=100 family=6 format=binary");
	assert_string_equal(request("dump table 5 --format json"), "dump table=5 format=json");
	assert_string_equal(request("diff"), "diff");
	assert_string_equal(request("diff --table 100"), "diff table=100");
	assert_string_equal(request("watch table 4294967295"), "watch table=4294967295");
	assert_string_equal(request("resync --table 1"), "resync table=1");
	assert_string_equal(request("couple"), "couple");
	assert_string_equal(request("decouple --table 100"), "decouple table=100");
	assert_true(args_is_control("diff"));
	assert_false(args_is_control("feed"));
	assert_false(args_is_control("help"));
}

static void
test_commands_refused(void **state)
{
	(void)state;
	assert_string_equal(request("status now"), "error: status: unexpected 'now'");
	assert_string_equal(request("show routes"), "error: show what? (show route)");
	assert_string_equal(request("show route 192.0.2.0/24 nearest"),
	    "error: show route: 'nearest' is not exact, longest or longer");
	assert_string_equal(request("show route 192.0.2.0/24 exact more"),
	    "error: show route: unexpected 'more'");
	assert_string_equal(request("dump --format xml"), "error: dump: --format takes text, json or binary");
	assert_string_equal(request("dump --family 5"), "error: dump: --family takes 4 or 6");
	assert_string_equal(request("dump --format"), "error: dump: --format takes text, json or binary");
	assert_string_equal(request("dump --sort prefix"),
	    "error: dump: unknown option '--sort' (--table, --family, --format)");
	assert_string_equal(request("diff --table 0"),
	    "error: diff: table '0' is not a number from 1 to 4294967295");
	assert_string_equal(request("decouple --table 4294967296"),
	    "error: decouple: table '4294967296' is not a number from 1 to 4294967295");
	assert_string_equal(request("couple --table"), "error: couple: table '' is not a number from 1 to 4294967295");
	assert_string_equal(request("watch 100"), "error: watch: unexpected '100'");
	assert_string_equal(request("resync --table -1"),
	    "error: resync: table '-1' is not a number from 1 to 4294967295");
	assert_string_equal(request("frobnicate"), "error: unknown command 'frobnicate' (try 'fibctl help')");
}

/* A line parsed, interned, written by format.c, parsed again: the same route. */
static const char *
round_trip(const char *line)
{
	static struct ps_msg m1, m2;
	static char out[1024];
	struct text t = { 0 };
	struct rattr *a, *b;
	char err[256];

	if (parse_route_line(line, &m1, err, sizeof(err)) != 0)
		fail_msg("'%s' refused: %s", line, err);
	assert_non_null(a = rattr_intern(&m1.u.route));
	put_route(&t, m1.u.route.key.family, &m1.u.route.key.prefix, m1.u.route.key.plen, a,
	    m1.u.route.key.table, m1.u.route.key.metric, m1.u.route.key.tos);
	assert_false(t.failed);
	snprintf(out, sizeof(out), "%.*s", (int)t.len, t.p);
	free(t.p);
	if (parse_route_line(out, &m2, err, sizeof(err)) != 0)
		fail_msg("'%s' (from '%s') refused: %s", out, line, err);
	assert_non_null(b = rattr_intern(&m2.u.route));
	if (a != b)
		fail_msg("'%s' read back as other attributes from '%s'", out, line);
	/* The same key (the second also says metric 0 where the first left it out). */
	assert_int_equal(m1.u.route.key.family, m2.u.route.key.family);
	assert_memory_equal(&m1.u.route.key.prefix, &m2.u.route.key.prefix, sizeof(union ps_addr));
	assert_int_equal(m1.u.route.key.plen, m2.u.route.key.plen);
	assert_int_equal(m1.u.route.key.table, m2.u.route.key.table);
	assert_int_equal(m1.u.route.key.metric, m2.u.route.key.metric);
	assert_int_equal(m1.u.route.key.tos, m2.u.route.key.tos);
	rattr_unref(a);
	rattr_unref(b);
	return out;
}

static void
test_route_text_round_trips(void **state)
{
	(void)state;
	assert_string_equal(round_trip("192.0.2.0/24 via 198.51.100.1 dev veth0 table 100"),
	    "192.0.2.0/24 via 198.51.100.1 dev veth0 table 100 metric 0");
	assert_string_equal(round_trip("2001:db8::/32 via fe80::1 dev veth0 metric 100 table 10"),
	    "2001:db8::/32 via fe80::1 dev veth0 table 10 metric 100");
	assert_string_equal(round_trip("blackhole 192.0.2.0/24 table 5"),
	    "blackhole 192.0.2.0/24 table 5 metric 0");
	assert_string_equal(round_trip("unreachable 2001:db8:1::/48 table 5 metric 7"),
	    "unreachable 2001:db8:1::/48 table 5 metric 7");
	assert_string_equal(round_trip("prohibit 10.0.0.0/8 table 5"), "prohibit 10.0.0.0/8 table 5 metric 0");
	assert_string_equal(round_trip("10.1.0.0/16 nexthop via 198.51.100.1 dev a weight 3 "
					"nexthop via 198.51.100.2 dev b onlink weight 1 table 9"),
	    "10.1.0.0/16 nexthop via 198.51.100.1 dev a weight 3 nexthop via 198.51.100.2 dev b onlink "
	    "weight 1 table 9 metric 0");
	assert_string_equal(round_trip("203.0.113.7 dev veth0 src 198.51.100.2 realm 12 scope 253 "
					"mtu 1400 tos 16 table 3"),
	    "203.0.113.7/32 dev veth0 src 198.51.100.2 realm 12 scope 253 mtu 1400 table 3 metric 0 tos 16");
	assert_string_equal(round_trip("default via 198.51.100.1 table 254"),
	    "0.0.0.0/0 via 198.51.100.1 table 254 metric 0");
}

/* Attributes as JSON: the route's words as one string, escaped. */
static void
test_attrs_json(void **state)
{
	static struct ps_msg m;
	struct text t = { 0 };
	struct rattr *a;
	char err[256];
	(void)state;

	assert_int_equal(parse_route_line("192.0.2.0/24 via 198.51.100.1 dev a\"b mtu 1400", &m, err,
			     sizeof(err)), 0);
	assert_non_null(a = rattr_intern(&m.u.route));
	put_attrs_json(&t, a);
	put_attrs_json(&t, NULL);
	assert_false(t.failed);
	assert_int_equal(t.len, strlen("{\"type\":\"unicast\",\"route\":\"via 198.51.100.1 dev a\\\"b mtu 1400\"}null"));
	assert_memory_equal(t.p, "{\"type\":\"unicast\",\"route\":\"via 198.51.100.1 dev a\\\"b mtu 1400\"}null", t.len);
	free(t.p);
	rattr_unref(a);
}

static void
test_json_strings(void **state)
{
	struct text t = { 0 };
	(void)state;

	json_str(&t, "a\"b\\c\n\x01");
	assert_false(t.failed);
	assert_int_equal(t.len, strlen("\"a\\\"b\\\\c\\u000a\\u0001\""));
	assert_memory_equal(t.p, "\"a\\\"b\\\\c\\u000a\\u0001\"", t.len);
	free(t.p);
}

static int
setup(void **state)
{
	(void)state;
	return table_init();
}

static int
teardown(void **state)
{
	(void)state;
	table_shutdown();
	rattr_shutdown();
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_commands),
		cmocka_unit_test(test_commands_refused),
		cmocka_unit_test(test_route_text_round_trips),
		cmocka_unit_test(test_json_strings),
		cmocka_unit_test(test_attrs_json),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
