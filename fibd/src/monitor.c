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
	unsigned n_small, n_big;
	uint32_t small[MON_TABLES_MAX]; /* the tables named, under 256 but 252 (rtm_table) */
	uint32_t big[MON_TABLES_MAX];   /* over 255, and 252 (RTA_TABLE) */
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
 * nothing in: churn there neither costs a read nor overruns the socket. A
 * table over 255 shows as RT_TABLE_COMPAT (252) in rtm_table, as table 252
 * does, and by its id only in the RTA_TABLE attribute (which the kernel puts
 * in every route message), found with the kernel's attribute search
 * (SKF_AD_NLATTR); a message where it finds none passes. Everything passes when more
 * tables are named than one program can jump over.
 * Classic BPF loads are big-endian; netlink headers and attributes are in host
 * order.
 */
#define MON_FILTER_TABLES 230 /* jumps are 8 bits: the longest is 12 + tables */
_Static_assert(12 + MON_FILTER_TABLES <= 255, "a filter jump over every table fits in 8 bits");

/* Jump targets while the program is built, patched into offsets at the end. */
enum { TO_NEXT, TO_ROUTE, TO_BIG, TO_DROP, TO_ACCEPT, TO_LABELS };

struct filter {
	struct sock_filter code[16 + MON_FILTER_TABLES];
	uint8_t jt[16 + MON_FILTER_TABLES], jf[16 + MON_FILTER_TABLES];
	unsigned n, at[TO_LABELS];
};

static void
op(struct filter *f, uint16_t code, uint32_t k)
{
	f->code[f->n] = (struct sock_filter)BPF_STMT(code, k);
	f->jt[f->n] = f->jf[f->n] = TO_NEXT;
	f->n++;
}

static void
jeq(struct filter *f, uint32_t k, uint8_t jt, uint8_t jf)
{
	op(f, BPF_JMP | BPF_JEQ | BPF_K, k);
	f->jt[f->n - 1] = jt;
	f->jf[f->n - 1] = jf;
}

static void
label(struct filter *f, unsigned to)
{
	f->at[to] = f->n;
}

static void
set_filter(int fd)
{
	bool by_table = mon.tables_named && mon.n_small + mon.n_big <= MON_FILTER_TABLES;
	struct filter f = { .n = 0 };
	struct sock_fprog prog = { .filter = f.code };

	if (mon.ignore_port) {
		op(&f, BPF_LD | BPF_W | BPF_ABS, offsetof(struct nlmsghdr, nlmsg_pid));
		jeq(&f, htonl(mon.ignore_port), TO_DROP, by_table ? TO_NEXT : TO_ACCEPT);
	}
	if (by_table) {
		/* Not a route message: accept. A route message: its table, one of ours? */
		op(&f, BPF_LD | BPF_H | BPF_ABS, offsetof(struct nlmsghdr, nlmsg_type));
		jeq(&f, htons(RTM_NEWROUTE), TO_ROUTE, TO_NEXT);
		jeq(&f, htons(RTM_DELROUTE), TO_ROUTE, TO_ACCEPT);
		label(&f, TO_ROUTE);
		op(&f, BPF_LD | BPF_B | BPF_ABS, NLMSG_HDRLEN + offsetof(struct rtmsg, rtm_table));
		jeq(&f, RT_TABLE_COMPAT, TO_BIG, TO_NEXT);
		for (unsigned i = 0; i < mon.n_small; i++)
			jeq(&f, mon.small[i], TO_ACCEPT, TO_NEXT);
		op(&f, BPF_RET | BPF_K, 0); /* none of ours */
		/* Over 255, or 252: A = the offset of RTA_TABLE, searched from the first attribute. */
		label(&f, TO_BIG);
		op(&f, BPF_LD | BPF_IMM, NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct rtmsg)));
		op(&f, BPF_LDX | BPF_IMM, RTA_TABLE);
		op(&f, BPF_LD | BPF_W | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_NLATTR));
		jeq(&f, 0, TO_ACCEPT, TO_NEXT);
		op(&f, BPF_MISC | BPF_TAX, 0);
		op(&f, BPF_LD | BPF_W | BPF_IND, NLA_HDRLEN);
		for (unsigned i = 0; i < mon.n_big; i++)
			jeq(&f, htonl(mon.big[i]), TO_ACCEPT, TO_NEXT);
	}
	label(&f, TO_DROP);
	if (f.n)
		op(&f, BPF_RET | BPF_K, 0);
	label(&f, TO_ACCEPT);
	op(&f, BPF_RET | BPF_K, 0xffffffff);
	for (unsigned i = 0; i < f.n; i++) {
		if (BPF_CLASS(f.code[i].code) != BPF_JMP)
			continue;
		f.code[i].jt = f.jt[i] == TO_NEXT ? 0 : (uint8_t)(f.at[f.jt[i]] - i - 1);
		f.code[i].jf = f.jf[i] == TO_NEXT ? 0 : (uint8_t)(f.at[f.jf[i]] - i - 1);
	}
	prog.len = (unsigned short)f.n;
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0)
		log_warn("monitor: cannot filter notifications in the kernel (%s); "
			 "they are read and ignored", strerror(errno));
}

void
mon_filter_to(int fd)
{
	set_filter(fd);
}

/* id into set (of *n), once. */
static void
add_table(uint32_t *set, unsigned *n, uint32_t id)
{
	unsigned j = 0;

	while (j < *n && set[j] != id)
		j++;
	if (j == *n && *n < MON_TABLES_MAX)
		set[(*n)++] = id;
}

void
mon_set_tables(const uint32_t *ids, unsigned n)
{
	/* Distinct ids (an IPv4 and an IPv6 table may share one). */
	mon.n_small = mon.n_big = 0;
	for (unsigned i = 0; i < n; i++) {
		if (ids[i] > 255 || ids[i] == RT_TABLE_COMPAT)
			add_table(mon.big, &mon.n_big, ids[i]);
		else
			add_table(mon.small, &mon.n_small, ids[i]);
	}
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
	mon.n_small = mon.n_big = 0;
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
