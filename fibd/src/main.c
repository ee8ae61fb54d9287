/*
 * fibd: the daemon. One libuv loop owns all state (docs/design.md, invariants 1-3):
 * feed sessions (feed.c), the desired tables (table.c), the netlink writer (nl.c),
 * control requests (ctl.c), loop health (health.c) and the slab cleanup job.
 *
 *   fibd [-f] [-d] [-c FILE] [-s SOCKET] [--user NAME]
 *
 * SIGTERM and SIGINT stop fibd and leave every route in the kernel (unless
 * flush_on_exit is set: then fibd withdraws its routes first, for at most
 * FLUSH_WAIT_MS; a second signal stops it at once); SIGHUP re-reads the
 * configuration (a bad file is refused and the running one stays).
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "bgp.h"
#include "conf.h"
#include "config.h"
#include "ctl.h"
#include "feed.h"
#include "health.h"
#include "learn.h"
#include "event.h"
#include "log.h"
#include "monitor.h"
#include "nl.h"
#include "notify.h"
#include "owner.h"
#include "privs.h"
#include "reply.h"
#include "state.h"
#include "status.h"
#include "sync.h"
#include "table.h"
#include "watch.h"

#define SLAB_TICK_MS 20
#define FLUSH_WAIT_MS 60000
#define FLUSH_POLL_MS 50

static struct {
	uv_loop_t loop;
	uv_signal_t sig_term, sig_int, sig_hup;
	uv_timer_t slab_tick; /* runs only while the slabs have cleanup work */
	uv_check_t slab_arm;  /* after each loop pass: starts slab_tick if they have */
	uv_timer_t state_tick; /* writes the state file again after a failure */
	uv_timer_t flush_wait;
	uint64_t flush_deadline;
	bool stopping;
	struct conf conf;
	const char *conf_path;
	int conf_optional;
	char server_id[PS_NAME_MAX + 1];
	struct feed_config feed;
} m;

static void
usage(FILE *f)
{
	fprintf(f, "usage: fibd [-f] [-d] [-c FILE] [-s SOCKET]\n"
		   "  -f         stay in the foreground and log to stderr\n"
		   "  -d         log debug messages\n"
		   "  -c FILE    configuration file (default %s)\n"
		   "  -s SOCKET  socket path (default %s)\n"
		   "  --user NAME  started as root: become NAME, keeping only CAP_NET_ADMIN\n"
		   "  --version  print the version\n",
	    CONF_DEFAULT_PATH, CONF_DEFAULT_SOCKET);
}

/* Is CAP_NET_ADMIN (bit 12) in our effective set? */
static int
have_net_admin(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned long long eff = 0;

	if (!f)
		return geteuid() == 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return (eff >> 12) & 1;
}

static void
shutdown_all(void)
{
	if (!m.flush_deadline)
		log_info("stopping; the kernel's routes stay in place");
	notify_close();
	owner_close();
	bgp_close();
	feed_close();
	sync_close();
	mon_close();
	nl_close();
	health_close();
	uv_close((uv_handle_t *)&m.sig_term, NULL);
	uv_close((uv_handle_t *)&m.sig_int, NULL);
	uv_close((uv_handle_t *)&m.sig_hup, NULL);
	uv_close((uv_handle_t *)&m.slab_tick, NULL);
	uv_close((uv_handle_t *)&m.slab_arm, NULL);
	uv_close((uv_handle_t *)&m.state_tick, NULL);
	uv_close((uv_handle_t *)&m.flush_wait, NULL);
}

static int
flush_route(struct route *r, void *ctx)
{
	uint64_t *n = ctx;

	if (!r->have && !r->want)
		return 0;
	route_set_want(r, NULL);
	nl_enqueue(r);
	(*n)++;
	return 0;
}

static void
main_on_flush_wait(uv_timer_t *t)
{
	uint64_t left = nl_pending() - nl_held(); /* a decoupled table's wait, and stay */

	if (left && uv_now(&m.loop) < m.flush_deadline)
		return;
	uv_timer_stop(t);
	if (left)
		log_warn("flush_on_exit: %llu routes still pending after %u s; stopping anyway",
		    (unsigned long long)left, FLUSH_WAIT_MS / 1000);
	else
		log_info("flush_on_exit: every route of fibd's withdrawn");
	shutdown_all();
}

/*
 * flush_on_exit: no client may change anything any more, no rescan may write
 * routes back; every route fibd installed or adopted is withdrawn, and fibd
 * stops once the kernel has acknowledged it (or the wait is over).
 */
