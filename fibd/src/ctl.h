/*
 * ctl: answers to control requests (fibctl). Each answer is written into the
 * session's output as CTL_CHUNKs and one CTL_END.
 */
#ifndef FIBD_CTL_H
#define FIBD_CTL_H

#include <proto-shim/enc.h>

#include <stdint.h>

/* ctl_set_info - what status reports about the daemon: its start (monotonic ns), protocol. */
void ctl_set_info(uint64_t start_ns, uint8_t protocol);

/* ctl_handle - answer one request into out. */
void ctl_handle(struct ps_buf *out, const struct ps_ctl_request *req);

#endif
