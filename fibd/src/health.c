/*
 * health: a 100 ms timer measures how late it fires (loop lag); a prepare/check
 * pair measures each iteration's busy time. Samples of the current minute go in
 * a fixed array (600 lag samples), so the p99 costs a sort of 600 numbers once a
 * minute.
 */
#include <stdlib.h>
#include <string.h>

#include "health.h"

#define HEALTH_TICK_MS 100
#define HEALTH_SAMPLES (60000 / HEALTH_TICK_MS)

static struct {
	uv_timer_t tick;
	uv_prepare_t prepare;
	uv_check_t check;
	uint64_t expected_ns;
	uint64_t check_ns;
	double lag[HEALTH_SAMPLES];
	unsigned n_lag;
	double busy_max, lag_max;             /* this minute */
	double last_p99, last_lag_max, last_busy_max; /* last full minute */
	double lag_max_all, busy_max_all;
	uint64_t iterations;
	int have_last;
	double cb_max, last_cb_max, cb_max_all;
	const char *cb_name, *last_cb_name, *cb_all_name;
} h;

uint64_t
health_cb_begin(void)
{
	return uv_hrtime();
}

void
health_cb_end(uint64_t begin, const char *name)
{
	double ms = (double)(uv_hrtime() - begin) / 1e6;

	if (ms > h.cb_max) {
		h.cb_max = ms;
		h.cb_name = name;
	}
	if (ms > h.cb_max_all) {
		h.cb_max_all = ms;
		h.cb_all_name = name;
	}
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double
p99(double *v, unsigned n)
{
	double tmp[HEALTH_SAMPLES];

	if (!n)
		return 0;
	memcpy(tmp, v, n * sizeof(*v));
	qsort(tmp, n, sizeof(*tmp), cmp_double);
	return tmp[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
}

static void
health_on_tick(uv_timer_t *t)
{
	uint64_t now = uv_hrtime();
	double lag = now > h.expected_ns ? (double)(now - h.expected_ns) / 1e6 : 0;

	if (h.n_lag < HEALTH_SAMPLES)
		h.lag[h.n_lag++] = lag;
	if (lag > h.lag_max)
		h.lag_max = lag;
	if (lag > h.lag_max_all)
		h.lag_max_all = lag;
	if (h.n_lag == HEALTH_SAMPLES) {
		h.last_p99 = p99(h.lag, h.n_lag);
		h.last_lag_max = h.lag_max;
		h.last_busy_max = h.busy_max;
		h.last_cb_max = h.cb_max;
		h.last_cb_name = h.cb_name;
		h.have_last = 1;
		h.n_lag = 0;
		h.lag_max = h.busy_max = h.cb_max = 0;
		h.cb_name = NULL;
	}
	h.expected_ns = now + (uint64_t)HEALTH_TICK_MS * 1000000u;
	uv_timer_start(t, health_on_tick, HEALTH_TICK_MS, 0);
}

static void
health_on_check(uv_check_t *c)
{
	(void)c;
	h.check_ns = uv_hrtime();
}

static void
health_on_prepare(uv_prepare_t *p)
{
	(void)p;
	h.iterations++;
	if (h.check_ns) {
		double busy = (double)(uv_hrtime() - h.check_ns) / 1e6;
		if (busy > h.busy_max)
			h.busy_max = busy;
		if (busy > h.busy_max_all)
			h.busy_max_all = busy;
	}
}

void
health_init(uv_loop_t *loop)
{
	memset(&h, 0, sizeof(h));
	uv_timer_init(loop, &h.tick);
	uv_prepare_init(loop, &h.prepare);
	uv_check_init(loop, &h.check);
	/* The measuring handles must not keep the loop alive on their own. */
	uv_unref((uv_handle_t *)&h.tick);
	uv_unref((uv_handle_t *)&h.prepare);
	uv_unref((uv_handle_t *)&h.check);
	h.expected_ns = uv_hrtime() + (uint64_t)HEALTH_TICK_MS * 1000000u;
	uv_timer_start(&h.tick, health_on_tick, HEALTH_TICK_MS, 0);
	uv_prepare_start(&h.prepare, health_on_prepare);
	uv_check_start(&h.check, health_on_check);
}

void
health_close(void)
{
	uv_close((uv_handle_t *)&h.tick, NULL);
	uv_close((uv_handle_t *)&h.prepare, NULL);
	uv_close((uv_handle_t *)&h.check, NULL);
}

void
health_get(struct health_stats *ret)
{
	if (h.have_last) {
		ret->lag_p99_ms = h.last_p99;
		ret->lag_max_ms = h.last_lag_max;
		ret->busy_max_ms = h.last_busy_max;
		ret->cb_max_ms = h.last_cb_max;
		ret->cb_max_name = h.last_cb_name;
	} else {
		ret->cb_max_ms = h.cb_max;
		ret->cb_max_name = h.cb_name;
		ret->lag_p99_ms = p99(h.lag, h.n_lag);
		ret->lag_max_ms = h.lag_max;
		ret->busy_max_ms = h.busy_max;
	}
	ret->lag_max_all_ms = h.lag_max_all;
	ret->busy_max_all_ms = h.busy_max_all;
	ret->iterations = h.iterations;
	ret->cb_max_all_ms = h.cb_max_all;
	ret->cb_max_all_name = h.cb_all_name;
}
