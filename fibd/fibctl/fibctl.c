/*
 * fibctl: the operator's CLI for fibd (`fibctl help` lists the commands;
 * args.c turns the control commands into requests, parser.c reads feeds).
 *
 * Exit status: 0 success; 1 fibd refused or failed the request; 2 usage or input
 * error (nothing sent); 3 cannot reach fibd; 4 (feed --wait) some routes failed,
 * wait for a nexthop, or were rejected; 5 (diff) differences found.
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

#include "args.h"
#include "config.h"
#include "parser.h"

#define DEFAULT_SOCKET "/run/fibd/fibd.sock"
#define EXIT_REFUSED 1
#define EXIT_USAGE 2
#define EXIT_UNREACHABLE 3
#define EXIT_ROUTES_FAILED 4
#define EXIT_DIFFERENCES 5

static const char *socket_path = DEFAULT_SOCKET;
static bool json;
static double deadline; /* now_s() after which pump gives up (feed --timeout), 0: none */

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: fibctl [-s SOCKET] [-j] COMMAND\n"
	    "commands that read:\n"
	    "  status                  what fibd holds: clients, tables, netlink, loop health\n"
	    "  clients                 the clients that feed routes: state, routes, peer\n"
	    "  tables                  fibd's tables: state (in sync, first scan, decoupled),\n"
	    "                          counts, the last validated dump\n"
	    "  show route [table N] [PREFIX [exact|longest|longer]]\n"
	    "                          fibd's routes (all, or for PREFIX): what the client\n"
	    "                          wants, its state, what the kernel has, why it failed\n"
	    "  dump [--table N] [--family 4|6] [--format text|json|binary]\n"
	    "                          every route clients want, streamed: ip route syntax that\n"
	    "                          feed takes back (text), one JSON object per line, or\n"
	    "                          fixed-layout records (docs/PROTOCOL.md)\n"
	    "  diff [--table N]        what the kernel has that differs from what clients want,\n"
	    "                          from a fresh validated dump: missing, differs, extra,\n"
	    "                          failed (exit status 5 if anything differs)\n"
	    "  watch [--table N]       route events as they happen, until interrupted\n"
	    "  metrics                 counters and gauges in Prometheus' text format (also\n"
	    "                          for node_exporter's textfile collector)\n"
	    "commands that change state (root, fibd's user and group, admin_group):\n"
	    "  resync [--table N]      rescan every table (or table N) now and repair what\n"
	    "                          differs\n"
	    "  decouple [--table N]    stop writing to the table (every table); route changes\n"
	    "                          are still taken, and wait\n"
	    "  couple [--table N]      write again: what waited, then repair what differs\n"
	    "  feed [--name NAME] [--table N] [--metric N] [--stale-time S] [--wait [--timeout S]]\n"
	    "       FILE|-\n"
	    "                          make the routes in FILE (ip route syntax, one per line)\n"
	    "                          the desired state of client NAME (default \"fibctl\");\n"
	    "                          an empty file removes NAME's routes. --wait: return once\n"
	    "                          every route is installed or has failed (--timeout: give\n"
	    "                          up waiting after S seconds, exit 4). The routes stay\n"
	    "                          after fibctl ends until the next feed of NAME, or with\n"
	    "                          --stale-time S for S seconds only\n"
	    "  help                    this text\n"
	    "options:\n"
	    "  -s SOCKET  fibd's socket (default %s)\n"
	    "  -j         JSON output\n"
	    "exit status: 0 done; 1 fibd refused or failed; 2 usage; 3 fibd unreachable;\n"
	    "  4 feed --wait: some routes failed or --timeout passed; 5 diff: differences found\n",
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
 * waiting, -1 on error or end of stream, -2 once the deadline (if any) passed.
 */