static void
flush_then_stop(void)
{
	uint64_t n = 0;

	owner_close();
	bgp_close();
	feed_close();
	sync_close();
	for (unsigned i = 0; i < table_count(); i++)
		if (!table_at((uint16_t)i)->decoupled) /* fibd leaves those alone */
			table_walk(table_at((uint16_t)i), NULL, 0, flush_route, &n);
	log_info("stopping; flush_on_exit: withdrawing %llu routes of fibd's first",
	    (unsigned long long)n);
	m.flush_deadline = uv_now(&m.loop) + FLUSH_WAIT_MS;
	uv_timer_start(&m.flush_wait, main_on_flush_wait, 0, FLUSH_POLL_MS);
}

/*
 * The loop, `nice` steps below the priority fibd started with (before the
 * writer thread, which goes writer_nice steps below the loop). On a machine
 * short of cores BIRD's loop, which feeds fibd and answers birdc, then gets
 * the CPU first: with fibd at the same priority, BIRD 2 waited 5 ms for a
 * core about 50 times in a full feed. (Linux's nice is per thread: who 0 is
 * this one.)
 */
static void
lower_priority(int steps)
{
	int base;

	if (!steps)
		return;
	errno = 0;
	base = getpriority(PRIO_PROCESS, 0);
	if (errno || setpriority(PRIO_PROCESS, 0, base + steps > 19 ? 19 : base + steps) < 0)
		log_warn_errno(errno, "cannot lower the loop's priority (nice)");
}

/* Who may use the socket: the groups of the configuration. */
static void
main_set_access(void)
{
	struct feed_access a = {
		.read_set = m.conf.read_gid >= 0,
		.admin_set = m.conf.admin_gid >= 0,
		.read_gid = (gid_t)m.conf.read_gid,
		.admin_gid = (gid_t)m.conf.admin_gid,
		.control_timeout_s = m.conf.control_timeout,
	};

	feed_set_access(&a);
}

static void
main_on_signal(uv_signal_t *h, int signum)
{
	(void)h;
	if (signum == SIGHUP) {
		struct conf c = m.conf;
		char err[512];
		if (conf_load(m.conf_path, m.conf_optional, &c, err, sizeof(err)) < 0) {
			log_warn("reload refused, the running configuration stays: %s", err);
			return;
		}
		/* Where fibd listens, what it marks routes with and how it writes them: a restart. */
		if (strcmp(c.socket, m.conf.socket) || c.protocol != m.conf.protocol ||
		    c.nexthop_objects != m.conf.nexthop_objects || c.nice != m.conf.nice ||
		    c.writer_nice != m.conf.writer_nice || strcmp(c.state_file, m.conf.state_file))
			log_warn("reload: socket, protocol, nexthop_objects, nice, writer_nice and state_file "
				 "change only with a restart; the others are applied");
		m.conf.log_level = c.log_level;
		m.conf.flush_on_exit = c.flush_on_exit;
		m.conf.startup_grace = c.startup_grace;
		m.conf.rescan_interval = c.rescan_interval;
		sync_set_times(c.startup_grace, c.rescan_interval);
		if (c.monitor_buffer != m.conf.monitor_buffer) {
			int r = mon_set_buffer(c.monitor_buffer);
			if (r < 0)
				log_warn_errno(r, "reload: monitor_buffer");
			else
				m.conf.monitor_buffer = c.monitor_buffer;
		}
		m.conf.read_gid = c.read_gid;
		m.conf.admin_gid = c.admin_gid;
		m.conf.control_timeout = c.control_timeout;
		main_set_access();
		bgp_reconfigure(&c);
		log_set_level(c.log_level);
		log_info("configuration reloaded from %s", m.conf_path);
		return;
	}
	if (m.stopping) {
		log_warn("second signal: stopping now");
		uv_timer_stop(&m.flush_wait);
		shutdown_all();
		return;
	}
	m.stopping = true;
	if (m.conf.flush_on_exit)
		flush_then_stop();
	else
		shutdown_all();
}

/*
 * Slab cleanup runs in bounded steps every SLAB_TICK_MS while there is any, and
 * not at all otherwise: an idle fibd does not wake 50 times a second for it.
 * Work appears only where the loop ran (routes freed), so a check after each
 * loop pass is enough to start the tick again.
 */
static void
main_on_slab_tick(uv_timer_t *t)
{
	if (!table_slab_cleanup())
		uv_timer_stop(t);
}

static void
main_on_slab_arm(uv_check_t *c)
{
	(void)c;
	if (!uv_is_active((uv_handle_t *)&m.slab_tick) && table_slab_cleanup_pending())
		uv_timer_start(&m.slab_tick, main_on_slab_tick, SLAB_TICK_MS, SLAB_TICK_MS);
}

