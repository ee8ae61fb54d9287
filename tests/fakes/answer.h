#ifndef TEST_ANSWER_H
#define TEST_ANSWER_H

/* A control answer read back from a session's output, for the tests of ctl and watch. */

#include <stddef.h>

#include <proto-shim/enc.h>

struct answer {
	char text[1 << 20]; /* the CTL_CHUNKs' data joined, NUL-terminated */
	size_t len;
	int end_code;       /* the CTL_END's code, -1 if none came */
	char end_text[512];
};

/* answer_read - decode out (all of it) into a; out is emptied. */
void answer_read(struct ps_buf *out, struct answer *a);

#endif
