/*
 * state: read and write the list of managed tables. Written only when a table
 * is added (rare, and a few bytes), so plain blocking file I/O is fine here.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "state.h"
#include "table.h"

static char path[256];

void
state_init(const char *p)
{
	snprintf(path, sizeof(path), "%s", p ? p : "");
}

int
state_load(void (*cb)(uint32_t table, uint8_t family, bool decoupled, void *ctx), void *ctx)
{
	char line[128], fam[16], flag[16];
	int n;
	unsigned long id;
	unsigned lineno = 0;
	FILE *f;

	if (!path[0])
		return 0;
	if (!(f = fopen(path, "re")))
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (!strcmp(line, "decouple new tables\n")) {
			table_decouple_new = true; /* fibctl decouple of every table, before the restart */
			continue;
		}
		n = sscanf(line, "table %lu %15s %15s", &id, fam, flag);
		if (n < 2 || id == 0 || id > UINT32_MAX || (strcmp(fam, "inet") && strcmp(fam, "inet6")) ||
		    (n == 3 && strcmp(flag, "decoupled"))) {
			log_warn("state %s: line %u is not 'table ID inet|inet6 [decoupled]'; ignored", path,
			    lineno);
			continue;
		}
		cb((uint32_t)id, strcmp(fam, "inet") ? PS_FAM_V6 : PS_FAM_V4, n == 3, ctx);
	}
	fclose(f);
	return 0;
}

int
state_save(void)
{
	char tmp[sizeof(path) + 8], dir[sizeof(path)];
	FILE *f;

	if (!path[0])
		return 0;
	snprintf(dir, sizeof(dir), "%s", path);
	mkdir(dirname(dir), 0755);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!(f = fopen(tmp, "we"))) {
		log_warn_errno(errno, "state: cannot write %s", tmp);
		return -errno;
	}
	fprintf(f, "# tables fibd manages; read at start to scan them before clients return\n");
	if (table_decouple_new)
		fprintf(f, "decouple new tables\n");
	for (unsigned i = 0; i < table_count(); i++) {
		struct rtable *t = table_at((uint16_t)i);
		fprintf(f, "table %u %s%s\n", t->id, family_name(t->family),
		    t->decoupled ? " decoupled" : "");
	}
	if (fflush(f) || fsync(fileno(f)) || fclose(f)) {
		log_warn_errno(errno, "state: cannot write %s", tmp);
		unlink(tmp);
		return -EIO;
	}
	if (rename(tmp, path) < 0) {
		log_warn_errno(errno, "state: cannot replace %s", path);
		return -errno;
	}
	return 0;
}
