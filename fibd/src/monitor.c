/*
 * monitor: reads the multicast socket and hands each notification to its
 * hooks (monitor.h). Link messages for a link that is down or gone go to
 * link_down; any link or address message, and any overrun, ends the read with
 * changed(), once.
 *
 * An overrun shows as ENOBUFS once: the kernel then drops every notification
 * for the socket, silently, until it has been read empty (netlink_overrun and
 * NETLINK_S_CONGESTED), which under sustained churn can be seconds. So after
 * each read the socket's drop counter (SO_MEMINFO) is compared with the last
 * one seen: any rise is an overrun too, whether or not ENOBUFS said so.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#include <libmnl/libmnl.h>
#include <linux/filter.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>

#include "health.h"
#include "log.h"
#include "monitor.h"

#define MON_TABLES_MAX 256

static struct {
	struct mnl_socket *sock;
	uv_poll_t poll;
	bool open;
	struct mon_hooks hooks;
	uint32_t ignore_port;
	bool tables_named;   /* mon_set_tables was called: filter route messages by table */
	unsigned n_tables;
	uint32_t tables[MON_TABLES_MAX]; /* the tables named, under 256 */
	uint64_t lost_reads; /* reads that found notifications lost */
	bool behind;         /* the last read stopped at its budget, not at an empty socket */
	bool losing;         /* a loss was said, its end (the socket read empty) not yet */
	bool drops_known;    /* the kernel tells the socket's drops (SO_MEMINFO, Linux 4.12) */
	uint32_t drops_seen; /* its drop counter when last read */
	struct mon_stats st;
	_Alignas(8) char rx[65536]; /* netlink messages are 4-byte aligned */
} mon;

static ssize_t
real_recv(void *buf, size_t len)
{
	return mnl_socket_recvfrom(mon.sock, buf, len);
}

static int
real_drops(uint32_t *ret)
{
	uint32_t mem[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mem);

	if (getsockopt(mnl_socket_get_fd(mon.sock), SOL_SOCKET, SO_MEMINFO, mem, &len) < 0)
		return -errno;
	if (len < (SK_MEMINFO_DROPS + 1) * sizeof(mem[0]))
		return -ENOPROTOOPT;
	*ret = mem[SK_MEMINFO_DROPS];
	return 0;
}

static mon_recv_fn io_recv = real_recv;
static mon_drops_fn io_drops = real_drops;

void
mon_set_io(mon_recv_fn recv_fn, mon_drops_fn drops_fn)
{
	io_recv = recv_fn ? recv_fn : real_recv;
	io_drops = drops_fn ? drops_fn : real_drops;
}

static void
drops_unknown(int err)
{
	mon.drops_known = false;
	log_warn("monitor: cannot read the socket's drop counter (SO_MEMINFO: %s): an overrun "
		 "is seen only when the kernel reports ENOBUFS, not the drops that follow it",
	    strerror(-err));
}

/* Did the kernel drop notifications for the socket since the last look? */
static bool
drops_rose(void)
{
	uint32_t now;
	int r;

	if (!mon.drops_known)
		return false;
	if ((r = io_drops(&now)) < 0) {
		drops_unknown(r);
		return false;
	}
	if (now == mon.drops_seen)
		return false;
	mon.st.drops += (uint32_t)(now - mon.drops_seen); /* the counter wraps at 2^32 */
	mon.drops_seen = now;
	return true;
}

static void
one_message(const struct nlmsghdr *nlh, bool *links)
{
	struct kmsg_rt kr;

	mon.st.events++;
	if (nlh->nlmsg_type == RTM_NEWROUTE || nlh->nlmsg_type == RTM_DELROUTE) {
		/* An echo of fibd's own write, if the filter let one by, says nothing new. */
		if (mon.ignore_port && nlh->nlmsg_pid == mon.ignore_port)
			return;
		/* A malformed one, or one of another family, says nothing fibd can use. */
		if (kmsg_rt_parse(nlh, &kr) == 0 && mon.hooks.route)
			mon.hooks.route(nlh, &kr);
		return;
	}
	*links = true;
	if ((nlh->nlmsg_type == RTM_NEWLINK || nlh->nlmsg_type == RTM_DELLINK) &&
	    nlh->nlmsg_len >= mnl_nlmsg_size(sizeof(struct ifinfomsg))) {
		const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
		if ((nlh->nlmsg_type == RTM_DELLINK || !(ifi->ifi_flags & IFF_UP)) && mon.hooks.link_down)
			mon.hooks.link_down(ifi->ifi_index);
	}
}