static int
pump(struct conn *c, bool until_sent, const struct ps_msg **ret_msg)
{
	for (;;) {
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		int r = ps_dec_next(c->dec, ret_msg), wait_ms = -1;

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
		if (deadline) {
			double left = deadline - now_s();
			if (left <= 0)
				return -2;
			wait_ms = (int)(left * 1000) + 1;
		}
		if (poll(&p, 1, wait_ms) < 0) {
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

/* ---- control commands ---- */

/* diff's closing text starts "diff: N differences": N decides the exit status. */
static bool
diff_found(const struct ps_str *text)
{
	char buf[64];
	unsigned long long n = 0;

	snprintf(buf, sizeof(buf), "%.*s", (int)text->len, text->ptr ? text->ptr : "");
	return sscanf(buf, "diff: %llu differences", &n) == 1 && n > 0;
}

/*
 * A control request (args.c makes it): print the answer's chunks as they come
 * (dump and watch stream), and its closing text. diff exits with
 * EXIT_DIFFERENCES when it found any; binary dumps are not for terminals.
 */
static int
cmd_control(int argc, char **argv)
{
	struct conn c;
	struct ps_hello h;
	struct ps_msg m;
	const struct ps_msg *in;
	char err[256];
	bool diff = !strcmp(argv[0], "diff");
	int rc;

	memset(&m, 0, sizeof(m));
	if (args_request(argc, argv, &m.u.ctl_request, err, sizeof(err)) < 0) {
		fprintf(stderr, "fibctl: %s\n", err);
		return EXIT_USAGE;
	}
	for (unsigned i = 0; i + 1 < m.u.ctl_request.n_args; i += 2)
		if (!strcmp(argv[0], "dump") && m.u.ctl_request.args[i + 1].len == 6 &&
		    !memcmp(m.u.ctl_request.args[i + 1].ptr, "binary", 6) && isatty(STDOUT_FILENO)) {
			fprintf(stderr, "fibctl: dump --format binary is for programs, not a terminal: "
					"redirect it to a file or a pipe\n");
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
	m.u.ctl_request.flags = json ? PS_CTL_JSON : 0;
	put(&c, &m);
	for (;;) {
		if (pump(&c, false, &in) < 0) {
			fprintf(stderr, "fibctl: fibd closed the session\n");
			rc = EXIT_UNREACHABLE;
			break;
		}
		if (in->type == PS_CTL_CHUNK) {
			if (fwrite(in->u.ctl_chunk.data.ptr, 1, in->u.ctl_chunk.data.len, stdout) !=
			    in->u.ctl_chunk.data.len) {
				rc = EXIT_UNREACHABLE; /* the reader went (a closed pipe): stop quietly */
				break;
			}
			if (!strcmp(argv[0], "watch"))
				fflush(stdout);
		} else if (in->type == PS_CTL_END) {
			const struct ps_str *text = &in->u.ctl_end.text;
			if (in->u.ctl_end.code) {
				fprintf(stderr, "fibd: %s: %.*s\n", ps_err_name(in->u.ctl_end.code) ?: "?",
				    (int)text->len, text->ptr);
				rc = EXIT_REFUSED;
			} else if (text->len) {
				/* With -j, stdout is JSON only: the closing words go to stderr. */
				fprintf(json ? stderr : stdout, "%.*s\n", (int)text->len, text->ptr);
				if (diff && diff_found(text))
					rc = EXIT_DIFFERENCES;
			}
			break;
		} else if (in->type == PS_ERROR) {
			print_error(in);
			rc = EXIT_REFUSED;
			break;
		}
	}
	conn_close(&c);
	if (fflush(stdout) != 0 && rc == 0)
		rc = EXIT_UNREACHABLE;
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
		{ "timeout", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	const char *name = "fibctl", *fname;
	bool wait = false;
	unsigned long timeout_s = 0;
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
		case 'T':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || !v || v > 86400) {
				fprintf(stderr, "fibctl: invalid --timeout '%s' (1..86400 seconds)\n", optarg);
				return EXIT_USAGE;
			}
			timeout_s = v;
			break;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1 || (timeout_s && !wait)) {
		if (timeout_s && !wait)
			fprintf(stderr, "fibctl: --timeout goes with --wait\n");
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
	if (timeout_s)
		deadline = t0 + (double)timeout_s;
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
		if (r == -2)
			break; /* timed out: said below */
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
	if (c.out.len) {
		fprintf(stderr, "fibctl: timed out after %lu s while sending the routes; the feed "
				"stays open and is abandoned\n", timeout_s);
		rc = EXIT_ROUTES_FAILED;
		goto out;
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
		if (r == -2) {
			unsigned told = counts[PS_RS_INSTALLED] + counts[PS_RS_REMOVED] +
			    counts[PS_RS_FAILED] + counts[PS_RS_WAITING] + counts[PS_RS_REJECTED];
			fprintf(stderr, "fibctl: timed out after %lu s: %u results so far (installed %u, "
					"removed %u, failed %u, waiting %u, rejected %u); the routes stay "
					"desired and fibd goes on\n", timeout_s, told,
			    counts[PS_RS_INSTALLED], counts[PS_RS_REMOVED], counts[PS_RS_FAILED],
			    counts[PS_RS_WAITING], counts[PS_RS_REJECTED]);
			rc = EXIT_ROUTES_FAILED;
			break;
		}
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
	if (args_is_control(argv[0]))
		return cmd_control(argc, argv);
	if (!strcmp(argv[0], "feed"))
		return cmd_feed(argc, argv);
	fprintf(stderr, "fibctl: unknown command '%s' (try 'fibctl help')\n", argv[0]);
	return EXIT_USAGE;
}
