/*
 * health: loop health. Loop lag is how late a 100 ms timer fires; the busy time
 * of an iteration is from the end of its poll to the start of the next poll,
 * which bounds the longest callback. Both are kept per minute (p99, max) and as
 * all-time maxima.
 */
#ifndef FIBD_HEALTH_H
#define FIBD_HEALTH_H

#include <stdint.h>

#include <uv.h>

/*
 * Callbacks that may do real work bracket it with health_cb_begin/end, so that
 * the longest one is known by name.
 */
uint64_t health_cb_begin(void);
void health_cb_end(uint64_t begin, const char *name);

struct health_stats {
	double lag_p99_ms;  /* over the last full minute (or so far, in the first) */
	double lag_max_ms;
	double busy_max_ms; /* longest iteration, last minute */
	double lag_max_all_ms;
	double busy_max_all_ms;
	uint64_t iterations;
	double cb_max_ms;         /* longest bracketed callback, last minute */
	const char *cb_max_name;
	double cb_max_all_ms;
	const char *cb_max_all_name;
};

void health_init(uv_loop_t *loop);
void health_close(void);
void health_get(struct health_stats *ret);

#endif