/* Read what the socket holds, at most budget datagrams. */
static void
mon_read(int budget)
{
	bool links = false, lost = false, changed = false;
	int i;

	for (i = 0; i < budget; i++) {
		ssize_t n = io_recv(mon.rx, sizeof(mon.rx));
		const struct nlmsghdr *nlh;
		int len;
		if (n < 0) {
			if (errno == ENOBUFS) {
				/* Notifications were lost: assume that anything changed. */
				lost = true;
				continue;
			}
			break;
		}
		len = (int)n;
		for (nlh = (const struct nlmsghdr *)mon.rx; kmsg_ok(nlh, len); nlh = mnl_nlmsg_next(nlh, &len))
			one_message(nlh, &links);
	}
	mon.behind = i == budget;
	/* After the reads: a drop counted now is one no later read can make good. */
	if (drops_rose())
		lost = true;
	if (lost) {
		mon.st.overruns++;
		mon.lost_reads++;
	}
	/*
	 * Said once when a loss begins, and once when the socket is read empty
	 * with nothing more lost: while it stays congested every read may lose
	 * more, and what hears of it (a rescan, after a pause) is for after.
	 */
	if (lost && !mon.losing) {
		mon.losing = true;
		changed = true;
	} else if (!lost && mon.losing && !mon.behind) {
		mon.losing = false;
		changed = true;
	}
	if ((links || changed) && mon.hooks.changed)
		mon.hooks.changed(changed);
}

static void
mon_on_readable(uv_poll_t *h, int status, int events)
{
	uint64_t t0 = health_cb_begin();
	(void)h;
	(void)events;

	/* An overrun (ENOBUFS) shows as POLLERR, and libuv stops the handle on it. */
	if (status < 0)
		uv_poll_start(&mon.poll, UV_READABLE, mon_on_readable);
	mon_read(MON_RECV_BUDGET);
	health_cb_end(t0, "netlink monitor");
}

uint64_t
mon_catch_up(void)
{
	/* The kernel queued a change's notification before the change completed. */
	if (mon.open)
		mon_read(MON_CATCH_UP);
	return mon.lost_reads;
}

bool
mon_behind(void)
{
	return mon.open && mon.behind;
}

/*
 * The socket filter, in the kernel: it keeps off the notifications of fibd's
 * own writes (the kernel sends each route notification in a datagram of its
 * own, stamped with the port of the socket whose request caused it), and,
 * once the sync engine has named them, route notifications of tables fibd has
 * nothing in: churn there neither costs a read nor overruns the socket.
 * Tables over 255 show as RT_TABLE_COMPAT in rtm_table and always pass; so
 * does everything when more tables are named than one program can jump over.
 * Classic BPF loads are big-endian; netlink headers are in host order.
 */
#define MON_FILTER_TABLES 250 /* jumps are 8 bits */

#define LD(size, off) ((struct sock_filter)BPF_STMT(BPF_LD | (size) | BPF_ABS, (off)))
#define JEQ(k, jt, jf) \
	((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (uint8_t)(jt), (uint8_t)(jf)))
#define RET(v) ((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, (v)))

