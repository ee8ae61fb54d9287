/*
 * Golden vectors (tests/vectors/NAME.vec, written from the spec by make-vectors.py):
 * each file holds encoded bytes and either the text form a decoder must produce
 * ("text:", re-encoded to the same bytes when "canonical: yes") or the error code
 * and field it must report ("error: CODE FIELD", "-" for no field).
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <proto-shim/dec.h>
#include <proto-shim/enc.h>

struct vector {
	char name[256];
	uint8_t bytes[8192];
	size_t len;
	char text[4096];
	char error[128];
	int canonical;
};

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static void
load(const char *path, struct vector *v)
{
	FILE *f = fopen(path, "r");
	char line[8192];

	if (!f)
		fail_msg("cannot open %s", path);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "bytes: ", 7)) {
			for (const char *p = line + 7; *p; p++) {
				int hi, lo;
				if (*p == ' ')
					continue;
				hi = hexval(p[0]);
				lo = hexval(p[1]);
				if (hi < 0 || lo < 0 || v->len >= sizeof(v->bytes))
					fail_msg("%s: bad hex", path);
				v->bytes[v->len++] = (uint8_t)(hi << 4 | lo);
				p++;
			}
		} else if (!strncmp(line, "text: ", 6)) {
			snprintf(v->text, sizeof(v->text), "%.4000s", line + 6);
		} else if (!strncmp(line, "error: ", 7)) {
			snprintf(v->error, sizeof(v->error), "%.100s", line + 7);
		} else if (!strncmp(line, "canonical: ", 11)) {
			v->canonical = !strcmp(line + 11, "yes");
		} else if (line[0] != '#' && line[0]) {
			fail_msg("%s: unknown line '%s'", path, line);
		}
	}
	fclose(f);
	if (!v->len || (!v->text[0] && !v->error[0]))
		fail_msg("%s: incomplete vector", path);
}

static void
check(const struct vector *v)
{
	struct ps_msg *m = malloc(sizeof(*m));
	struct ps_fault f;
	int r;

	assert_non_null(m);
	memset(&f, 0, sizeof(f));
	r = ps_dec_one(v->bytes, v->len, 0, m, &f);
	if (v->error[0]) {
		char got[128];
		if (r >= 0)
			fail_msg("%s: decoded, but should fail with %s", v->name, v->error);
		snprintf(got, sizeof(got), "%s %s", ps_err_name((unsigned)f.code) ?: "?",
		    f.field[0] ? f.field : "-");
		if (strcmp(got, v->error))
			fail_msg("%s: failed with %s (%s), expected %s", v->name, got, f.text,
			    v->error);
	} else {
		char text[4096];
		if (r != (int)v->len)
			fail_msg("%s: decode returned %d of %zu bytes: %s", v->name, r, v->len,
			    f.text);
		ps_msg_format(m, text, sizeof(text));
		if (strcmp(text, v->text))
			fail_msg("%s: text\n  got:      %s\n  expected: %s", v->name, text,
			    v->text);
		if (v->canonical) {
			struct ps_buf b;
			ps_buf_init(&b);
			assert_int_equal(ps_enc_msg(&b, m, NULL), (int)v->len);
			if (memcmp(b.data, v->bytes, v->len))
				fail_msg("%s: re-encoding gives other bytes", v->name);
			ps_buf_release(&b);
		}
	}
	free(m);
}

static void
test_vectors(void **state)
{
	const char *dir = getenv("VECTORS_DIR");
	struct dirent *de;
	unsigned n = 0, errors = 0, canonical = 0;
	DIR *d;
	(void)state;

	if (!dir)
		fail_msg("VECTORS_DIR is not set");
	d = opendir(dir);
	if (!d)
		fail_msg("cannot open %s", dir);
	while ((de = readdir(d))) {
		struct vector *v;
		char path[4096];
		size_t l = strlen(de->d_name);
		if (l < 5 || strcmp(de->d_name + l - 4, ".vec"))
			continue;
		v = calloc(1, sizeof(*v));
		assert_non_null(v);
		snprintf(v->name, sizeof(v->name), "%s", de->d_name);
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		load(path, v);
		check(v);
		n++;
		errors += !!v->error[0];
		canonical += v->canonical;
		free(v);
	}
	closedir(d);
	print_message("%u vectors: %u canonical, %u refused as expected\n", n, canonical, errors);
	/* An empty or half-deleted vector folder must not pass quietly. */
	assert_true(n >= 30);
	assert_true(errors >= 10);
	assert_true(canonical >= 20);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
