/*
 * dump: the dump socket (kernel I/O layer). One dump of one (table, family) at
 * a time, on a nonblocking netlink socket with NETLINK_GET_STRICT_CHK so that
 * the kernel sends only that table (and protocol, when asked). At most
 * DUMP_DATAGRAMS datagrams are read per callback.
 *
 * Replies are matched to their request by sequence number and port id, as
 * libmnl's mnl_cb_run does: a message of an earlier dump (its DONE included)
 * is skipped and counted, never taken for this one's. A dump that ends any way
 * but with its own NLMSG_DONE (DUMP_INTR, an error, ENOBUFS, the size cap, a
 * malformed message, or dump_abandon) leaves the kernel mid-dump, which would
 * refuse the next request with EBUSY and send the rest of the old one: the
 * socket is then closed and a new one opened before the next dump.
 *
 * It decides nothing: routes and the end go up through the hooks of the dump.
 */
#ifndef FIBD_DUMP_H
#define FIBD_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "kmsg.h"

#define DUMP_DATAGRAMS 4          /* datagrams read per callback */
#define DUMP_CAP (256u << 20)     /* bytes one dump may bring */
#define DUMP_RCVBUF (32 << 20)

struct dump_hooks {
	/* One route message of the dump's table and family (any protocol the request let through). */
	void (*route)(const struct nlmsghdr *nlh, const struct kmsg_rt *kr, void *ctx);
	/*
	 * The dump ended: 0 when complete (its NLMSG_DONE, no message flagged
	 * NLM_F_DUMP_INTR); otherwise -EINTR (interrupted by a change), -ENOBUFS
	 * (replies were lost), -EFBIG (over DUMP_CAP), -EIO (a malformed reply),
	 * or the negative errno the kernel answered with. Called once per
	 * dump_start that returned 0, unless the dump was abandoned.
	 */
	void (*end)(int result, void *ctx);
};

int dump_init(uv_loop_t *loop);
void dump_close(void);

/*
 * dump_start - ask for a dump of (table, family), routes of `protocol` only
 * (0: all). The hooks are copied; ctx is handed to them. Returns 0; -EBUSY
 * while another dump runs; or the negative errno the request's send failed
 * with (then no end comes).
 */
int dump_start(uint32_t table, uint8_t family, uint8_t protocol, const struct dump_hooks *hooks,
    void *ctx);

/* dump_abandon - the caller wants no more of the running dump (no end is called). */
void dump_abandon(void);

/* dump_running - a dump was started and has not ended. */
bool dump_running(void);

struct dump_stats {
	uint64_t started;
	uint64_t stale;    /* reply messages of an earlier request, skipped */
	uint64_t reopened; /* sockets replaced after an abandoned dump */
};
void dump_get_stats(struct dump_stats *ret);

/*
 * dump_parse - one datagram of the dump with sequence seq to port portid, of
 * (table, family): each route message of them goes to route(); messages of
 * another request are counted in *ret_stale (may be NULL) and skipped.
 * Returns 1 when the datagram ends the dump (NLMSG_DONE), 0 if more follows,
 * -EINTR if a message carries NLM_F_DUMP_INTR, -EIO for a malformed datagram,
 * or the negative errno of an NLMSG_ERROR. Pure: the socket's reader uses it,
 * and so do the tests and the fuzz target.
 */
int dump_parse(const void *buf, size_t len, uint32_t seq, uint32_t portid, uint32_t table,
    uint8_t family, void (*route)(const struct nlmsghdr *nlh, const struct kmsg_rt *kr, void *ctx),
    void *ctx, uint64_t *ret_stale);

/*
 * For tests (a fake kernel): the socket's send and receive (NULL: the real
 * ones), returning like send(2) and recv(2), -1 with errno; the port id the
 * fake answers to is what dump_portid says; and one run of the readable
 * callback, as the loop would make it.
 */
#include <sys/types.h>
typedef ssize_t (*dump_send_fn)(const void *buf, size_t len);
typedef ssize_t (*dump_recv_fn)(void *buf, size_t len);
void dump_set_io(dump_send_fn send_fn, dump_recv_fn recv_fn);
uint32_t dump_portid(void);
void dump_poll(void);

#endif
