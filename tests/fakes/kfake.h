/*
 * kfake: a fake kernel under fibd's kernel I/O layer, for unit tests of the
 * real dump (dump.c) and writer (nl.c) code. It speaks netlink as the kernel
 * does and knows nothing of fibd: a dump request is answered with the
 * datagrams the test scripted, stamped with the request's sequence number and
 * the socket's port id (unless the test asks for others); each message of a
 * writer's batch waits for the test to ACK it, in order, with an errno of the
 * test's choosing.
 */
#ifndef TEST_KFAKE_H
#define TEST_KFAKE_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/netlink.h>

#include "nlbuild.h"

/* ---- the dump socket ---- */

/* kf_dump_install - dump.c's send and receive go to the fake (and the fake is emptied). */
void kf_dump_install(void);
void kf_dump_uninstall(void);

extern unsigned kf_dump_requests;     /* dump requests received */
extern uint32_t kf_dump_last_table;   /* RTA_TABLE of the last one */
extern uint8_t kf_dump_last_protocol; /* its rtm_protocol filter */
extern int kf_dump_send_errno;        /* non-zero: the next request's send fails with it */

/*
 * kf_dump_reply - the next datagram to deliver, to be filled with nlbuild.
 * Stamped, when read, with the sequence number of the latest request and
 * dump_portid(); kf_dump_reply_as gives it these instead (a reply to another
 * request, or to another socket).
 */
struct nlbuild *kf_dump_reply(void);
struct nlbuild *kf_dump_reply_as(uint32_t seq_delta, uint32_t portid);
/* kf_dump_fail - the next read fails with err (ENOBUFS: replies were lost). */
void kf_dump_fail(int err);
/* kf_dump_pending - scripted datagrams not read yet. */
unsigned kf_dump_pending(void);

/* ---- the writer socket ---- */

void kf_nl_install(void);
void kf_nl_uninstall(void);

extern unsigned kf_nl_sends;     /* batches sent (and accepted) */
extern int kf_nl_send_errno;     /* non-zero: the next send fails with it (once) */
/*
 * kf_nl_hold - hold every send (in the writer thread, where sends run) until
 * released: a kernel that takes long to apply a batch. kf_nl_held_sends: how
 * many sends wait now.
 */
void kf_nl_hold(bool on);
/* kf_nl_send_errno_at - the n-th send from now (1: the next) fails with err. */
void kf_nl_send_errno_at(unsigned n, int err);
unsigned kf_nl_held_sends(void);

/* Messages sent and not yet answered, in order. */
unsigned kf_nl_unanswered(void);
/* The type (RTM_*) and sequence number of unanswered message i. */
uint16_t kf_nl_type(unsigned i);
uint32_t kf_nl_seq(unsigned i);

/* Unanswered message i as sent (its first 512 bytes). */
const struct nlmsghdr *kf_nl_msg(unsigned i);
/*
 * kf_nl_echo - send back unanswered message i (a route with one nexthop) as
 * the kernel does for NLM_F_ECHO: the route as made, here with the device oif.
 * It stays unanswered: its ACK comes after.
 */
void kf_nl_echo(unsigned i, int oif);

/*
 * kf_nl_ack - answer the first n unanswered messages, each with err (0: done),
 * in one datagram each, as the kernel does. kf_nl_ack_seq answers one message
 * by its sequence number out of order (a kernel would not; the writer must
 * cope).
 */
void kf_nl_ack(unsigned n, int err);
void kf_nl_ack_seq(uint32_t seq, int err);
/*
 * kf_nl_overrun - the socket's receive queue overran, as the kernel has it:
 * the next read fails with ENOBUFS (once), and every answer is dropped without
 * a word until a read finds the queue empty.
 */
void kf_nl_overrun(void);

#endif
