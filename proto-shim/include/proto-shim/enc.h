/*
 * proto-shim encoder: messages into a caller-owned growable buffer.
 *
 * The caller owns struct ps_buf and its memory; ps_buf_release frees it. An
 * encoder call validates the message first (ps_msg_validate) so that nothing
 * invalid ever reaches the wire, then appends its bytes. On failure the buffer
 * is left exactly as it was.
 *
 * The encoding is canonical: keys in ascending order, only present optional
 * fields, every integer in its smallest msgpack form. Decoding and re-encoding
 * a canonical message reproduces its bytes.
 */
#ifndef PROTO_SHIM_ENC_H
#define PROTO_SHIM_ENC_H

#include <stdbool.h>

#include <proto-shim/msg.h>

struct ps_buf {
	uint8_t *data;
	size_t len; /* bytes written */
	size_t cap; /* bytes allocated */
	/*
	 * Sticky, as stdio's error indicator: an append failed for want of
	 * memory and that message is not in the buffer, so a peer reading it
	 * would miss one. Set by ps_enc_msg; cleared by ps_buf_init and
	 * ps_buf_release.
	 */
	bool failed;
};

/* ps_buf_init - an empty buffer; no allocation until the first append. */
PS_EXPORT void ps_buf_init(struct ps_buf *b);

/* ps_buf_release - free the buffer's memory; the buffer is empty and reusable. */
PS_EXPORT void ps_buf_release(struct ps_buf *b);

/* ps_buf_consume - drop the first n bytes (they were sent). n must be <= len. */
PS_EXPORT void ps_buf_consume(struct ps_buf *b, size_t n);

/*
 * ps_enc_msg - append one message to b.
 * Returns the number of bytes appended; -EINVAL if the message is not valid
 * (ret_fault, if not NULL, names the field); -ENOMEM if the buffer could not grow;
 * -EMSGSIZE if the encoded message would exceed PS_MSG_MAX_DEFAULT. On any
 * failure nothing is appended; -ENOMEM also sets b->failed.
 */
PS_EXPORT int ps_enc_msg(struct ps_buf *b, const struct ps_msg *m, struct ps_fault *ret_fault);

#endif
