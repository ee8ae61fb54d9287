/*
 * args: fibctl's command lines into control requests (see args.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

static const char *const plain[] = { "status", "clients", "tables", "metrics" };
static const char *const with_table[] = { "diff", "watch", "resync", "couple", "decouple" };

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static bool
in(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, list[i]))
			return true;
	return false;
}

bool
args_is_control(const char *cmd)
{
	return in(cmd, plain, N_OF(plain)) || in(cmd, with_table, N_OF(with_table)) ||
	    !strcmp(cmd, "show") || !strcmp(cmd, "dump");
}

static bool
is_table(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	return s[0] >= '0' && s[0] <= '9' && !errno && !*end && v >= 1 && v <= 0xffffffffUL;
}

static void
arg_add(struct ps_ctl_request *req, const char *key, const char *val)
{
	req->args[req->n_args++] = ps_str_from(key);
	req->args[req->n_args++] = ps_str_from(val);
}

/* "table N" or "--table N" at argv[i]: 1 if taken (i moved on), 0 if not there, -1 if bad. */
static int
take_table(int argc, char **argv, int *i, struct ps_ctl_request *req, char *err, size_t errlen)
{
	if (*i >= argc || (strcmp(argv[*i], "table") && strcmp(argv[*i], "--table")))
		return 0;
	if (*i + 1 >= argc || !is_table(argv[*i + 1])) {
		snprintf(err, errlen, "%s: table '%s' is not a number from 1 to 4294967295", argv[0],
		    *i + 1 < argc ? argv[*i + 1] : "");
		return -1;
	}
	arg_add(req, "table", argv[*i + 1]);
	*i += 2;
	return 1;
}

static int
show_route(int argc, char **argv, struct ps_ctl_request *req, char *err, size_t errlen)
{
	int i = 2;

	if (argc < 2 || strcmp(argv[1], "route")) {
		snprintf(err, errlen, "show what? (show route)");
		return -1;
	}
	snprintf(req->cmd, sizeof(req->cmd), "show-route");
	if (take_table(argc, argv, &i, req, err, errlen) < 0)
		return -1;
	if (i < argc)
		arg_add(req, "prefix", argv[i++]);
	if (i < argc) {
		if (strcmp(argv[i], "exact") && strcmp(argv[i], "longest") && strcmp(argv[i], "longer")) {
			snprintf(err, errlen, "show route: '%s' is not exact, longest or longer", argv[i]);
			return -1;
		}
		arg_add(req, "match", argv[i++]);
	}
	if (i < argc) {
		snprintf(err, errlen, "show route: unexpected '%s'", argv[i]);
		return -1;
	}
	return 0;
}

static int
dump(int argc, char **argv, struct ps_ctl_request *req, char *err, size_t errlen)
{
	for (int i = 1; i < argc;) {
		const char *k = argv[i];
		int r = take_table(argc, argv, &i, req, err, errlen);
		if (r < 0)
			return -1;
		if (r)
			continue;
		if (k[0] == '-' && k[1] == '-')
			k += 2;
		if (strcmp(k, "family") && strcmp(k, "format")) {
			snprintf(err, errlen, "dump: unknown option '%s' (--table, --family, --format)", argv[i]);
			return -1;
		}
		if (i + 1 >= argc ||
		    (!strcmp(k, "family") && strcmp(argv[i + 1], "4") && strcmp(argv[i + 1], "6")) ||
		    (!strcmp(k, "format") && strcmp(argv[i + 1], "text") && strcmp(argv[i + 1], "json") &&
			strcmp(argv[i + 1], "binary"))) {
			snprintf(err, errlen, "dump: --%s takes %s", k,
			    !strcmp(k, "family") ? "4 or 6" : "text, json or binary");
			return -1;
		}
		arg_add(req, k, argv[i + 1]);
		i += 2;
	}
	return 0;
}

int
args_request(int argc, char **argv, struct ps_ctl_request *req, char *err, size_t errlen)
{
	const char *cmd = argv[0];
	int i = 1;

	memset(req, 0, sizeof(*req));
	snprintf(req->cmd, sizeof(req->cmd), "%s", cmd);
	if (!strcmp(cmd, "show"))
		return show_route(argc, argv, req, err, errlen);
	if (!strcmp(cmd, "dump"))
		return dump(argc, argv, req, err, errlen);
	if (in(cmd, with_table, N_OF(with_table))) {
		if (take_table(argc, argv, &i, req, err, errlen) < 0)
			return -1;
	} else if (!in(cmd, plain, N_OF(plain))) {
		snprintf(err, errlen, "unknown command '%s' (try 'fibctl help')", cmd);
		return -1;
	}
	if (i < argc) {
		snprintf(err, errlen, "%s: unexpected '%s'", cmd, argv[i]);
		return -1;
	}
	return 0;
}
