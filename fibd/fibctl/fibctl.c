/*
 * fibctl: the operator's CLI for fibd.
 *
 *   fibctl [-s SOCKET] [-j] status
 *   fibctl [-s SOCKET] [-j] show route [table N] [PREFIX [exact|longest|longer]]
 *   fibctl [-s SOCKET] [-j] dump [--table N] [--family 4|6] [--format text|json]
 *   fibctl [-s SOCKET] metrics
 *   fibctl [-s SOCKET] resync [--table N]
 *   fibctl [-s SOCKET] feed [--name NAME] [--table N] [--metric N] [--stale-time S] [--wait] FILE|-
 *   fibctl help
 *
 * Exit status: 0 success; 1 fibd refused or failed the request; 2 usage or input
 * error (nothing sent); 3 cannot reach fibd; 4 (feed --wait) some routes failed,
 * wait for a nexthop, or were rejected.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <proto-shim/dec.h>
#include <proto-shim/enc.h>

#include "config.h"
#include "parser.h"

#define DEFAULT_SOCKET "/run/fibd/fibd.sock"
#define EXIT_REFUSED 1
#define EXIT_USAGE 2
#define EXIT_UNREACHABLE 3
#define EXIT_ROUTES_FAILED 4

static const char *socket_path = DEFAULT_SOCKET;
static bool json;

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: fibctl [-s SOCKET] [-j] COMMAND\n"
	    "commands:\n"
	    "  status                  what fibd holds: clients, tables, netlink, loop health\n"
	    "  show route [table N] [PREFIX [exact|longest|longer]]\n"
	    "                          fibd's routes (all, or for PREFIX): what the client\n"
	    "                          wants, its state, what the kernel has, why it failed\n"
	    "  dump [--table N] [--family 4|6] [--format text|json]\n"
	    "                          every route clients want, streamed: ip route syntax that\n"
	    "                          feed takes back (text), or one JSON object per line\n"
	    "  metrics                 counters and gauges in Prometheus' text format (also\n"
	    "                          for node_exporter's textfile collector)\n"
	    "  resync [--table N]      rescan every table (or table N) now and repair what\n"
	    "                          differs\n"
	    "  feed [--name NAME] [--table N] [--metric N] [--stale-time S] [--wait] FILE|-\n"
	    "                          make the routes in FILE (ip route syntax, one per line)\n"
	    "                          the desired state of client NAME (default \"fibctl\");\n"
	    "                          an empty file removes NAME's routes. --wait: return once\n"
	    "                          every route is installed or has failed. The routes stay\n"
	    "                          after fibctl ends until the next feed of NAME, or with\n"
	    "                          --stale-time S for S seconds only\n"
	    "  help                    this text\n"
	    "options:\n"
	    "  -s SOCKET  fibd's socket (default %s)\n"
	    "  -j         JSON output\n",
	    DEFAULT_SOCKET);
}

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the connection ---- */

struct conn {
	int fd;
	struct ps_dec *dec;
	struct ps_buf out;
	size_t out_off;
};

static int
conn_open(struct conn *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(c, 0, sizeof(*c));
	ps_buf_init(&c->out);
	if (strlen(socket_path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "fibctl: socket path %s is too long\n", socket_path);
		return -1;
	}
	strcpy(sa.sun_path, socket_path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "fibctl: cannot connect to fibd at %s: %s\n", socket_path,
		    strerror(errno));
		return -1;
	}
	c->dec = ps_dec_new(0);
	return c->dec ? 0 : -1;
}

static void
conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	ps_dec_free(c->dec);
	ps_buf_release(&c->out);
}

static void
put(struct conn *c, const struct ps_msg *m)
{
	struct ps_fault f;

	if (ps_enc_msg(&c->out, m, &f) < 0) {
		fprintf(stderr, "fibctl: cannot encode %s: %s\n", ps_msg_type_name(m->type), f.text);
		exit(EXIT_USAGE);
	}
}

/*
 * Move bytes both ways until the output is sent (when until_sent) or a message
 * arrives. Returns 1 with *ret_msg, 0 when the output is sent and no message is
 * waiting, -1 on error or end of stream.
 */
