/* A stand-in for ctl in unit tests of the session logic: every request succeeds. */
#include <string.h>

#include "ctl.h"

void
ctl_set_info(uint64_t start_ns, uint8_t protocol)
{
	(void)start_ns;
	(void)protocol;
}

void
ctl_handle(struct ps_buf *out, const struct ps_ctl_request *req)
{
	struct ps_msg m;

	memset(&m, 0, sizeof(m));
	m.type = PS_CTL_END;
	m.u.ctl_end.req = req->req;
	ps_enc_msg(out, &m, NULL);
}
