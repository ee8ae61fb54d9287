/*
 * fibctl's ip-route parser and fibd's configuration parser: what each accepts,
 * what it refuses and with which reason.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "conf.h"
#include "parser.h"

static struct ps_msg m;

/* Parse a line and return its text form (the form proto-shim prints). */
static const char *
parsed(const char *line)
{
	static char text[4096];
	char err[256];
	int r = parse_route_line(line, &m, err, sizeof(err));

	if (r != 0)
		fail_msg("'%s' refused: %s", line, err);
	ps_msg_format(&m, text, sizeof(text));
	return text;
}

static void
expect_refused(const char *line, const char *reason)
{
	char err[256] = "";
	int r = parse_route_line(line, &m, err, sizeof(err));

	if (r != -EINVAL)
		fail_msg("'%s' accepted (%d)", line, r);
	if (!strstr(err, reason))
		fail_msg("'%s': reason '%s' lacks '%s'", line, err, reason);
}

static void
test_routes_accepted(void **state)
{
	(void)state;
	assert_string_equal(parsed("192.0.2.0/24 via 198.51.100.1 dev veth0"),
	    "ROUTE unicast 192.0.2.0/24 nexthop via 198.51.100.1 dev veth0 weight 1");
	assert_string_equal(parsed("  default via 198.51.100.1  # comment"),
	    "ROUTE unicast 0.0.0.0/0 nexthop via 198.51.100.1 weight 1");
	assert_string_equal(parsed("203.0.113.7 dev veth0"),
	    "ROUTE unicast 203.0.113.7/32 nexthop dev veth0 weight 1");
	assert_string_equal(parsed("2001:db8::/32 via fe80::1 dev veth0 metric 100 table 10"),
	    "ROUTE unicast table 10 2001:db8::/32 metric 100 nexthop via fe80::1 dev veth0 weight 1");
	assert_string_equal(parsed("blackhole 192.0.2.0/24 table main proto bird"),
	    "ROUTE blackhole table 254 192.0.2.0/24");
	assert_string_equal(parsed("unreachable ::/0"), "ROUTE unreachable ::/0");
	assert_string_equal(parsed("prohibit 198.51.100.0/24 priority 7"),
	    "ROUTE prohibit 198.51.100.0/24 metric 7");
	assert_string_equal(parsed("192.0.2.0/24 nexthop via 198.51.100.1 dev a weight 3 "
				   "nexthop via 198.51.100.2 dev b weight 256 onlink"),
	    "ROUTE unicast 192.0.2.0/24 nexthop via 198.51.100.1 dev a weight 3 nexthop via "
	    "198.51.100.2 dev b weight 256 onlink");
	assert_string_equal(parsed("192.0.2.0/24 via inet6 fe80::1 dev veth0"),
	    "ROUTE unicast 192.0.2.0/24 nexthop via inet6 fe80::1 dev veth0 weight 1");
	assert_string_equal(parsed("192.0.2.0/24 via 198.51.100.1 src 198.51.100.2 realm 3 mtu "
				   "1400 scope link tos 16"),
	    "ROUTE unicast 192.0.2.0/24 tos 16 nexthop via 198.51.100.1 weight 1 src 198.51.100.2 "
	    "realm 3 scope 253 mtu 1400");
	assert_int_equal(parse_route_line("   # only a comment", &m, NULL, 0), 1);
	assert_int_equal(parse_route_line("", &m, NULL, 0), 1);
}

static void
test_routes_refused(void **state)
{
	(void)state;
	expect_refused("192.0.2.1/24 via 198.51.100.1", "host bits");
	expect_refused("192.0.2.0/33 via 198.51.100.1", "invalid prefix length");
	expect_refused("300.0.2.0/24 via 198.51.100.1", "is not a prefix");
	expect_refused("192.0.2.0/24", "needs at least one nexthop");
	expect_refused("blackhole 192.0.2.0/24 via 198.51.100.1", "has no nexthops");
	expect_refused("192.0.2.0/24 via", "'via' needs an address");
	expect_refused("192.0.2.0/24 dev abcdefghijklmnopq", "at most 15 bytes");
	expect_refused("192.0.2.0/24 via 198.51.100.1 weight 0", "weight");
	expect_refused("192.0.2.0/24 via 198.51.100.1 metric x", "invalid metric");
	expect_refused("192.0.2.0/24 via 198.51.100.1 table 0", "invalid table");
	expect_refused("192.0.2.0/24 via 198.51.100.1 src 2001:db8::1", "not an address of");
	expect_refused("192.0.2.0/24 via 198.51.100.1 frobnicate 3", "unknown keyword 'frobnicate'");
	expect_refused("192.0.2.0/24 via 198.51.100.1 mtu 10", "mtu 10 is outside");
	expect_refused("192.0.2.0/24 via 198.51.100.1 nexthop via 198.51.100.2", "not both");
	expect_refused("2001:db8::/32 via 198.51.100.1", "IPv4 gateway");
	expect_refused("192.0.2.0/24 onlink via 198.51.100.1", "onlink needs both");
	expect_refused("192.0.2.0/24 via 198.51.100.1 scope galaxy", "invalid scope");
	expect_refused("2001:db8::/32 via fe80::1 dev a tos 4", "tos must be 0");
}

