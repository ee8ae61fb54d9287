/* A control answer read back (answer.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <proto-shim/dec.h>

#include "answer.h"

void
answer_read(struct ps_buf *out, struct answer *a)
{
	struct ps_dec *d = ps_dec_new(0);
	const struct ps_msg *m;

	a->len = 0;
	a->text[0] = 0;
	a->end_code = -1;
	a->end_text[0] = 0;
	assert_int_equal(ps_dec_feed(d, out->data, out->len), (int)out->len);
	while (ps_dec_next(d, &m) == 1) {
		if (m->type == PS_CTL_CHUNK) {
			assert_true(a->len + m->u.ctl_chunk.data.len < sizeof(a->text));
			memcpy(a->text + a->len, m->u.ctl_chunk.data.ptr, m->u.ctl_chunk.data.len);
			a->len += m->u.ctl_chunk.data.len;
			a->text[a->len] = 0;
		} else if (m->type == PS_CTL_END) {
			a->end_code = m->u.ctl_end.code;
			snprintf(a->end_text, sizeof(a->end_text), "%.*s", (int)m->u.ctl_end.text.len,
			    m->u.ctl_end.text.ptr);
		}
	}
	ps_dec_free(d);
	out->len = 0;
}