/*
 * A link or address changed, or notifications were lost: routes waiting for an
 * unreachable nexthop are tried again; and since a link going down takes IPv4
 * routes with it without a word on the monitor, a rescan finds what is gone.
 * Lost notifications were lost to learners too: they are sent their tables again.
 */
static void
main_links_changed(bool lost)
{
	nl_links_changed();
	if (lost)
		sync_notifications_lost();
	else
		sync_rescan_soon();
}

static void
main_on_state_tick(uv_timer_t *t)
{
	(void)t;
	if (state_dirty())
		state_save();
}

static void
main_scan_table(uint32_t id, uint8_t family, bool decoupled, void *ctx)
{
	struct rtable *t = table_get(id, family, true);
	(void)ctx;

	if (!t)
		return;
	if (decoupled) {
		t->decoupled = true;
		log_info("table %u %s stays decoupled, as before the restart (fibctl couple to end it)",
		    id, family_name(family));
	}
	sync_table_ready(t);
}

static void
main_fed(uint32_t id, uint8_t family, const char *client, void *ctx)
{
	(void)ctx;
	owner_await(id, family, client);
}

/*
 * The socket's directory: made if missing; refused if anyone may write to it
 * (another user could put a socket of their own in fibd's place). With --user,
 * handed to that user, who must create the socket in it.
 */
