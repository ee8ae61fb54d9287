/*
 * proto-shim decoder: a byte stream in, complete validated messages out.
 *
 * The decoder owns one read buffer. The caller asks for free space
 * (ps_dec_reserve), reads into it, reports how many bytes arrived (ps_dec_commit),
 * then calls ps_dec_next until it returns 0. Any split of the stream, down to one
 * byte at a time, yields the same messages. A message's structure and size are
 * checked as its bytes arrive, so an oversized or malformed message is refused
 * before it is buffered in full, and nothing is ever allocated from a count on the
 * wire: the only memory is the read buffer, bounded by the size limit.
 *
 * Strings in a decoded message (struct ps_str) borrow the read buffer: they stay
 * valid until the next call to ps_dec_next, ps_dec_reserve or ps_dec_feed.
 * Copy out what you keep.
 *
 * After an error the decoder stays failed: the stream is out of step and the
 * session must be closed (docs/PROTOCOL.md, "Errors").
 */
#ifndef PROTO_SHIM_DEC_H
#define PROTO_SHIM_DEC_H

#include <proto-shim/msg.h>

struct ps_dec;

/*
 * ps_dec_new - a decoder refusing messages over max_msg bytes (0: PS_MSG_MAX_DEFAULT;
 * values under PS_MSG_MAX_FLOOR are raised to it). Caller owns the result; NULL on
 * allocation failure.
 */
PS_EXPORT struct ps_dec *ps_dec_new(size_t max_msg);

/* ps_dec_free - free a decoder and its buffer. Accepts NULL; returns NULL. */
PS_EXPORT struct ps_dec *ps_dec_free(struct ps_dec *d);

/*
 * ps_dec_reserve - free space for at least `want` bytes (0: a default read size).
 * ret_ptr/ret_len describe the space (borrowed until ps_dec_commit). Returns 0;
 * -ENOMEM; -ENOBUFS when complete messages must be drained with ps_dec_next first;
 * or the decoder's error if it has failed.
 */
PS_EXPORT int ps_dec_reserve(struct ps_dec *d, size_t want, void **ret_ptr, size_t *ret_len);

/* ps_dec_commit - n bytes were written into the reserved space. */
PS_EXPORT void ps_dec_commit(struct ps_dec *d, size_t n);

/*
 * ps_dec_feed - copy bytes in (reserve + memcpy + commit). Returns how many were
 * taken, which is less than len when the buffer is full: drain messages with
 * ps_dec_next, then feed the rest. Or -errno as ps_dec_reserve.
 */
PS_EXPORT int ps_dec_feed(struct ps_dec *d, const void *data, size_t len);

/*
 * ps_dec_next - the next complete message.
 * Returns 1 with *ret_msg pointing at the message (owned by the decoder, valid until
 * the next ps_dec_next, ps_dec_reserve or ps_dec_feed); 0 if more bytes are needed;
 * -EBADMSG if the stream holds a malformed or invalid message, -EMSGSIZE if a
 * message exceeds the limit (ps_dec_fault says which field and why).
 * *ret_msg is written only on 1.
 */
PS_EXPORT int ps_dec_next(struct ps_dec *d, const struct ps_msg **ret_msg);

/* ps_dec_fault - why the decoder failed; NULL while it has not. Borrowed. */
PS_EXPORT const struct ps_fault *ps_dec_fault(const struct ps_dec *d);

/* ps_dec_pending - bytes buffered but not yet returned as messages. */
PS_EXPORT size_t ps_dec_pending(const struct ps_dec *d);

/*
 * ps_dec_one - decode exactly one message from a complete buffer (tests, tools).
 * Returns the bytes used, 0 if the buffer holds only part of a message, or -EBADMSG /
 * -EMSGSIZE with ret_fault filled. ret_msg is scratch space: meaningful only when
 * the return is positive. Strings in it borrow `data`.
 */
PS_EXPORT int ps_dec_one(const void *data, size_t len, size_t max_msg, struct ps_msg *ret_msg,
    struct ps_fault *ret_fault);

#endif
