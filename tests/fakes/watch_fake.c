/* A stand-in for watch in unit tests: no watch or diff is ever open. */
#include "watch.h"

unsigned watch_open_count;

void
watch_route(enum watch_event ev, const struct route *r, const char *client, int err, const char *text)
{
	(void)ev;
	(void)r;
	(void)client;
	(void)err;
	(void)text;
}

void
watch_diff_begin(struct rtable *t)
{
	(void)t;
}

void
watch_diff(struct rtable *t, enum diff_kind kind, const struct route *r, const struct rattr *kernel)
{
	(void)t;
	(void)kind;
	(void)r;
	(void)kernel;
}

void
watch_diff_end(struct rtable *t, uint64_t routes, bool unsure)
{
	(void)t;
	(void)routes;
	(void)unsure;
}
