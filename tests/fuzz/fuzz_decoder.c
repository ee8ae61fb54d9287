/*
 * Fuzz target for the proto-shim decoder (libFuzzer entry point; the replay
 * driver calls the same function for every file of the corpus in CI).
 *
 * Input: byte 0 seeds how the rest is split into reads; the rest is the stream.
 * Properties checked, beyond "no crash, no leak, no undefined behaviour":
 * - the streaming decoder and ps_dec_one agree, message for message;
 * - every message the decoder accepts, the encoder accepts too, and decoding
 *   that encoding gives the same message (text form) again.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proto-shim/dec.h>
#include <proto-shim/enc.h>

#include "fuzz.h"

#define FUZZ_MAX_MSG (64 * 1024)

static char text_a[1 << 20], text_b[1 << 20];

static void
check_reencode(const struct ps_msg *m, struct ps_buf *b, struct ps_msg *scratch)
{
	struct ps_fault f;
	int n;

	b->len = 0;
	n = ps_enc_msg(b, m, &f);
	if (n <= 0) {
		fprintf(stderr, "decoder accepted what the encoder refuses: %s\n", f.text);
		abort();
	}
	if (ps_dec_one(b->data, b->len, 0, scratch, &f) != n) {
		fprintf(stderr, "re-encoded message does not decode: %s\n", f.text);
		abort();
	}
	ps_msg_format(m, text_a, sizeof(text_a));
	ps_msg_format(scratch, text_b, sizeof(text_b));
	if (strcmp(text_a, text_b)) {
		fprintf(stderr, "round trip changed the message:\n%s\n%s\n", text_a, text_b);
		abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ps_msg one, scratch;
	struct ps_dec *d;
	struct ps_buf b;
	unsigned seed;
	size_t off = 0, one_off = 0;

	if (size < 1)
		return 0;
	seed = data[0];
	data++;
	size--;
	d = ps_dec_new(FUZZ_MAX_MSG);
	if (!d)
		return 0;
	ps_buf_init(&b);
	for (;;) {
		const struct ps_msg *m;
		int r;

		while ((r = ps_dec_next(d, &m)) == 1) {
			/* ps_dec_one over the same bytes must find the same message. */
			int n = ps_dec_one(data + one_off, size - one_off, FUZZ_MAX_MSG, &one, NULL);
			if (n <= 0)
				abort();
			one_off += (size_t)n;
			ps_msg_format(m, text_a, sizeof(text_a));
			ps_msg_format(&one, text_b, sizeof(text_b));
			if (strcmp(text_a, text_b))
				abort();
			check_reencode(m, &b, &scratch);
		}
		if (r < 0 || off == size)
			break;
		{
			size_t piece = 1 + (seed * 7919u + off) % (seed & 1 ? 7 : 4093);
			if (piece > size - off)
				piece = size - off;
			r = ps_dec_feed(d, data + off, piece);
			if (r < 0)
				break;
			off += (size_t)r;
		}
	}
	ps_buf_release(&b);
	ps_dec_free(d);
	return 0;
}
