/*
 * psdump: print a proto-shim byte stream (a capture of a session, or a file of
 * messages back to back) as one line of text per message, the form used by
 * tests/vectors. Stops at the first invalid message with its offset and reason.
 *
 *   psdump [FILE]      read FILE, or standard input
 *   psdump --version   the protocol versions this build speaks
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

#include <proto-shim/dec.h>

#include "config.h"

static char line[4 << 20];

int
main(int argc, char **argv)
{
	struct ps_dec *d;
	size_t consumed = 0;
	unsigned count = 0;
	int fd = STDIN_FILENO;

	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("psdump (fibd %s), proto-shim protocol versions %d..%d\n", FIBD_VERSION,
		    PS_VERSION_MIN, PS_VERSION_MAX);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "-")) {
		fd = open(argv[1], O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "psdump: %s: %s\n", argv[1], strerror(errno));
			return 1;
		}
	}
	d = ps_dec_new(0);
	if (!d) {
		fprintf(stderr, "psdump: out of memory\n");
		return 1;
	}
	for (;;) {
		const struct ps_msg *m;
		void *p;
		size_t room;
		ssize_t n;
		int r;

		while ((r = ps_dec_next(d, &m)) == 1) {
			ps_msg_format(m, line, sizeof(line));
			puts(line);
			count++;
		}
		if (r < 0) {
			const struct ps_fault *f = ps_dec_fault(d);
			fprintf(stderr, "psdump: message %u: %s: %s%s%s\n", count + 1,
			    ps_err_name((unsigned)f->code) ?: "?", f->text,
			    f->field[0] ? ", field " : "", f->field);
			ps_dec_free(d);
			return 1;
		}
		if (ps_dec_reserve(d, 0, &p, &room) < 0)
			break;
		n = read(fd, p, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "psdump: read: %s\n", strerror(errno));
			ps_dec_free(d);
			return 1;
		}
		if (n == 0)
			break;
		ps_dec_commit(d, (size_t)n);
		consumed += (size_t)n;
	}
	if (ps_dec_pending(d)) {
		fprintf(stderr, "psdump: the stream ends inside a message (%zu bytes left)\n",
		    ps_dec_pending(d));
		ps_dec_free(d);
		return 1;
	}
	fprintf(stderr, "psdump: %u messages, %zu bytes\n", count, consumed);
	ps_dec_free(d);
	return 0;
}