static int
pump(struct conn *c, bool until_sent, const struct ps_msg **ret_msg)
{
	for (;;) {
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		int r = ps_dec_next(c->dec, ret_msg);

		if (r == 1)
			return 1;
		if (r < 0) {
			fprintf(stderr, "fibctl: bad message from fibd: %s\n", ps_dec_fault(c->dec)->text);
			return -1;
		}
		if (until_sent && c->out_off == c->out.len)
			return 0;
		if (c->out_off < c->out.len)
			p.events |= POLLOUT;
		if (poll(&p, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (p.revents & POLLOUT) {
			ssize_t n = send(c->fd, c->out.data + c->out_off, c->out.len - c->out_off,
			    MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n < 0 && errno != EAGAIN && errno != EINTR) {
				fprintf(stderr, "fibctl: send: %s\n", strerror(errno));
				return -1;
			}
			if (n > 0)
				c->out_off += (size_t)n;
			if (c->out_off == c->out.len) {
				c->out.len = 0;
				c->out_off = 0;
			}
		}
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			void *buf;
			size_t room;
			ssize_t n;
			if (ps_dec_reserve(c->dec, 0, &buf, &room) < 0)
				return -1;
			n = recv(c->fd, buf, room, MSG_DONTWAIT);
			if (n == 0)
				return -1;
			if (n < 0) {
				if (errno == EAGAIN || errno == EINTR)
					continue;
				return -1;
			}
			ps_dec_commit(c->dec, (size_t)n);
		}
	}
}

static void
print_error(const struct ps_msg *m)
{
	fprintf(stderr, "fibd: %s%s%s: %.*s\n", ps_err_name(m->u.error.code) ?: "error",
	    m->u.error.field[0] ? ", field " : "", m->u.error.field, (int)m->u.error.text.len,
	    m->u.error.text.ptr ? m->u.error.text.ptr : "");
}

/* HELLO, then WELCOME. Returns 0, or an exit status. */
static int
handshake(struct conn *c, const struct ps_hello *h)
{
	struct ps_msg m;
	const struct ps_msg *in;

	memset(&m, 0, sizeof(m));
	m.type = PS_HELLO;
	m.u.hello = *h;
	put(c, &m);
	for (;;) {
		if (pump(c, false, &in) < 0) {
			fprintf(stderr, "fibctl: fibd closed the session during the handshake\n");
			return EXIT_UNREACHABLE;
		}
		if (in->type == PS_WELCOME)
			return 0;
		if (in->type == PS_ERROR) {
			print_error(in);
			return EXIT_REFUSED;
		}
	}
}

static void
hello_init(struct ps_hello *h, int role, const char *name)
{
	memset(h, 0, sizeof(*h));
	h->n_versions = 1;
	h->versions[0] = PS_VERSION_MAX;
	h->role = (uint8_t)role;
	snprintf(h->name, sizeof(h->name), "%s", name);
}

/* ---- status, resync ---- */

/* Add one argument to a control request (borrowed: argv or a literal). */
static void
arg_add(struct ps_msg *m, const char *a)
{
	m->u.ctl_request.args[m->u.ctl_request.n_args++] = ps_str_from(a);
}

static bool
is_number(const char *s)
{
	char *end;

	errno = 0;
	return strtoul(s, &end, 10) <= UINT32_MAX && !errno && end != s && !*end;
}

/*
 * A control request: print the answer's chunks, and its closing text. status
 * and metrics take no arguments; resync takes --table N (or iproute2's "table
 * N"); show route [table N] [PREFIX [exact|longest|longer]] goes to fibd as
 * the pairs table N, prefix P, match M.
 */
static int
cmd_simple(int argc, char **argv)
{
	struct conn c;
	struct ps_hello h;
	struct ps_msg m;
	const struct ps_msg *in;
	const char *cmd = argv[0];
	int rc;

	memset(&m, 0, sizeof(m));
	if (!strcmp(cmd, "show")) {
		int i = 2;
		if (argc < 2 || strcmp(argv[1], "route")) {
			fprintf(stderr, "fibctl: show what? (show route)\n");
			return EXIT_USAGE;
		}
		cmd = "show-route";
		if (i + 1 < argc && (!strcmp(argv[i], "table") || !strcmp(argv[i], "--table"))) {
			if (!is_number(argv[i + 1])) {
				fprintf(stderr, "fibctl: show route: table '%s' is not a number\n", argv[i + 1]);
				return EXIT_USAGE;
			}
			arg_add(&m, "table");
			arg_add(&m, argv[i + 1]);
			i += 2;
		}
		if (i < argc) {
			arg_add(&m, "prefix");
			arg_add(&m, argv[i++]);
		}
		if (i < argc) {
			if (strcmp(argv[i], "exact") && strcmp(argv[i], "longest") && strcmp(argv[i], "longer")) {
				fprintf(stderr, "fibctl: show route: '%s' is not exact, longest or longer\n", argv[i]);
				return EXIT_USAGE;
			}
			arg_add(&m, "match");
			arg_add(&m, argv[i++]);
		}
		if (i < argc) {
			usage(stderr);
			return EXIT_USAGE;
		}
	} else if (!strcmp(cmd, "dump")) {
		for (int i = 1; i < argc; i += 2) {
			const char *k = argv[i];
			if (k[0] == '-' && k[1] == '-')
				k += 2;
			if (i + 1 >= argc || (strcmp(k, "table") && strcmp(k, "family") && strcmp(k, "format"))) {
				usage(stderr);
				return EXIT_USAGE;
			}
			if ((!strcmp(k, "table") && !is_number(argv[i + 1])) ||
			    (!strcmp(k, "family") && strcmp(argv[i + 1], "4") && strcmp(argv[i + 1], "6")) ||
			    (!strcmp(k, "format") && strcmp(argv[i + 1], "text") && strcmp(argv[i + 1], "json"))) {
				fprintf(stderr, "fibctl: dump: bad --%s '%s'\n", k, argv[i + 1]);
				return EXIT_USAGE;
			}
			arg_add(&m, k);
			arg_add(&m, argv[i + 1]);
		}
	} else if (argc == 3 && !strcmp(cmd, "resync") &&
	    (!strcmp(argv[1], "--table") || !strcmp(argv[1], "table"))) {
		if (!is_number(argv[2])) {
			fprintf(stderr, "fibctl: resync: table '%s' is not a number\n", argv[2]);
			return EXIT_USAGE;
		}
		arg_add(&m, "table");
		arg_add(&m, argv[2]);
	} else if (argc != 1) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (conn_open(&c) < 0)
		return EXIT_UNREACHABLE;
	hello_init(&h, PS_ROLE_CONTROL, "fibctl");
	if ((rc = handshake(&c, &h))) {
		conn_close(&c);
		return rc;
	}
	m.type = PS_CTL_REQUEST;
	m.u.ctl_request.req = 1;
	snprintf(m.u.ctl_request.cmd, sizeof(m.u.ctl_request.cmd), "%s", cmd);
	m.u.ctl_request.flags = json ? PS_CTL_JSON : 0;
	put(&c, &m);
	for (;;) {
		if (pump(&c, false, &in) < 0) {
			fprintf(stderr, "fibctl: fibd closed the session\n");
			rc = EXIT_UNREACHABLE;
			break;
		}
		if (in->type == PS_CTL_CHUNK) {
			fwrite(in->u.ctl_chunk.data.ptr, 1, in->u.ctl_chunk.data.len, stdout);
		} else if (in->type == PS_CTL_END) {
			if (in->u.ctl_end.code) {
				fprintf(stderr, "fibd: %s: %.*s\n", ps_err_name(in->u.ctl_end.code) ?: "?",
				    (int)in->u.ctl_end.text.len, in->u.ctl_end.text.ptr);
				rc = EXIT_REFUSED;
			} else if (in->u.ctl_end.text.len) {
				printf("%.*s\n", (int)in->u.ctl_end.text.len, in->u.ctl_end.text.ptr);
			}
			break;
		} else if (in->type == PS_ERROR) {
			print_error(in);
			rc = EXIT_REFUSED;
			break;
		}
	}
	conn_close(&c);
	return rc;
}

/* ---- feed ---- */

static int
read_routes(FILE *f, const char *fname, struct ps_buf *enc, unsigned *ret_n)
{
	static struct ps_msg m;
	char *line = NULL;
	size_t cap = 0;
	unsigned lineno = 0, n = 0, bad = 0;
	ssize_t len;

	while ((len = getline(&line, &cap, f)) >= 0) {
		char err[256];
		int r;
		lineno++;
		r = parse_route_line(line, &m, err, sizeof(err));
		if (r == 1)
			continue;
		if (r < 0) {
			if (bad++ < 20)
				fprintf(stderr, "fibctl: %s:%u: %s\n", fname, lineno, err);
			continue;
		}
		if (!bad && ps_enc_msg(enc, &m, NULL) < 0) {
			fprintf(stderr, "fibctl: out of memory\n");
			free(line);
			return -1;
		}
		n++;
	}
	free(line);
	if (bad) {
		fprintf(stderr, "fibctl: %u bad line%s in %s; nothing was sent\n", bad,
		    bad == 1 ? "" : "s", fname);
		return -1;
	}
	*ret_n = n;
	return 0;
}

/* A message during a feed: count and report results. -1 if fibd sent ERROR. */
static int
on_feed_msg(const struct ps_msg *in, unsigned counts[6])
{
	if (in->type == PS_ERROR) {
		print_error(in);
		return -1;
	}
	if (in->type != PS_ROUTE_STATUS)
		return 0;
	for (unsigned i = 0; i < in->u.status.n; i++) {
		const struct ps_status_entry *e = &in->u.status.e[i];
		char line[256];
		struct ps_msg tmp;

		counts[e->state < 6 ? e->state : 0]++;
		if (e->state != PS_RS_FAILED && e->state != PS_RS_REJECTED &&
		    e->state != PS_RS_WAITING)
			continue;
		memset(&tmp, 0, sizeof(tmp));
		tmp.type = PS_WITHDRAW;
		tmp.u.withdraw = e->key;
		ps_msg_format(&tmp, line, sizeof(line));
		fprintf(stderr, "fibctl: %s:%s: %s%s%.*s\n",
		    e->state == PS_RS_FAILED	? "failed"
		    : e->state == PS_RS_WAITING ? "waiting"
						: "rejected",
		    line + strlen("WITHDRAW"), strerror(e->error), e->text.len ? ": " : "",
		    (int)e->text.len, e->text.ptr ? e->text.ptr : "");
	}
	return 0;
}

static int
cmd_feed(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "table", required_argument, NULL, 't' },
		{ "metric", required_argument, NULL, 'm' },
		{ "wait", no_argument, NULL, 'w' },
		{ "stale-time", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	const char *name = "fibctl", *fname;
	bool wait = false;
	struct ps_hello h;
	struct ps_buf routes;
	struct conn c;
	struct ps_msg m;
	const struct ps_msg *in;
	unsigned n = 0, counts[6] = { 0 };
	uint64_t gen;
	double t0;
	int o, rc;
	FILE *f;

	hello_init(&h, PS_ROLE_FEED, name);
	/* A feed outlives the command: its routes stay until the next feed under its name. */
	h.has |= PS_HELLO_PERSIST;
	h.persist = 1;
	optind = 1;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		char *end;
		unsigned long v;
		switch (o) {
		case 'n':
			name = optarg;
			break;
		case 't':
		case 'm':
		case 'S':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || v > UINT32_MAX || (o == 't' && v == 0) ||
			    (o == 'S' && v > PS_STALE_TIME_MAX)) {
				fprintf(stderr, "fibctl: invalid --%s '%s'\n",
				    o == 't' ? "table" : o == 'm' ? "metric" : "stale-time", optarg);
				return EXIT_USAGE;
			}
			if (o == 'S') {
				/* The routes stay only this long after the command ends. */
				h.stale_time = (uint32_t)v;
				h.has |= PS_HELLO_STALE;
				h.persist = 0;
			} else if (o == 't') {
				h.table = (uint32_t)v;
				h.has |= PS_HELLO_TABLE;
			} else {
				h.metric = (uint32_t)v;
				h.has |= PS_HELLO_METRIC;
			}
			break;
		case 'w':
			wait = true;
			break;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return EXIT_USAGE;
	}
	snprintf(h.name, sizeof(h.name), "%s", name);
	if (strlen(name) > PS_NAME_MAX || !*name) {
		fprintf(stderr, "fibctl: --name must be 1..%d bytes\n", PS_NAME_MAX);
		return EXIT_USAGE;
	}
	fname = argv[optind];
	f = strcmp(fname, "-") ? fopen(fname, "re") : stdin;
	if (!f) {
		fprintf(stderr, "fibctl: %s: %s\n", fname, strerror(errno));
		return EXIT_USAGE;
	}
	ps_buf_init(&routes);
	rc = read_routes(f, fname, &routes, &n);
	if (f != stdin)
		fclose(f);
	if (rc < 0) {
		ps_buf_release(&routes);
		return EXIT_USAGE;
	}

	t0 = now_s();
	if (conn_open(&c) < 0) {
		ps_buf_release(&routes);
		return EXIT_UNREACHABLE;
	}
	if ((rc = handshake(&c, &h))) {
		conn_close(&c);
		ps_buf_release(&routes);
		return rc;
	}
	gen = (uint64_t)time(NULL) * 1000000000ull + (uint64_t)(now_s() * 1e9) % 1000000000ull;
	memset(&m, 0, sizeof(m));
	m.type = PS_FEED_BEGIN;
	m.u.generation = gen;
	put(&c, &m);
	/* The routes were encoded while reading: hand the whole buffer over. */
	if (c.out.len == 0) {
		ps_buf_release(&c.out);
		c.out = routes;
		ps_buf_init(&routes);
	}
	while (c.out.len) {
		int r = pump(&c, true, &in);
		if (r < 0) {
			fprintf(stderr, "fibctl: fibd closed the session\n");
			rc = EXIT_UNREACHABLE;
			goto out;
		}
		if (r == 1 && on_feed_msg(in, counts) < 0) {
			rc = EXIT_REFUSED;
			goto out;
		}
		if (c.out.len == 0 && routes.len) {
			ps_buf_release(&c.out);
			c.out = routes;
			ps_buf_init(&routes);
		}
	}
	m.type = PS_FEED_END;
	m.u.generation = gen;
	put(&c, &m);
	if (wait) {
		m.type = PS_PING;
		m.u.token = gen;
	} else {
		m.type = PS_BYE;
		m.u.bye_flags = 0;
	}
	put(&c, &m);
	for (;;) {
		int r = pump(&c, false, &in);
		if (r < 0) {
			if (wait) {
				fprintf(stderr, "fibctl: fibd closed the session\n");
				rc = EXIT_UNREACHABLE;
			}
			break;
		}
		if (on_feed_msg(in, counts) < 0) {
			rc = EXIT_REFUSED;
			break;
		}
		if (in->type == PS_PONG && wait)
			break;
	}
	if (rc == 0) {
		double dt = now_s() - t0;
		printf("%u routes sent for %s in %.3f s", n, name, dt);
		if (wait)
			printf(": installed %u, removed %u, failed %u, waiting %u, rejected %u (%.0f routes/s)",
			    counts[PS_RS_INSTALLED], counts[PS_RS_REMOVED], counts[PS_RS_FAILED],
			    counts[PS_RS_WAITING], counts[PS_RS_REJECTED], dt > 0 ? n / dt : 0.0);
		printf("\n");
		if (wait && (counts[PS_RS_FAILED] || counts[PS_RS_WAITING] || counts[PS_RS_REJECTED]))
			rc = EXIT_ROUTES_FAILED;
	}
out:
	conn_close(&c);
	ps_buf_release(&routes);
	return rc;
}

int
main(int argc, char **argv)
{
	int o;

	while ((o = getopt(argc, argv, "+s:jhV")) != -1) {
		switch (o) {
		case 's':
			socket_path = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("fibctl %s\n", FIBD_VERSION);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[0], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[0], "status") || !strcmp(argv[0], "resync") || !strcmp(argv[0], "metrics") ||
	    !strcmp(argv[0], "show") || !strcmp(argv[0], "dump"))
		return cmd_simple(argc, argv);
	if (!strcmp(argv[0], "feed"))
		return cmd_feed(argc, argv);
	fprintf(stderr, "fibctl: unknown command '%s' (try 'fibctl help')\n", argv[0]);
	return EXIT_USAGE;
}
