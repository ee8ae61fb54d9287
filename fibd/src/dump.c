/*
 * dump: one dump at a time on a socket of its own (dump.h). States: idle,
 * running (a request sent, its replies read as they come), and back to idle at
 * its end; an end that is not the dump's own NLMSG_DONE replaces the socket.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <libmnl/libmnl.h>

#include "dump.h"
#include "health.h"
#include "log.h"

static struct {
	uv_loop_t *loop;
	struct mnl_socket *sock;
	uv_poll_t *poll;   /* allocated: a replaced socket's handle is freed in its close callback */
	uint32_t portid;
	bool open;
	bool running;
	uint32_t seq;
	uint32_t table;
	uint8_t family;
	uint64_t bytes;
	struct dump_hooks hooks;
	void *ctx;
	struct dump_stats st;
	_Alignas(8) char rx[65536]; /* netlink messages are 4-byte aligned */
} dp;

static void dump_on_readable(uv_poll_t *h, int status, int events);

static ssize_t
real_send(const void *buf, size_t len)
{
	return mnl_socket_sendto(dp.sock, buf, len);
}

static ssize_t
real_recv(void *buf, size_t len)
{
	return mnl_socket_recvfrom(dp.sock, buf, len);
}

static dump_send_fn io_send = real_send;
static dump_recv_fn io_recv = real_recv;

void
dump_set_io(dump_send_fn send_fn, dump_recv_fn recv_fn)
{
	io_send = send_fn ? send_fn : real_send;
	io_recv = recv_fn ? recv_fn : real_recv;
}

uint32_t
dump_portid(void)
{
	return dp.portid;
}

static void
on_poll_closed(uv_handle_t *h)
{
	free(h);
}

static int
sock_open(void)
{
	int one = 1, size = DUMP_RCVBUF, err;
	struct mnl_socket *s = mnl_socket_open2(NETLINK_ROUTE, SOCK_NONBLOCK | SOCK_CLOEXEC);
	uv_poll_t *poll;

	if (!s)
		return -errno;
	if (mnl_socket_bind(s, 0, MNL_SOCKET_AUTOPID) < 0 ||
	    mnl_socket_setsockopt(s, NETLINK_GET_STRICT_CHK, &one, sizeof(one)) < 0) {
		err = -errno;
		mnl_socket_close(s);
		return err;
	}
	if (!(poll = malloc(sizeof(*poll)))) {
		mnl_socket_close(s);
		return -ENOMEM;
	}
	/* FORCE goes past the system's maximum; it needs CAP_NET_ADMIN. */
	if (setsockopt(mnl_socket_get_fd(s), SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		setsockopt(mnl_socket_get_fd(s), SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	dp.sock = s;
	dp.portid = mnl_socket_get_portid(s);
	dp.poll = poll;
	uv_poll_init(dp.loop, dp.poll, mnl_socket_get_fd(s));
	uv_poll_start(dp.poll, UV_READABLE, dump_on_readable);
	return 0;
}

/* uv_close stops the handle at once: the descriptor may go right after. */
static void
close_pair(uv_poll_t *poll, struct mnl_socket *sock)
{
	uv_close((uv_handle_t *)poll, on_poll_closed);
	mnl_socket_close(sock);
}

static void
sock_close(void)
{
	close_pair(dp.poll, dp.sock);
	dp.poll = NULL;
	dp.sock = NULL;
}

/*
 * The kernel may be mid-dump (it goes on sending, and refuses a new request
 * with EBUSY until the old one is read out): a fresh socket leaves all that
 * behind. If none can be had, the old one stays (sock_open changes nothing
 * then) and the next dump's replies are told from the old one's by sequence.
 */
static void
sock_replace(void)
{
	struct mnl_socket *old_sock = dp.sock;
	uv_poll_t *old_poll = dp.poll;
	int r;

	if ((r = sock_open()) < 0) {
		log_warn_errno(-r, "dump: cannot open a new socket after an abandoned dump; keeping the old");
		return;
	}
	dp.st.reopened++;
	close_pair(old_poll, old_sock);
}

int
dump_parse(const void *buf, size_t len, uint32_t seq, uint32_t portid, uint32_t table,
    uint8_t family, void (*route)(const struct nlmsghdr *nlh, const struct kmsg_rt *kr, void *ctx),
    void *ctx, uint64_t *ret_stale)
{
	const struct nlmsghdr *nlh = buf;
	int left = (int)len;

	for (; kmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
		struct kmsg_rt kr;
		int r;

		if (nlh->nlmsg_seq != seq || (portid && nlh->nlmsg_pid != portid)) {
			/* The rest of an earlier request: not this dump's. */
			if (ret_stale)
				(*ret_stale)++;
			continue;
		}
		if (nlh->nlmsg_flags & NLM_F_DUMP_INTR)
			return -EINTR;
		if (nlh->nlmsg_type == NLMSG_DONE)
			return 1;
		if (nlh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
			if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*e)))
				return -EIO;
			return e->error ? e->error : -EIO;
		}
		if (nlh->nlmsg_type != RTM_NEWROUTE)
			continue;
		if ((r = kmsg_rt_parse(nlh, &kr)) == -EAFNOSUPPORT)
			continue;
		if (r < 0)
			return -EIO;
		if (kr.family != family || kr.table != table)
			continue; /* a kernel without strict checking sends every table */
		route(nlh, &kr, ctx);
	}
	return left == 0 ? 0 : -EIO;
}

