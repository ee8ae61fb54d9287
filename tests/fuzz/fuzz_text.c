/*
 * Fuzz targets for the text decoders operators feed fibd and fibctl (libFuzzer
 * entry point; the replay driver runs the corpus in CI). One source, three
 * targets, chosen at build time:
 *
 * - FUZZ_ROUTELINE: fibctl's ip-route parser, one line at a time. Beyond "no
 *   crash, no leak, no undefined behaviour": every route it accepts, written
 *   back by fibd's formatter (what dump and show route print), parses again
 *   into the very same attributes and key.
 * - FUZZ_CONF: fibd's configuration parser on the whole input; a refusal must
 *   name a line and leave the configuration untouched.
 * - FUZZ_ARGS: fibctl's command lines (the input split into words).
 * - FUZZ_STATE: fibd's state file, one line at a time. A client's name it
 *   accepts, written back (state_put_fed, with its escapes), reads back as the
 *   same table, family and name.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#if defined(FUZZ_ROUTELINE)
#include "format.h"
#include "parser.h"
#include "table.h"

static struct ps_msg m1, m2;

static void
one_line(const char *line)
{
	struct text t = { 0 };
	struct rattr *a, *b;
	char err[256];

	if (parse_route_line(line, &m1, err, sizeof(err)) != 0)
		return;
	if (!(a = rattr_intern(&m1.u.route)))
		abort();
	/* fibd resolves a line without a table to its session's (main, by default). */
	if (!(m1.u.route.key.has & PS_KEY_TABLE))
		m1.u.route.key.table = 254;
	put_route(&t, m1.u.route.key.family, &m1.u.route.key.prefix, m1.u.route.key.plen, a,
	    m1.u.route.key.table, m1.u.route.key.metric, m1.u.route.key.tos);
	if (t.failed)
		abort();
	if (parse_route_line(t.p, &m2, err, sizeof(err)) != 0) {
		fprintf(stderr, "'%s' is written as '%s', which is refused: %s\n", line, t.p, err);
		abort();
	}
	if (!(b = rattr_intern(&m2.u.route)))
		abort();
	if (a != b || m1.u.route.key.plen != m2.u.route.key.plen ||
	    m1.u.route.key.table != m2.u.route.key.table ||
	    m1.u.route.key.metric != m2.u.route.key.metric || m1.u.route.key.tos != m2.u.route.key.tos ||
	    memcmp(&m1.u.route.key.prefix, &m2.u.route.key.prefix, sizeof(m1.u.route.key.prefix))) {
		fprintf(stderr, "'%s' is written as '%s', which reads back as another route\n", line, t.p);
		abort();
	}
	rattr_unref(a);
	rattr_unref(b);
	free(t.p);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	char *text = malloc(size + 1), *line, *save = NULL;

	if (!ready) {
		if (table_init() < 0)
			abort();
		ready = 1;
	}
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		one_line(line);
	free(text);
	return 0;
}

#elif defined(FUZZ_CONF)
#include "conf.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct conf c, before;
	char *text = malloc(size + 1), err[512] = "";

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	conf_defaults(&c);
	before = c;
	if (conf_parse(text, &c, err, sizeof(err)) < 0 &&
	    (strncmp(err, "line ", 5) || memcmp(&c, &before, sizeof(c)))) {
		fprintf(stderr, "refused without naming a line, or half applied: %s\n", err);
		abort();
	}
	free(text);
	return 0;
}

#elif defined(FUZZ_ARGS)
#include "args.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ps_ctl_request req;
	char *text = malloc(size + 1), *argv[24], *save = NULL, err[512];
	int argc = 0;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (char *w = strtok_r(text, " \n", &save); w && argc < 24; w = strtok_r(NULL, " \n", &save))
		argv[argc++] = w;
	if (argc && args_request(argc, argv, &req, err, sizeof(err)) == 0 &&
	    (req.n_args % 2 || req.n_args > PS_CTL_ARGS_MAX || !req.cmd[0])) {
		fprintf(stderr, "a request with %u arguments for '%s'\n", req.n_args, req.cmd);
		abort();
	}
	free(text);
	return 0;
}

#elif defined(FUZZ_STATE)
#include <proto-shim/msg.h>

#include "state.h"

struct fed {
	uint32_t table;
	uint8_t family;
	char name[PS_NAME_MAX + 1];
	int n;
};

static void
on_fed(uint32_t table, uint8_t family, const char *client, void *ctx)
{
	struct fed *f = ctx;

	if (strlen(client) > PS_NAME_MAX || !client[0])
		abort(); /* the limit the format promises */
	f->table = table;
	f->family = family;
	snprintf(f->name, sizeof(f->name), "%s", client);
	f->n++;
}

static void
on_table(uint32_t table, uint8_t family, bool decoupled, void *ctx)
{
	(void)ctx;
	(void)decoupled;
	if (!table || (family != PS_FAM_V4 && family != PS_FAM_V6))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct state_load_cbs cbs = { .table = on_table, .fed = on_fed };
	char *text = malloc(size + 1), *line, *save = NULL;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct fed a = { 0 }, b = { 0 };
		char back[512];
		FILE *f;
		if (strlen(line) > 511 || state_parse_line(line, &cbs, &a) < 0 || !a.n)
			continue;
		if (!(f = fmemopen(back, sizeof(back), "w")))
			abort();
		state_put_fed(a.table, a.family, a.name, f);
		fclose(f);
		if (state_parse_line(back, &cbs, &b) < 0 || b.n != 1 || b.table != a.table ||
		    b.family != a.family || strcmp(b.name, a.name)) {
			fprintf(stderr, "'%s' is written as '%s', which reads back otherwise\n", line, back);
			abort();
		}
	}
	free(text);
	return 0;
}

#else
#error "define FUZZ_ROUTELINE, FUZZ_CONF, FUZZ_ARGS or FUZZ_STATE"
#endif
