/*
 * state: the file a restarted fibd reads. Tables and the clients that fed them
 * round-trip (a name with a space, a '%' and a byte over 0x7f included); a
 * malformed line is skipped, not fatal; a save that fails is reported, leaves
 * the state dirty, and the next save that works clears it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "state.h"
#include "table.h"

static char dir[64], file[96];

static const char *names[] = { "bird", "my client%1", "caf\xc3\xa9" };

static void
emit_all(state_emit_fn emit, void *ctx)
{
	emit(100, PS_FAM_V4, names[0], ctx);
	emit(100, PS_FAM_V6, names[1], ctx);
	emit(4000000000u, PS_FAM_V4, names[2], ctx);
}

struct seen {
	unsigned tables, fed;
	uint32_t fed_table[8];
	uint8_t fed_family[8];
	char fed_name[8][PS_NAME_MAX + 1];
};

static void
on_table(uint32_t table, uint8_t family, bool decoupled, void *ctx)
{
	struct seen *s = ctx;
	(void)table;
	(void)family;
	(void)decoupled;
	s->tables++;
}

static void
on_fed(uint32_t table, uint8_t family, const char *client, void *ctx)
{
	struct seen *s = ctx;

	if (s->fed < 8) {
		s->fed_table[s->fed] = table;
		s->fed_family[s->fed] = family;
		snprintf(s->fed_name[s->fed], sizeof(s->fed_name[0]), "%s", client);
	}
	s->fed++;
}

static int
setup(void **state)
{
	(void)state;
	log_init("test", true, LOG_LVL_WARN);
	snprintf(dir, sizeof(dir), "/tmp/fibd-state-%d", getpid());
	snprintf(file, sizeof(file), "%s/state", dir);
	mkdir(dir, 0755);
	state_init(file);
	state_set_fed_source(emit_all);
	return table_init();
}

static int
teardown(void **state)
{
	(void)state;
	unlink(file);
	rmdir(dir);
	table_shutdown();
	return 0;
}

static void
test_round_trip(void **state)
{
	const struct state_load_cbs cbs = { .table = on_table, .fed = on_fed };
	struct seen s = { 0 };
	FILE *f;
	(void)state;

	assert_non_null(table_get(100, PS_FAM_V4, true));
	assert_non_null(table_get(100, PS_FAM_V6, true));
	assert_int_equal(state_save(), 0);
	assert_false(state_dirty());
	/* A line from a newer or broken fibd is skipped, with a warning. */
	f = fopen(file, "a");
	assert_non_null(f);
	fputs("fed 100 inet\nfed 0 inet x\nfed 100 inet bad%zz\nfed 100 inet6 x\n", f);
	fclose(f);
	assert_int_equal(state_load(&cbs, &s), 0);
	assert_int_equal(s.tables, 2);
	assert_int_equal(s.fed, 4);
	for (unsigned i = 0; i < 3; i++)
		assert_string_equal(s.fed_name[i], names[i]);
	assert_int_equal(s.fed_table[2], 4000000000u);
	assert_int_equal(s.fed_family[1], PS_FAM_V6);
	assert_string_equal(s.fed_name[3], "x");
}

static void
test_failed_save_stays_dirty(void **state)
{
	(void)state;
	/* A directory where the temporary file should go: the save fails. */
	char tmp[128];
	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	assert_int_equal(mkdir(tmp, 0755), 0);
	assert_true(state_save() < 0);
	assert_true(state_dirty());
	assert_true(state_save() < 0); /* logged once, still dirty */
	assert_true(state_dirty());
	rmdir(tmp);
	assert_int_equal(state_save(), 0);
	assert_false(state_dirty());
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_failed_save_stays_dirty),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