static int
ensure_dir(const char *socket_path, const uid_t *uid, gid_t gid)
{
	char tmp[sizeof(m.conf.socket)];
	struct stat st;
	char *dir;

	snprintf(tmp, sizeof(tmp), "%s", socket_path);
	dir = dirname(tmp);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	if (stat(dir, &st) < 0)
		return -errno;
	if (st.st_mode & S_IWOTH)
		log_fatal("the socket's directory %s is writable by anyone: refusing to run", dir);
	if (uid && st.st_uid != *uid && chown(dir, *uid, gid) < 0)
		return -errno;
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ "user", required_argument, NULL, 'u' },
		{ NULL, 0, NULL, 0 },
	};
	const char *socket_arg = NULL, *user = NULL;
	uid_t uid = 0;
	gid_t gid = 0;
	int foreground = 0, debug = 0, c, r;
	char err[512], host[64];

	m.conf_path = CONF_DEFAULT_PATH;
	m.conf_optional = 1;
	while ((c = getopt_long(argc, argv, "fdc:s:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			foreground = 1;
			break;
		case 'd':
			debug = 1;
			break;
		case 'c':
			m.conf_path = optarg;
			m.conf_optional = 0;
			break;
		case 's':
			socket_arg = optarg;
			break;
		case 'u':
			user = optarg;
			break;
		case 'V':
			printf("fibd %s (proto-shim versions %d..%d)\n", FIBD_VERSION, PS_VERSION_MIN,
			    PS_VERSION_MAX);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}

	log_init("fibd", foreground, debug ? LOG_LVL_DEBUG : LOG_LVL_INFO);
	conf_defaults(&m.conf);
	if (conf_load(m.conf_path, m.conf_optional, &m.conf, err, sizeof(err)) < 0)
		log_fatal("configuration: %s", err);
	if (debug)
		m.conf.log_level = LOG_LVL_DEBUG;
	log_set_level(m.conf.log_level);
	if (socket_arg) {
		if (strlen(socket_arg) >= sizeof(m.conf.socket))
			log_fatal("socket path %s is too long", socket_arg);
		snprintf(m.conf.socket, sizeof(m.conf.socket), "%s", socket_arg);
	}
	if (!have_net_admin())
		log_fatal("fibd needs CAP_NET_ADMIN to change routes: run it as root or grant the "
			  "capability");
	if (!foreground && daemon(0, 0) < 0)
		log_fatal_errno(errno, "cannot become a daemon");

	if (user && privs_lookup(user, &uid, &gid) < 0)
		log_fatal("--user %s: no such user", user);
	/* Before privileges go: port 179 needs CAP_NET_BIND_SERVICE, which fibd does not keep. */
	if ((r = bgp_bind(&m.conf, err, sizeof(err))) < 0)
		log_fatal("%s", err);
	if ((r = ensure_dir(m.conf.socket, user ? &uid : NULL, gid)) < 0)
		log_fatal_errno(r, "cannot use the directory of %s", m.conf.socket);
	if (user) {
		if ((r = privs_drop(uid, gid, err, sizeof(err))) < 0)
			log_fatal("--user %s: %s", user, err);
		log_info("running as %s (uid %u), keeping only CAP_NET_ADMIN", user, (unsigned)uid);
	} else if (geteuid() != 0 && m.conf.n_bgp_listen) {
		/* Under systemd with CAP_NET_BIND_SERVICE for the BGP port: it is no longer needed. */
		if ((r = privs_narrow(err, sizeof(err))) < 0)
			log_fatal("cannot give up the capabilities it no longer needs: %s", err);
	}
	if ((r = uv_loop_init(&m.loop)) < 0)
		log_fatal("cannot make the event loop: %s", uv_strerror(r));
	if (table_init() < 0)
		log_fatal("out of memory");
	/*
	 * The layers, wired: each calls only downward, and hears from below
	 * through the hooks given here (docs/design.md).
	 */
	event_set_sink(watch_on_event);
	reply_set_wake(feed_wake);
	status_set_sessions(feed_get_stats);
	status_set_bgp(bgp_peer_info_at);
	owner_init(&m.loop, &(const struct owner_hooks){ .ready = feed_wake });
	learn_init(m.conf.protocol, &sync_env,
	    &(const struct learn_hooks){ .route = feed_learn, .refresh = feed_learn_refresh });
	lower_priority(m.conf.nice);
	nl_set_writer_nice(m.conf.writer_nice);
	if ((r = nl_init(&m.loop, m.conf.protocol, &(const struct nl_hooks){ .done = owner_route_done,
		 .writable = sync_table_ready, .exists = sync_route_exists,
		 .deleted = sync_route_deleted })) < 0)
		log_fatal_errno(r, "cannot open the netlink writer's socket");
	if ((r = mon_init(&m.loop, &(const struct mon_hooks){ .route = sync_kernel_route,
		 .link_down = nl_link_down, .changed = main_links_changed }, m.conf.monitor_buffer,
		 nl_portid())) < 0)
		log_fatal_errno(r, "cannot open the netlink monitor socket");
	nl_use_nh_objects(m.conf.nexthop_objects);
	if ((r = sync_init(&m.loop, m.conf.protocol, m.conf.startup_grace, m.conf.rescan_interval)) < 0)
		log_fatal_errno(r, "cannot open the netlink dump socket");
	/* The tables managed before: scan them now, before any client returns. */
	state_init(m.conf.state_file);
	state_set_fed_source(owner_each_fed);
	if ((r = state_load(&(const struct state_load_cbs){ .table = main_scan_table, .fed = main_fed },
		 NULL)) < 0)
		log_warn_errno(r, "cannot read the state file %s", m.conf.state_file);
	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = '\0';
	snprintf(m.server_id, sizeof(m.server_id), "fibd-%s@%.40s", FIBD_VERSION, host);
	for (char *p = m.server_id; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			*p = '_';
	m.feed.socket_path = m.conf.socket;
	m.feed.protocol = m.conf.protocol;
	m.feed.server_id = m.server_id;
	m.feed.boot_epoch = (uint64_t)time(NULL);
	main_set_access();
	if (feed_init(&m.loop, &m.feed) < 0)
		return 1;
	if (bgp_init(&m.loop, &m.conf) < 0)
		return 1;
	status_set_info(uv_hrtime(), m.conf.protocol);
	health_init(&m.loop);
	notify_init(&m.loop);

	uv_signal_init(&m.loop, &m.sig_term);
	uv_signal_init(&m.loop, &m.sig_int);
	uv_signal_init(&m.loop, &m.sig_hup);
	uv_signal_start(&m.sig_term, main_on_signal, SIGTERM);
	uv_signal_start(&m.sig_int, main_on_signal, SIGINT);
	uv_signal_start(&m.sig_hup, main_on_signal, SIGHUP);
	signal(SIGPIPE, SIG_IGN);
	uv_timer_init(&m.loop, &m.slab_tick);
	uv_timer_init(&m.loop, &m.flush_wait);
	uv_check_init(&m.loop, &m.slab_arm);
	uv_check_start(&m.slab_arm, main_on_slab_arm);
	uv_unref((uv_handle_t *)&m.slab_arm); /* (it must not keep the loop alive) */
	uv_timer_init(&m.loop, &m.state_tick);
	uv_timer_start(&m.state_tick, main_on_state_tick, STATE_RETRY_S * 1000, STATE_RETRY_S * 1000);

	log_info("fibd %s started: protocol %u, socket %s", FIBD_VERSION, m.conf.protocol,
	    m.conf.socket);
	uv_run(&m.loop, UV_RUN_DEFAULT);
	uv_loop_close(&m.loop);
	log_info("stopped");
	return 0;
}