static void
on_route(const struct nlmsghdr *nlh, const struct kmsg_rt *kr, void *ctx)
{
	(void)ctx;
	dp.hooks.route(nlh, kr, dp.ctx);
}

/* The dump is over: its own DONE (0) or anything else, after which the socket is replaced. */
static void
finish(int result)
{
	dp.running = false;
	if (result != 0)
		sock_replace();
	dp.hooks.end(result, dp.ctx);
}

void
dump_poll(void)
{
	for (int i = 0; i < DUMP_DATAGRAMS && dp.running; i++) {
		ssize_t n = io_recv(dp.rx, sizeof(dp.rx));
		int r;
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			/* ENOBUFS: replies were lost. Anything else: it is broken too. */
			finish(-errno);
			break;
		}
		dp.bytes += (uint64_t)n;
		if (dp.bytes > DUMP_CAP) {
			finish(-EFBIG);
			break;
		}
		r = dump_parse(dp.rx, (size_t)n, dp.seq, dp.portid, dp.table, dp.family, on_route, NULL,
		    &dp.st.stale);
		if (r == 1)
			finish(0);
		else if (r < 0)
			finish(r);
	}
}

static void
dump_on_readable(uv_poll_t *h, int status, int events)
{
	uint64_t t0 = health_cb_begin();
	(void)events;

	/*
	 * ENOBUFS (the dump lost messages) shows as POLLERR, and libuv stops the
	 * handle on it: watch again, and read the error below.
	 */
	if (status < 0)
		uv_poll_start(h, UV_READABLE, dump_on_readable);
	if (dp.running) {
		dump_poll();
	} else {
		/* Nothing is asked for: whatever is there is stale. */
		for (int i = 0; i < DUMP_DATAGRAMS && io_recv(dp.rx, sizeof(dp.rx)) > 0; i++)
			dp.st.stale++;
	}
	health_cb_end(t0, "sync dump");
}

int
dump_start(uint32_t table, uint8_t family, uint8_t protocol, const struct dump_hooks *hooks,
    void *ctx)
{
	_Alignas(8) char buf[256];
	size_t len;

	if (dp.running)
		return -EBUSY;
	dp.hooks = *hooks;
	dp.ctx = ctx;
	dp.table = table;
	dp.family = family;
	dp.bytes = 0;
	len = kmsg_put_dump(buf, ++dp.seq, table, family, protocol);
	if (io_send(buf, len) < 0)
		return -errno;
	dp.st.started++;
	dp.running = true;
	return 0;
}

void
dump_abandon(void)
{
	if (!dp.running)
		return;
	dp.running = false;
	sock_replace();
}

bool
dump_running(void)
{
	return dp.running;
}

int
dump_init(uv_loop_t *loop)
{
	int r;

	memset(&dp.st, 0, sizeof(dp.st));
	dp.loop = loop;
	dp.running = false;
	if ((r = sock_open()) < 0)
		return r;
	dp.open = true;
	return 0;
}

void
dump_close(void)
{
	if (!dp.open)
		return;
	dp.open = false;
	dp.running = false;
	sock_close();
}

void
dump_get_stats(struct dump_stats *ret)
{
	*ret = dp.st;
}
