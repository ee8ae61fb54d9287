/*
 * ctl: answers to control requests (fibctl). Each answer is written into the
 * session's output as CTL_CHUNKs and one CTL_END.
 */
#ifndef FIBD_CTL_H
#define FIBD_CTL_H

#include <proto-shim/enc.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ctl_stream;

/*
 * ctl_handle - answer one request into out. A long answer (dump) is a stream:
 * its first part is in out, and the caller asks for each next one with
 * ctl_stream_more when out has room again, so that fibd's memory stays flat
 * whatever the table's size, paced by the reader. NULL for other answers.
 */
struct ctl_stream *ctl_handle(struct ps_buf *out, const struct ps_ctl_request *req, void *session);

/* ctl_changes_state - whether a command changes fibd's state (resync, couple, decouple). */
bool ctl_changes_state(const char *cmd);

/* ctl_stream_more - the next part into out; true when the answer ended (st is freed). */
bool ctl_stream_more(struct ctl_stream *st, struct ps_buf *out);

/* ctl_stream_free - abandon an answer (the session went). Accepts NULL; returns NULL. */
struct ctl_stream *ctl_stream_free(struct ctl_stream *st);

#endif
