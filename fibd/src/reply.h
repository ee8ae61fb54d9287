/*
 * reply: control answers on the wire (front layer). An answer is CTL_CHUNKs
 * and one CTL_END into a session's output. A streamed answer (watch, diff)
 * that has more to say wakes its session, which then pulls it (feed.c wires
 * the wake at start: the modules that produce answers do not call feed).
 */
#ifndef FIBD_REPLY_H
#define FIBD_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include <proto-shim/enc.h>

/* reply_chunk - data as CTL_CHUNKs of request req (split at PS_CHUNK_MAX). */
void reply_chunk(struct ps_buf *out, uint32_t req, const void *data, size_t len);

/* reply_end - the CTL_END of request req: code (enum ps_err) and text (may be NULL). */
void reply_end(struct ps_buf *out, uint32_t req, int code, const char *text);

/* reply_set_wake, reply_wake - a session (opaque) has more of a streamed answer to pull. */
void reply_set_wake(void (*wake)(void *session));
void reply_wake(void *session);

#endif
