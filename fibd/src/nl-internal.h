/*
 * nl-internal.h: the writer's state and helpers, shared by its files: nl.c
 * (the queue, held and parked routes, setup), nl_send.c (building batches,
 * sending them) and nl_ack.c (reading ACKs); and the writer's unit test.
 */
#ifndef FIBD_NL_INTERNAL_H
#define FIBD_NL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <libmnl/libmnl.h>

#include "nl.h"

#define NL_RCVBUF (32 * 1024 * 1024)
#define NL_TEXT_INTERN_MAX 255 /* a route keeps an 8-bit index */
#define NL_RUN_NS 3000000ull /* 3 ms per callback: well under the 10 ms bound, for low loop lag */
#define NL_MMSG 64        /* ACK datagrams per recvmmsg */
#define NL_SLOTS 16       /* batches: one being filled, the others queued for the writer thread or sent (256 KiB ahead) */
/*
 * The room a route needs in a batch, at the most: its message (KMSG_MAX)
 * and, with nexthop objects, one object a nexthop and the group (build() in
 * nl_send.c asks for as much as the route needs).
 */
#define NL_ROUTE_ROOM(objects) (KMSG_MAX + (objects) * 128u + ((objects) > 1 ? 2048u : 0u))
#define NL_ROUTE_ROOM_MAX NL_ROUTE_ROOM(PS_NEXTHOPS_MAX + 1u)
/* A batch's buffer: a batch ends once past NL_BATCH_BYTES, so its last route may take the rest. */
#define NL_BATCH_CAP (NL_BATCH_BYTES + NL_ROUTE_ROOM_MAX)
#define NL_MMSG_BUF 2048  /* an ACK: our message's header and the extended-ACK text */

enum op { OP_ADD_EXCL, OP_REPLACE, OP_DEL, OP_NH_ADD, OP_NH_DEL };

/* Nexthops of a gateway-only set the kernel is asked to echo (its echo fits an ACK's buffer). */
#define NL_RESOLVE_NH_MAX 32

/* fibd's nexthop object ids start here, clear of ids an operator picks by hand. */
#define NL_NH_ID_BASE 0x10000000u
#define NL_NH_PROBE_ID 0x0fffffffu

struct inflight {
	uint32_t seq;
	uint8_t op;
	bool echo;          /* a route written with NLM_F_ECHO to learn its devices */
	bool ack;           /* asked for an ACK (NLM_F_ACK): a batch's last message, or an echo */
	struct route *r;    /* NULL for nexthop objects */
	struct rattr *sent; /* reference; NULL for a delete */
	uint32_t nh_id;     /* OP_NH_DEL */
};

struct nl_state {
	uv_loop_t *loop;
	struct mnl_socket *wr;
	uv_poll_t wr_poll;
	uv_idle_t kick;
	uv_timer_t retry;
	bool open;
	bool kick_on;
	bool overrun;         /* answers were lost: nothing is sent until the socket is read empty */
	bool lost_any;        /* an overrun happened: lost_seq holds */
	uint32_t lost_seq;    /* the last sequence number given up as lost then */
	uint8_t protocol;
	struct nl_hooks hooks;
	uint32_t seq;
	struct route *qhead, *qtail;
	uint64_t queued;              /* on the queue or held */
	struct route *hhead, *htail;  /* held until their table's first scan is done, or couple */
	uint64_t held;
	struct inflight ring[NL_WINDOW_MAX];
	uint32_t ring_head, ring_n;
	char *batch;          /* being filled: a slot of the writer thread's (nl_writer.c) */
	size_t batch_len;
	uint32_t batch_msgs;  /* messages in it, the last ones in the ring */
	uint32_t batch_seq;   /* the sequence number of its first message */
	struct route **parked;
	size_t n_parked, cap_parked;
	size_t failed_parked; /* parked as FAILED when the vector was last walked, or since */
	uint64_t last_fail_ns;
	uint32_t retry_ms;
	uint32_t link_gen;
	uint32_t wr_portid;   /* the writer's netlink port: notifications of its writes carry it */
	bool use_nhid;        /* kernel nexthop objects instead of inline nexthops */
	uint32_t next_nh_id;
	uint32_t *nh_dels;    /* nexthop objects to delete */
	size_t n_nh_dels, cap_nh_dels;
	struct {
		_Alignas(8) char buf[NL_MMSG][NL_MMSG_BUF];
		struct iovec iov[NL_MMSG];
		struct mmsghdr hdr[NL_MMSG];
	} mm;
	const char *texts[NL_TEXT_INTERN_MAX];
	unsigned n_texts;
	struct nl_stats st;
};

extern struct nl_state nl;

/* nl.c */
void nl_kick(void);
void nl_set_state(struct route *r, uint8_t flag, bool on);
void nl_set_have(struct route *r, struct rattr *a);
void nl_pending_update(struct route *r, uint8_t before);
void nl_set_inflight(struct route *r, bool on);
struct route *nl_dequeue(void);
void nl_requeue_head(struct route *r);
void nl_hold(struct route *r);
void nl_wait_resolve(struct route *r);
void nl_release_resolving(struct rattr *a);
void nl_unclaim_old_nh_object(uint32_t id);
void nl_finish(struct route *r, int err, const char *text);
void nl_park(struct route *r);
uint8_t nl_intern_text(const char *s);
extern nl_send_fn nl_io_send;
extern nl_recvmmsg_fn nl_io_recvmmsg;

/* What became of a batch the writer thread sent. */
struct nl_sent {
	size_t len;
	uint32_t msgs;
	uint32_t first_seq;
	int err;          /* 0, or the errno of a send the kernel refused (none of it applied) */
	unsigned eagain;  /* times the socket would block first */
	uint64_t send_ns; /* the send's time, waits included */
};

/* nl_writer.c: the writer thread */
int nl_writer_start(uv_loop_t *loop);
void nl_writer_stop(void);
char *nl_writer_buf(void);
int nl_writer_hand(size_t len, uint32_t msgs, uint32_t first_seq);
void nl_writer_resume(void);
void nl_writer_cancel_queued(void);
unsigned nl_writer_busy(void);

/* nl_send.c */
void nl_on_sent(const struct nl_sent *s);
void nl_on_kick(uv_idle_t *h);
void nl_on_rattr_free(struct rattr *a);
void nl_forget_nh_objects(struct rattr *a);
/* nl_delete_nh_object - delete kernel nexthop object id (again: its message was lost). */
void nl_delete_nh_object(uint32_t id);

/* nl_ack.c */
void nl_on_wr(uv_poll_t *h, int status, int events);
/* nl_complete - the outcome of message f (its ACK, or the error of the batch the kernel refused). */
void nl_complete(struct inflight f, int err, const char *text);
/* nl_read_acks - budget recvmmsg calls of ACKs, or all there are when budget is negative. */
void nl_read_acks(int budget);
/* nl_ring_find - message seq's place in the window (0: the oldest), or ring_n if absent. */
uint32_t nl_ring_find(uint32_t seq);

#endif