/* The BGP keys: listens, fibd's AS and id, peers; the lists are the file's on each parse. */
static void
test_conf_bgp(void **state)
{
	static const char good[] = "bgp_listen = 127.0.0.1 1179\nbgp_listen = ::1\nbgp_as = 4200000000\n"
				   "bgp_router_id = 192.0.2.254\n"
				   "bgp_peer = b1 address 127.0.0.2 as 65000 table 100 metric 20 md5 s3cret "
				   "stale_time 30 persist\n"
				   "bgp_peer = b-2 address 2001:db8::2 as 65001 table 101\n";
	static const struct {
		const char *text, *err;
	} bad[] = {
		{ "bgp_listen = 127.0.0.1 0\n", "line 1: bgp_listen must be an address and an optional port 1..65535" },
		{ "bgp_as = 0\n", "line 1: bgp_as must be 1..4294967295" },
		{ "bgp_router_id = 0.0.0.0\n", "line 1: bgp_router_id must be an IPv4 address, not 0.0.0.0" },
		{ "bgp_peer = b1 address 127.0.0.2 as 65000\n", "line 1: bgp_peer b1: needs address, as and table" },
		{ "bgp_peer = b/1 address 127.0.0.2 as 65000 table 1\n", NULL },
		{ "bgp_peer = b1 address 127.0.0.2 as 65000 table 1 colour blue\n", NULL },
		{ "bgp_peer = b1 address 127.0.0.2 as 65000 table 1\n", "bgp_peer lines need bgp_as, bgp_router_id and a bgp_listen line" },
	};
	struct conf c;
	char err[512];
	(void)state;

	conf_defaults(&c);
	assert_int_equal(conf_parse(good, &c, err, sizeof(err)), 0);
	assert_int_equal(c.n_bgp_listen, 2);
	assert_int_equal(c.bgp_listen[0].port, 1179);
	assert_int_equal(c.bgp_listen[1].port, 179);
	assert_int_equal(c.bgp_listen[1].family, AF_INET6);
	assert_int_equal(c.bgp_as, 4200000000u);
	assert_int_equal(c.bgp_router_id, 0xc00002fe);
	assert_int_equal(c.n_bgp_peers, 2);
	assert_string_equal(c.bgp_peers[0].name, "b1");
	assert_int_equal(c.bgp_peers[0].metric, 20);
	assert_string_equal(c.bgp_peers[0].md5, "s3cret");
	assert_int_equal(c.bgp_peers[0].stale_time, 30);
	assert_true(c.bgp_peers[0].persist);
	assert_int_equal(c.bgp_peers[1].stale_time, 360);
	assert_false(c.bgp_peers[1].persist);
	/* Parsed again (a reload): the same lists, not twice as long. */
	assert_int_equal(conf_parse(good, &c, err, sizeof(err)), 0);
	assert_int_equal(c.n_bgp_peers, 2);
	/* The same name or address twice. */
	assert_int_equal(conf_parse("bgp_listen = ::1\nbgp_peer = x address 127.0.0.2 as 1 table 1\n"
				    "bgp_peer = x address 127.0.0.3 as 1 table 1\n", &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "line 3: bgp_peer x: the name of peer x");
	assert_int_equal(conf_parse("bgp_listen = ::1\nbgp_peer = x address 127.0.0.2 as 1 table 1\n"
				    "bgp_peer = y address 127.0.0.2 as 1 table 1\n", &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "line 3: bgp_peer y: the address of peer x");
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct conf d;
		conf_defaults(&d);
		assert_int_equal(conf_parse(bad[i].text, &d, err, sizeof(err)), -EINVAL);
		if (bad[i].err)
			assert_string_equal(err, bad[i].err);
	}
}

static void
test_conf(void **state)
{
	struct conf c;
	char err[256];
	(void)state;

	conf_defaults(&c);
	assert_string_equal(c.socket, "/run/fibd/fibd.sock");
	assert_int_equal(c.protocol, 12);
	assert_int_equal(conf_parse("# fibd\n\nsocket = /tmp/x.sock  # here\nprotocol=200\n"
				    "log_level = debug\n",
			     &c, err, sizeof(err)),
	    0);
	assert_string_equal(c.socket, "/tmp/x.sock");
	assert_int_equal(c.protocol, 200);
	assert_int_equal(c.log_level, LOG_LVL_DEBUG);

	/* A bad line fails the whole text and leaves the configuration as it was. */
	assert_int_equal(conf_parse("protocol = 13\nsocket relative\n", &c, err, sizeof(err)),
	    -EINVAL);
	assert_string_equal(err, "line 2: expected 'key = value'");
	assert_int_equal(c.protocol, 200);
	assert_int_equal(conf_parse("protocol = 2\n", &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "line 1: protocol must be 1..255 and not 2 (kernel)");
	assert_int_equal(conf_parse("protocol = 256\n", &c, err, sizeof(err)), -EINVAL);
	assert_int_equal(conf_parse("socket = run/x\n", &c, err, sizeof(err)), -EINVAL);
	assert_true(strstr(err, "absolute path") != NULL);
	assert_int_equal(conf_parse("\n\ncolour = blue\n", &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "line 3: unknown key 'colour'");
	assert_int_equal(conf_parse("log_level = loud\n", &c, err, sizeof(err)), -EINVAL);

	/* Access: group names become ids (root is group 0 everywhere); none clears. */
	assert_int_equal(c.read_gid, -1);
	assert_int_equal(c.admin_gid, -1);
	assert_int_equal(c.control_timeout, 60);
	assert_int_equal(conf_parse("read_group = root\ncontrol_timeout = 5\n", &c, err, sizeof(err)), 0);
	assert_int_equal(c.read_gid, 0);
	assert_int_equal(c.control_timeout, 5);
	assert_int_equal(conf_parse("read_group = none\nadmin_group = root\n", &c, err, sizeof(err)), 0);
	assert_int_equal(c.read_gid, -1);
	assert_int_equal(c.admin_gid, 0);
	assert_int_equal(conf_parse("admin_group = no-such-group-here\n", &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "line 1: admin_group: no group 'no-such-group-here' on this system");
	assert_int_equal(conf_parse("control_timeout = 0\n", &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "line 1: control_timeout must be 1..86400 seconds");
	assert_int_equal(c.flush_on_exit, 0);
	assert_int_equal(conf_parse("flush_on_exit = yes\n", &c, err, sizeof(err)), 0);
	assert_int_equal(c.flush_on_exit, 1);
	assert_int_equal(conf_parse("flush_on_exit = maybe\n", &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "line 1: flush_on_exit must be yes or no");
	/* The loop's priority below fibd's own: 5 unless set, 0..19. */
	assert_int_equal(c.nice, 5);
	assert_int_equal(conf_parse("nice = 0\n", &c, err, sizeof(err)), 0);
	assert_int_equal(c.nice, 0);
	assert_int_equal(conf_parse("nice = 20\n", &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "line 1: nice must be 0..19");
	/* The writer thread's priority below the loop's: 10 unless set, 0..19. */
	assert_int_equal(c.writer_nice, 10);
	assert_int_equal(conf_parse("writer_nice = 0\n", &c, err, sizeof(err)), 0);
	assert_int_equal(c.writer_nice, 0);
	assert_int_equal(conf_parse("writer_nice = 20\n", &c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "line 1: writer_nice must be 0..19");
	assert_int_equal(conf_load("/nonexistent/fibd.conf", 1, &c, err, sizeof(err)), 0);
	assert_true(conf_load("/nonexistent/fibd.conf", 0, &c, err, sizeof(err)) < 0);
	assert_true(strstr(err, "No such file") != NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routes_accepted),
		cmocka_unit_test(test_routes_refused),
		cmocka_unit_test(test_conf),
		cmocka_unit_test(test_conf_bgp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