static void
set_filter(int fd)
{
	struct sock_filter code[9 + MON_FILTER_TABLES];
	struct sock_fprog prog = { .filter = code };
	bool by_table = mon.tables_named && mon.n_tables <= MON_FILTER_TABLES;
	unsigned n = 0, tables = by_table ? mon.n_tables : 0;

	if (mon.ignore_port) {
		/* fibd's own: to the drop at the end (past the table checks, if any). */
		code[n++] = LD(BPF_W, offsetof(struct nlmsghdr, nlmsg_pid));
		code[n++] = by_table ? JEQ(htonl(mon.ignore_port), 5 + tables, 0) :
		    JEQ(htonl(mon.ignore_port), 0, 1);
	}
	if (by_table) {
		/* Not a route message: accept. A route message: its table, one of ours? */
		code[n++] = LD(BPF_H, offsetof(struct nlmsghdr, nlmsg_type));
		code[n++] = JEQ(htons(RTM_NEWROUTE), 1, 0);
		code[n++] = JEQ(htons(RTM_DELROUTE), 0, tables + 3);
		code[n++] = LD(BPF_B, sizeof(struct nlmsghdr) + offsetof(struct rtmsg, rtm_table));
		code[n++] = JEQ(RT_TABLE_COMPAT, tables + 1, 0);
		for (unsigned i = 0; i < tables; i++)
			code[n++] = JEQ(mon.tables[i], tables - i, 0);
	}
	if (n)
		code[n++] = RET(0); /* drop */
	code[n++] = RET(0xffffffff); /* accept */
	prog.len = (unsigned short)n;
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0)
		log_warn("monitor: cannot filter notifications in the kernel (%s); "
			 "they are read and ignored", strerror(errno));
}

void
mon_filter_to(int fd)
{
	set_filter(fd);
}

void
mon_set_tables(const uint32_t *ids, unsigned n)
{
	unsigned k = 0;

	/* Distinct ids under 256 (an IPv4 and an IPv6 table may share one). */
	for (unsigned i = 0; i < n; i++) {
		unsigned j = 0;
		if (ids[i] > 255)
			continue; /* shows as RT_TABLE_COMPAT, which always passes */
		while (j < k && mon.tables[j] != ids[i])
			j++;
		if (j == k && k < MON_TABLES_MAX)
			mon.tables[k++] = ids[i];
	}
	mon.n_tables = k;
	mon.tables_named = true;
	if (mon.open)
		set_filter(mnl_socket_get_fd(mon.sock));
}

int
mon_set_buffer(uint32_t bytes)
{
	int size = bytes ? (int)bytes : (int)MON_RCVBUF_DEFAULT;

	if (!mon.open)
		return 0;
	/* FORCE goes past the system's maximum; it needs CAP_NET_ADMIN. */
	if (setsockopt(mnl_socket_get_fd(mon.sock), SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0 &&
	    setsockopt(mnl_socket_get_fd(mon.sock), SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)) < 0)
		return -errno;
	return 0;
}

int
mon_init(uv_loop_t *loop, const struct mon_hooks *hooks, uint32_t rcvbuf, uint32_t ignore_port)
{
	unsigned groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE |
	    RTMGRP_IPV6_ROUTE;
	int r;

	memset(&mon.st, 0, sizeof(mon.st));
	mon.lost_reads = 0;
	mon.behind = mon.losing = false;
	mon.tables_named = false;
	mon.n_tables = 0;
	mon.hooks = *hooks;
	mon.ignore_port = ignore_port;
	if (!(mon.sock = mnl_socket_open2(NETLINK_ROUTE, SOCK_NONBLOCK | SOCK_CLOEXEC)))
		return -errno;
	if (mnl_socket_bind(mon.sock, groups, MNL_SOCKET_AUTOPID) < 0) {
		int err = -errno;
		mnl_socket_close(mon.sock);
		return err;
	}
	mon.open = true;
	mon.drops_known = true;
	if ((r = io_drops(&mon.drops_seen)) < 0)
		drops_unknown(r);
	mon_set_buffer(rcvbuf);
	set_filter(mnl_socket_get_fd(mon.sock));
	uv_poll_init(loop, &mon.poll, mnl_socket_get_fd(mon.sock));
	uv_poll_start(&mon.poll, UV_READABLE, mon_on_readable);
	return 0;
}

void
mon_close(void)
{
	if (!mon.open)
		return;
	mon.open = false;
	uv_close((uv_handle_t *)&mon.poll, NULL);
	mnl_socket_close(mon.sock);
}

void
mon_get_stats(struct mon_stats *ret)
{
	*ret = mon.st;
}
