/*
 * nl: fibd's netlink writer (kernel I/O layer). Routes put on the write queue
 * (nl_enqueue) are written in batches, many messages per send, each with its
 * own sequence number, with a bounded window in flight; a batch's last message
 * asks for an ACK, the others are answered only if they fail, and answers are
 * matched by sequence. The outcome lands on the route (have, err, errtext,
 * flags) and is reported through the done hook.
 *
 * It knows no session, control or sync code: what it must ask (may this table
 * be written yet?) or tell (an add met a route already there) goes through
 * struct nl_hooks, which main.c wires.
 */
#ifndef FIBD_NL_H
#define FIBD_NL_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/netlink.h>
#include <uv.h>

#include "kmsg.h"
#include "table.h"

#define NL_WINDOW_MAX 8192       /* route messages in flight */
/*
 * Bytes per sendmsg: a batch ends with the route that passes it (and that
 * route's nexthop objects). The kernel applies a batch inside the writer's
 * sendmsg, without a point where the scheduler may take the core for another
 * task: on a machine short of cores BIRD waited for those sends. With BIRD
 * 2.19.2 exporting 750 k DFZ-shaped routes on two cores (four runs each, A/B
 * interleaved), 16 KiB batches (and NL_SLOTS 16) gave birdc's answered probes
 * max 2.2 to 4.8 ms where 64 KiB (4 slots) gave 4.1 to 7.2 ms, halved BIRD's
 * run-queue wait, and converged as fast (a dev build, the probe of bench/bird.sh).
 * fibctl feed --wait alone of the 732 k routes of bench/feed.sh, the same dev
 * build, three runs each: 4.08 to 4.16 s instead of 3.88 to 4.04 s.
 */
#define NL_BATCH_BYTES (16 * 1024)
#define NL_RECV_BUDGET 32        /* recvmmsg calls per callback, of NL_MMSG datagrams each */
#define NL_RETRY_MIN_MS 1000
#define NL_RETRY_MAX_MS 60000

/*
 * What the writer asks and tells the layers above.
 *
 * done: the outcome of one route's write: err is 0 or a positive errno; -1
 * when nothing was written after all (want became have), so that the owner may
 * release the route; text is the kernel's extended-ACK message (interned,
 * never freed) or NULL. The callee may release the route.
 *
 * writable: whether routes of table t may be written now (its first scan is
 * done: docs/design.md, invariant 7); a route of a table that is not, or that is
 * decoupled, is held until nl_release_held. NULL: always.
 *
 * exists: an add with NLM_F_EXCL of a route in t failed with EEXIST (a route
 * of fibd's a dump missed?). May be NULL.
 */
struct nl_hooks {
	void (*done)(struct route *r, int err, const char *text);
	bool (*writable)(struct rtable *t);
	void (*exists)(struct rtable *t);
	void (*deleted)(struct route *r); /* a delete of fibd's acknowledged (before it is forgotten) */
};

/* Route programming latency buckets, seconds: from a change's arrival to its ACK. */
#define NL_LAT_BUCKETS 13
static const double nl_lat_bounds[NL_LAT_BUCKETS] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

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
	uint64_t routes_lost;     /* found missing or replaced by another, and written again */
	uint64_t overruns;        /* the socket's answers were lost: everything in flight written again */
	uint64_t answers_late;    /* ACKs of messages given up in an overrun (a send under way then): ignored */
	uint32_t inflight;
	uint32_t window;
	uint32_t batch_limit;
	int nh_objects; /* routes refer to kernel nexthop objects */
	uint64_t send_max_us; /* longest single send, in the writer thread (the kernel applies a batch inside it) */
	uint32_t batches_queued; /* handed to the writer thread and not yet taken back */
	uint64_t batches_refused; /* send failed: each message of the batch failed with its error */
	uint64_t gateways_resolved; /* gateway-only nexthop sets whose devices the kernel named */
	uint64_t queued;
	uint64_t parked;
};

/*
 * nl_init - open the writer's socket (needs CAP_NET_ADMIN); the hooks are
 * copied. Returns 0 or -errno.
 */
int nl_init(uv_loop_t *loop, uint8_t protocol, const struct nl_hooks *hooks);

/* nl_portid - the writer socket's netlink port (the kernel stamps it on the notifications of its writes). */
uint32_t nl_portid(void);

/*
 * nl_use_nh_objects - 1: routes refer to kernel nexthop objects; 0: inline
 * nexthops; -1: objects if the kernel takes them (probed now). Call before the
 * first write.
 */
void nl_use_nh_objects(int mode);

/*
 * nl_set_writer_nice - how many nice steps below the loop the writer thread
 * runs (0..19; default 10), SCHED_BATCH too when not 0. Call before nl_init.
 */
void nl_set_writer_nice(int steps);

/*
 * nl_close - stop the writer thread (after the send under way) and close the
 * sockets; routes in flight stay as they are.
 */
void nl_close(void);

/*
 * nl_sync - wait until the writer thread has sent every batch handed to it,
 * and take the outcomes. The loop never waits for the kernel otherwise; this
 * is for tests, which step the loop and look at the kernel between steps.
 */
void nl_sync(void);

/* nl_enqueue - put a route on the write queue (once) and wake the writer. */
void nl_enqueue(struct route *r);

/* nl_old_nh_object - a nexthop object of fibd's that an earlier fibd left (found at start), or NULL. */
const struct kmsg_nhobj *nl_old_nh_object(uint32_t id);

/*
 * nl_claim_old_nh_object - true the first time it is asked for an object of
 * an earlier fibd's: the caller's attribute set now stands for it (and deletes
 * it when freed). False after that, or for an unknown id: another set has it.
 */
bool nl_claim_old_nh_object(uint32_t id);

/*
 * nl_route_lost - the kernel no longer has a route fibd installed (a rescan did
 * not see it, or someone deleted or replaced it): forget `have` and write it again.
 */
void nl_route_lost(struct route *r);

/* nl_route_forget - the kernel no longer has a route fibd adopted: forget `have` (no write). */
void nl_route_forget(struct route *r);

/* nl_route_changed - the kernel has the route with attributes `now` (a reference, taken): replace it. */
void nl_route_changed(struct route *r, struct rattr *now);

/*
 * nl_links_changed - a link or address changed: interface indexes are looked up
 * again, and routes waiting for an unreachable nexthop are tried again.
 */
void nl_links_changed(void);

/* nl_link_down - a link went down or away: the kernel dropped the nexthop objects on it. */
void nl_link_down(int ifindex);

/* nl_release_held - a table's first scan is done: write what waited for it. */
void nl_release_held(struct rtable *t);

/* nl_pending - routes queued or in flight (held ones included). */
uint64_t nl_pending(void);

/* nl_held - routes held for their table's first scan, or because it is decoupled. */
uint64_t nl_held(void);

void nl_get_stats(struct nl_stats *ret);

/* nl_text - the kernel's extended-ACK text a route's errtext index names, or NULL. */
const char *nl_text(uint16_t idx);

/*
 * For tests: the writer socket's send and receive (NULL: the real ones),
 * returning like send(2) and recvmmsg(2) with MSG_DONTWAIT, -1 with errno; and
 * one run of the readable callback, as the loop would make it.
 */
#include <sys/socket.h>
#include <sys/types.h>
typedef ssize_t (*nl_send_fn)(const void *buf, size_t len);
typedef int (*nl_recvmmsg_fn)(struct mmsghdr *msgs, unsigned n);
void nl_set_io(nl_send_fn send_fn, nl_recvmmsg_fn recvmmsg_fn);
void nl_poll(void);

#endif
