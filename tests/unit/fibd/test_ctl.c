/*
 * ctl: fibctl's control commands, answered into a session's output by the real
 * ctl, status, watch and sync code (the writer below them faked): an unknown
 * command names the known ones; arguments are checked (status takes none, a
 * table number must be one); status answers in text and JSON, metrics in
 * Prometheus' format; a dump of nothing is a binary header and a trailer that
 * counts no record; decouple and couple flip a table and say so; a diff with no
 * table scanned yet says there is nothing to compare; which commands change
 * state (and need the admin right).
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <proto-shim/dec.h>
#include <proto-shim/enc.h>

#include "answer.h"
#include "config.h"
#include "ctl.h"
#include "log.h"
#include "status.h"
#include "sync.h"
#include "table.h"

static uv_loop_t loop;
static struct ps_buf out;
static struct answer ans;
#define text ans.text
#define text_len ans.len
#define end_code ans.end_code
#define end_text ans.end_text

/* Ask cmd with args (NULL-terminated), flags; the whole answer is read into text/end_*. */
static void
ask(const char *cmd, uint32_t flags, ...)
{
	static struct ps_ctl_request req;
	struct ctl_stream *st;
	const char *a;
	va_list ap;

	memset(&req, 0, sizeof(req));
	req.req = 5;
	req.flags = flags;
	snprintf(req.cmd, sizeof(req.cmd), "%s", cmd);
	va_start(ap, flags);
	while ((a = va_arg(ap, const char *)))
		req.args[req.n_args++] = ps_str_from(a);
	va_end(ap);
	st = ctl_handle(&out, &req, NULL);
	while (st && !ctl_stream_more(st, &out))
		;
	answer_read(&out, &ans);
}

static int
setup(void **state)
{
	(void)state;
	log_init("test", true, LOG_LVL_WARN);
	ps_buf_init(&out);
	uv_loop_init(&loop);
	status_set_info(uv_hrtime(), 12);
	return table_init() < 0 || sync_init(&loop, 12, 60, 0) < 0 ? -1 : 0;
}

static int
teardown(void **state)
{
	(void)state;
	sync_close();
	uv_run(&loop, UV_RUN_NOWAIT);
	ps_buf_release(&out);
	table_shutdown();
	return 0;
}

static void
test_unknown_command_and_arguments(void **state)
{
	(void)state;
	ask("frobnicate", 0, NULL);
	assert_int_equal(end_code, PS_E_UNKNOWN_CMD);
	assert_non_null(strstr(end_text, "no command 'frobnicate' (known: status,"));
	ask("status", 0, "table", "100", NULL);
	assert_int_equal(end_code, PS_E_ARGS);
	assert_string_equal(end_text, "status takes no arguments");
	ask("decouple", 0, "table", "lots", NULL);
	assert_int_equal(end_code, PS_E_ARGS);
	ask("dump", 0, "table", NULL);
	assert_int_equal(end_code, PS_E_ARGS);
	assert_true(ctl_changes_state("resync") && ctl_changes_state("couple") &&
	    ctl_changes_state("decouple"));
	assert_false(ctl_changes_state("status") || ctl_changes_state("dump") ||
	    ctl_changes_state("frobnicate"));
}

static void
test_status_and_metrics(void **state)
{
	(void)state;
	ask("status", 0, NULL);
	assert_int_equal(end_code, PS_E_OK);
	assert_non_null(strstr(text, "fibd " FIBD_VERSION));
	ask("status", PS_CTL_JSON, NULL);
	assert_int_equal(end_code, PS_E_OK);
	assert_memory_equal(text, "{\"version\":\"", 12);
	assert_non_null(strstr(text, "\"protocol\":12"));
	ask("metrics", 0, NULL);
	assert_int_equal(end_code, PS_E_OK);
	assert_non_null(strstr(text, "# TYPE fibd_netlink_replaces_total counter\n"));
	assert_non_null(strstr(text, "fibd_sessions_refused_total 0\n"));
}

static void
test_empty_binary_dump(void **state)
{
	(void)state;
	ask("dump", 0, "format", "binary", NULL);
	assert_int_equal(end_code, PS_E_OK);
	assert_int_equal(text_len, 16 + 16); /* a header and a trailer */
	assert_memory_equal(text, "FIBDBIN1\x02\x00", 10);
	assert_int_equal((uint8_t)text[16], 16);
	assert_int_equal((uint8_t)text[18], 0xff);
	for (int i = 24; i < 32; i++)
		assert_int_equal(text[i], 0); /* no record */
}

static void
test_couple_and_decouple(void **state)
{
	struct rtable *t;
	(void)state;

	ask("decouple", 0, "table", "100", NULL);
	assert_int_equal(end_code, PS_E_OK);
	assert_string_equal(end_text, "table 100 decoupled: fibd leaves it alone");
	t = table_get(100, PS_FAM_V4, false);
	assert_non_null(t);
	assert_true(t->decoupled);
	ask("couple", 0, "table", "100", NULL);
	assert_int_equal(end_code, PS_E_OK);
	assert_false(t->decoupled);
	ask("couple", 0, "table", "7", NULL);
	assert_int_equal(end_code, PS_E_ARGS);
	assert_string_equal(end_text, "fibd does not manage table 7");
}

static void
test_diff_with_nothing_scanned(void **state)
{
	(void)state;
	ask("diff", 0, NULL);
	assert_int_equal(end_code, PS_E_ARGS);
	assert_non_null(strstr(end_text, "nothing to compare"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unknown_command_and_arguments),
		cmocka_unit_test(test_status_and_metrics),
		cmocka_unit_test(test_empty_binary_dump),
		cmocka_unit_test(test_couple_and_decouple),
		cmocka_unit_test(test_diff_with_nothing_scanned),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
