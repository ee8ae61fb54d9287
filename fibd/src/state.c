/*
 * state: read and write the list of managed tables and the clients that fed
 * them. Written only when a table is added or a client first feeds one (rare,
 * and a few bytes), so plain blocking file I/O is fine here.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <proto-shim/msg.h>

#include "log.h"
#include "state.h"
#include "table.h"

static char path[256];
static int failed_err; /* the last save failed with this errno (logged once), 0 if it did not */
static void (*fed_source)(state_emit_fn emit, void *ctx);

void
state_init(const char *p)
{
	snprintf(path, sizeof(path), "%s", p ? p : "");
}

void
state_set_fed_source(void (*each)(state_emit_fn emit, void *ctx))
{
	fed_source = each;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A client name as written (%XX escapes); false if malformed or too long. */
static bool
name_decode(const char *in, char *out, size_t size)
{
	size_t n = 0;

	for (; *in; in++) {
		int c = (unsigned char)*in;
		if (c == '%') {
			int hi = hexval(in[1]), lo = hi < 0 ? -1 : hexval(in[2]);
			if (lo < 0)
				return false;
			c = hi << 4 | lo;
			in += 2;
		} else if (c <= 0x20 || c >= 0x7f) {
			return false;
		}
		if (!c || n + 1 >= size)
			return false;
		out[n++] = (char)c;
	}
	out[n] = '\0';
	return n > 0;
}

static bool
family_of(const char *s, uint8_t *ret)
{
	if (!strcmp(s, "inet"))
		*ret = PS_FAM_V4;
	else if (!strcmp(s, "inet6"))
		*ret = PS_FAM_V6;
	else
		return false;
	return true;
}

int
state_parse_line(const char *line, const struct state_load_cbs *cbs, void *ctx)
{
	char fam[16], flag[16], word[8], name[3 * PS_NAME_MAX + 1], client[PS_NAME_MAX + 1];
	unsigned long id;
	uint8_t family;
	int n;

	if (line[0] == '#' || line[0] == '\n' || line[0] == '\0')
		return 0;
	if (!strcmp(line, "decouple new tables\n") || !strcmp(line, "decouple new tables")) {
		table_decouple_new = true; /* fibctl decouple of every table, before the restart */
		return 0;
	}
	if (sscanf(line, "%7s", word) == 1 && !strcmp(word, "fed")) {
		n = sscanf(line, "fed %lu %15s %192s", &id, fam, name);
		if (n != 3 || id == 0 || id > UINT32_MAX || !family_of(fam, &family) ||
		    !name_decode(name, client, sizeof(client)))
			return -EINVAL;
		if (cbs->fed)
			cbs->fed((uint32_t)id, family, client, ctx);
		return 0;
	}
	n = sscanf(line, "table %lu %15s %15s", &id, fam, flag);
	if (n < 2 || id == 0 || id > UINT32_MAX || !family_of(fam, &family) ||
	    (n == 3 && strcmp(flag, "decoupled")))
		return -EINVAL;
	if (cbs->table)
		cbs->table((uint32_t)id, family, n == 3, ctx);
	return 0;
}

int
state_load(const struct state_load_cbs *cbs, void *ctx)
{
	char line[512];
	unsigned lineno = 0;
	FILE *f;

	if (!path[0])
		return 0;
	if (!(f = fopen(path, "re")))
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (state_parse_line(line, cbs, ctx) < 0)
			log_warn("state %s: line %u is not 'table ID inet|inet6 [decoupled]' or "
				 "'fed ID inet|inet6 NAME'; ignored", path, lineno);
	}
	fclose(f);
	return 0;
}

void
state_put_fed(uint32_t table, uint8_t family, const char *client, void *ctx)
{
	FILE *f = ctx;

	fprintf(f, "fed %u %s ", table, family_name(family));
	for (const unsigned char *p = (const unsigned char *)client; *p; p++) {
		if (*p <= 0x20 || *p >= 0x7f || *p == '%')
			fprintf(f, "%%%02X", *p);
		else
			fputc(*p, f);
	}
	fputc('\n', f);
}

static int save_once(void);

bool
state_dirty(void)
{
	return failed_err != 0;
}

int
state_save(void)
{
	int r = save_once();

	if (r < 0 && -r != failed_err)
		log_warn_errno(-r, "state: cannot write %s; retrying every %u s", path, STATE_RETRY_S);
	else if (r == 0 && failed_err)
		log_info("state: %s written again", path);
	failed_err = r < 0 ? -r : 0;
	return r;
}

/* One attempt; the caller logs. */
static int
save_once(void)
{
	char tmp[sizeof(path) + 8], dir[sizeof(path)];
	bool bad;
	int err;
	FILE *f;

	if (!path[0])
		return 0;
	snprintf(dir, sizeof(dir), "%s", path);
	mkdir(dirname(dir), 0755);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!(f = fopen(tmp, "we")))
		return -errno;
	fprintf(f, "# tables fibd manages, and the clients that fed them; read at start\n");
	if (table_decouple_new)
		fprintf(f, "decouple new tables\n");
	for (unsigned i = 0; i < table_count(); i++) {
		struct rtable *t = table_at((uint16_t)i);
		fprintf(f, "table %u %s%s\n", t->id, family_name(t->family),
		    t->decoupled ? " decoupled" : "");
	}
	if (fed_source)
		fed_source(state_put_fed, f);
	errno = 0;
	bad = ferror(f) || fflush(f) || fsync(fileno(f));
	err = errno;
	if (fclose(f) && !bad) {
		bad = true;
		err = errno;
	}
	if (bad) {
		unlink(tmp);
		return -(err ? err : EIO);
	}
	if (rename(tmp, path) < 0) {
		err = errno;
		unlink(tmp);
		return -err;
	}
	return 0;
}
