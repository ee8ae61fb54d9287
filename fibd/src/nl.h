/*
 * nl: fibd's netlink writer. Routes put on the write queue (nl_enqueue) are
 * written in batches, many messages per send, each with its own sequence number
 * and NLM_F_ACK, with a bounded window in flight; ACKs are matched by sequence.
 * The outcome lands on the route (have, err, errtext, flags) and is reported
 * through the done callback.
 *
 * Also a monitor socket on the link and address groups: a change there retries
 * the routes that wait for an unreachable nexthop.
 */
#ifndef FIBD_NL_H
#define FIBD_NL_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/netlink.h>
#include <uv.h>

#include "table.h"

#define NL_WINDOW_MAX 8192       /* route messages in flight */
#define NL_BATCH_BYTES (64 * 1024) /* bytes per sendmsg, at most */
#define NL_RECV_BUDGET 32        /* datagrams read per callback */
#define NL_RETRY_MIN_MS 1000
#define NL_RETRY_MAX_MS 60000

/*
 * The outcome of one write: err is 0 or a positive errno; text is the kernel's
 * extended-ACK message (interned, never freed) or NULL. The callee may release
 * the route.
 */
typedef void (*nl_done_cb)(struct route *r, int err, const char *text);

/* Route programming latency buckets, seconds: from a change's arrival to its ACK. */
#define NL_LAT_BUCKETS 13
extern const double nl_lat_bounds[NL_LAT_BUCKETS];

struct nl_stats {
	uint64_t lat_count[NL_LAT_BUCKETS + 1]; /* per bucket (not cumulative); the last: +Inf */
	uint64_t lat_total;
	double lat_sum_s;
	uint64_t msgs_sent;
	uint64_t batches_sent;
	uint64_t acks;
	uint64_t errors;
	uint64_t adds;
	uint64_t replaces;
	uint64_t deletes;
	uint64_t eagain;
	uint64_t retries;
	uint64_t monitor_events;
	uint64_t monitor_overruns;
	uint64_t routes_lost;     /* found missing or replaced by another, and written again */
	uint32_t inflight;
	uint32_t window;
	uint32_t batch_limit;
	int nh_objects; /* routes refer to kernel nexthop objects */
	uint64_t send_max_us; /* longest single send (the kernel applies a batch inside it) */
	uint64_t queued;
	uint64_t parked;
};

/*
 * nl_init - open the sockets (needs CAP_NET_ADMIN); monitor_buffer is the
 * monitor socket's receive buffer in bytes (0: the default, 32 MiB). Returns 0
 * or -errno.
 */
int nl_init(uv_loop_t *loop, uint8_t protocol, nl_done_cb done, uint32_t monitor_buffer);

/* nl_set_monitor_buffer - a reload: the monitor socket's receive buffer (0: the default). */
int nl_set_monitor_buffer(uint32_t bytes);

/*
 * nl_use_nh_objects - 1: routes refer to kernel nexthop objects; 0: inline
 * nexthops; -1: objects if the kernel takes them (probed now). Call before the
 * first write.
 */
void nl_use_nh_objects(int mode);

/* nl_close - stop and close the sockets; routes in flight stay as they are. */
void nl_close(void);

/* nl_enqueue - put a route on the write queue (once) and wake the writer. */
void nl_enqueue(struct route *r);

/* A nexthop object of fibd's that an earlier fibd left (found at start). */
struct nl_nhobj {
	uint32_t id;
	uint8_t family;    /* of the nexthop, 0 for a group */
	uint8_t gw_family; /* 0: no gateway */
	uint8_t flags;     /* PS_NH_ONLINK */
	int ifindex;
	union ps_addr gw;
	uint16_t n_members; /* a group: member ids and weights */
	uint32_t members[PS_NEXTHOPS_MAX];
	uint16_t weights[PS_NEXTHOPS_MAX];
};

/* nl_old_nh_object - the object with this id found at start, or NULL. */
const struct nl_nhobj *nl_old_nh_object(uint32_t id);

/*
 * nl_route_lost - the kernel no longer has a route fibd installed (a rescan did
 * not see it, or someone deleted or replaced it): forget `have` and write it again.
 */
void nl_route_lost(struct route *r);

/*
 * nl_route_notified - what a route notification by someone else (RTM_NEWROUTE,
 * RTM_DELROUTE) of table t means for fibd's routes: one of fibd's that is
 * wanted, deleted or replaced by another protocol, is written again; an adopted
 * one that was deleted is forgotten.
 */
struct nlmsghdr;
void nl_route_notified(struct rtable *t, const struct nlmsghdr *nlh);

/* nl_route_changed - the kernel has the route with attributes `now` (a reference, taken): replace it. */
void nl_route_changed(struct route *r, struct rattr *now);

/*
 * nl_monitor_catch_up - read the notifications the monitor socket holds now, so
 * that each table's `changes` counts every change the kernel made so far.
 * Returns the count of monitor overruns (after which changes may be missing).
 */
uint64_t nl_monitor_catch_up(void);

/* nl_release_held - a table's first scan is done: write what waited for it. */
void nl_release_held(struct rtable *t);

/* nl_pending - routes queued or in flight (held ones included). */
uint64_t nl_pending(void);

/* nl_held - routes held for their table's first scan, or because it is decoupled. */
uint64_t nl_held(void);

void nl_get_stats(struct nl_stats *ret);

/*
 * nl_msg_ok - whether a netlink message of len bytes left is whole. As
 * mnl_nlmsg_ok, but a length over 2 GiB is refused instead of read as a
 * negative number (then the walk would run off the buffer).
 */
static inline bool
nl_msg_ok(const struct nlmsghdr *nlh, int len)
{
	return len >= (int)sizeof(*nlh) && nlh->nlmsg_len >= sizeof(*nlh) &&
	    nlh->nlmsg_len <= (unsigned)len;
}

/* nl_text - the kernel's extended-ACK text a route's errtext index names, or NULL. */
const char *nl_text(uint16_t idx);

#endif
