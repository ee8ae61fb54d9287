/*
 * monitor: the kernel's route, link and address notifications (kernel I/O
 * layer). One multicast netlink socket with a large receive buffer; at most
 * MON_RECV_BUDGET datagrams per callback. It decides nothing: what it reads
 * goes up through its hooks, which main.c wires to the writer and the sync
 * engine. An overrun (ENOBUFS, or a rise of the socket's drop counter:
 * notifications were lost) is counted and said.
 *
 * The notifications of fibd's own writes are filtered off the socket in the
 * kernel (a socket filter on the writer's port): during a bulk load they would
 * be nearly all of the traffic and say nothing the ACKs do not. So are, once
 * the sync engine names its tables, route notifications of other tables.
 */
#ifndef FIBD_MONITOR_H
#define FIBD_MONITOR_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "kmsg.h"

#define MON_RCVBUF_DEFAULT (32u << 20)
#define MON_RECV_BUDGET 256   /* datagrams read per callback */
#define MON_CATCH_UP 256      /* datagrams read when the sync engine asks, before using a dump */

struct mon_hooks {
	/* A route added, replaced or deleted by someone else (RTM_NEWROUTE/DELROUTE). */
	void (*route)(const struct nlmsghdr *nlh, const struct kmsg_rt *kr);
	/* A link went down or away (the kernel drops its nexthop objects, and routes, silently). */
	void (*link_down)(int ifindex);
	/*
	 * After a read that saw link or address changes, or notifications lost
	 * (lost: when a loss begins, and when the socket is read empty after it):
	 * routes may have come or gone without a word.
	 */
	void (*changed)(bool lost);
};

/*
 * mon_init - open the socket (route, link and address groups of both
 * families). rcvbuf: its receive buffer in bytes (0: MON_RCVBUF_DEFAULT);
 * ignore_port: the writer's netlink port, whose notifications are filtered off
 * (0: none). The hooks are copied. Returns 0 or -errno.
 */
int mon_init(uv_loop_t *loop, const struct mon_hooks *hooks, uint32_t rcvbuf, uint32_t ignore_port);

/*
 * mon_set_tables - the kernel tables fibd has made (for routes, learners or a
 * decouple): route notifications of other tables are filtered off the socket
 * in the kernel from now on (until the first call, none is).
 */
void mon_set_tables(const uint32_t *ids, unsigned n);

/* mon_set_buffer - a reload: the receive buffer (0: the default). Returns 0 or -errno. */
int mon_set_buffer(uint32_t bytes);

/*
 * mon_catch_up - read what the socket holds now (at most MON_CATCH_UP
 * datagrams), so that each table's change count covers every change the kernel
 * made so far. Returns how many reads found notifications lost, ever.
 */
uint64_t mon_catch_up(void);

/*
 * mon_behind - the last read stopped at its budget: notifications of changes
 * the kernel has made may still wait unread, so a change count may be short.
 */
bool mon_behind(void);

void mon_close(void);

struct mon_stats {
	uint64_t events;
	uint64_t overruns; /* reads that found notifications lost */
	uint64_t drops;    /* notifications the kernel dropped (its counter, SO_MEMINFO) */
};
void mon_get_stats(struct mon_stats *ret);

/*
 * For tests: the socket's receive, returning like recv(2), and its drop
 * counter, returning 0 or -errno (NULL: the real ones).
 */
#include <sys/types.h>
typedef ssize_t (*mon_recv_fn)(void *buf, size_t len);
typedef int (*mon_drops_fn)(uint32_t *drops);
void mon_set_io(mon_recv_fn recv_fn, mon_drops_fn drops_fn);

/* For tests: attach the socket's filter (the writer's port, the tables named) to fd. */
void mon_filter_to(int fd);

#endif
