/*
 * reply: CTL_CHUNK and CTL_END (reply.h). A failed encode sets the output's
 * failed flag, and the session closes rather than leave its reader waiting.
 */
#include <string.h>

#include "reply.h"

static void (*wake_fn)(void *session);

void
reply_end(struct ps_buf *out, uint32_t req, int code, const char *text)
{
	struct ps_msg m;

	memset(&m, 0, sizeof(m));
	m.type = PS_CTL_END;
	m.u.ctl_end.req = req;
	m.u.ctl_end.code = (uint16_t)code;
	m.u.ctl_end.text = ps_str_from(text);
	ps_enc_msg(out, &m, NULL);
}

void
reply_chunk(struct ps_buf *out, uint32_t req, const void *data, size_t len)
{
	struct ps_msg m;

	memset(&m, 0, sizeof(m));
	m.type = PS_CTL_CHUNK;
	m.u.ctl_chunk.req = req;
	for (size_t off = 0; off < len; off += PS_CHUNK_MAX) {
		m.u.ctl_chunk.data.ptr = (const char *)data + off;
		m.u.ctl_chunk.data.len = (uint32_t)(len - off < PS_CHUNK_MAX ? len - off : PS_CHUNK_MAX);
		ps_enc_msg(out, &m, NULL);
	}
}

void
reply_set_wake(void (*wake)(void *session))
{
	wake_fn = wake;
}

void
reply_wake(void *session)
{
	if (wake_fn)
		wake_fn(session);
}
