/* A stand-in for ctl in unit tests of the session logic: every request succeeds. */
#include <string.h>

#include "ctl.h"
#include "reply.h"


struct ctl_stream *
ctl_stream_free(struct ctl_stream *st)
{
	(void)st;
	return NULL;
}

bool
ctl_stream_more(struct ctl_stream *st, struct ps_buf *out)
{
	(void)st;
	(void)out;
	return true;
}

struct ctl_stream *
ctl_handle(struct ps_buf *out, const struct ps_ctl_request *req, void *session)
{
	(void)session;
	reply_end(out, req->req, 0, NULL);
	return NULL;
}

bool
ctl_changes_state(const char *cmd)
{
	return !strcmp(cmd, "resync") || !strcmp(cmd, "couple") || !strcmp(cmd, "decouple");
}

