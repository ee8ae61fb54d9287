/*
 * A stand-in for fibd's netlink writer, below the layer under test (the feed
 * sessions, the sync engine): a route is queued once, a change while queued
 * costs nothing more, and the test decides each write's outcome. Nothing of
 * what the writer does with the kernel is copied here; tests of the writer
 * itself run the real nl.c over tests/fakes/kfake.c.
 */
#include <stdlib.h>
#include <string.h>

#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

#include "nl.h"
#include "nl_fake.h"

static struct nl_hooks hooks;
static struct route *qhead, *qtail;
static uint64_t queued;
unsigned fake_nl_writes;
unsigned fake_nl_enqueues;

int
nl_init(uv_loop_t *loop, uint8_t protocol, const struct nl_hooks *h)
{
	(void)loop;
	(void)protocol;
	hooks = *h;
	return 0;
}

void
nl_close(void)
{
}

void
nl_enqueue(struct route *r)
{
	fake_nl_enqueues++;
	r->flags &= (uint8_t)~(R_FAILED | R_WAITING);
	if (r->flags & R_QUEUED)
		return;
	r->flags |= R_QUEUED;
	r->qnext = 0;
	if (qtail)
		qtail->qnext = route_ref(r);
	else
		qhead = r;
	qtail = r;
	queued++;
}

void
fake_nl_reset(void)
{
	qhead = qtail = NULL;
	queued = 0;
}

uint64_t
nl_pending(void)
{
	return queued;
}

/* The writer socket's port, as the kernel would have given it. */
uint32_t
nl_portid(void)
{
	return FAKE_NL_PORTID;
}

void
nl_get_stats(struct nl_stats *ret)
{
	(void)ret;
}

const char *
nl_text(uint16_t idx)
{
	(void)idx;
	return NULL;
}

unsigned
fake_nl_complete(int err)
{
	unsigned n = 0;

	while (qhead) {
		struct route *r = qhead;
		qhead = route_at(r->qnext);
		if (!qhead)
			qtail = NULL;
		r->flags &= (uint8_t)~R_QUEUED;
		queued--;
		n++;
		if (route_want(r) == route_have(r)) {
			hooks.done(r, -1, NULL);
			continue;
		}
		fake_nl_writes++;
		if (!err) {
			route_set_have(r, rattr_ref(route_want(r)));
		} else {
			r->err = (uint16_t)err;
			r->flags |= R_FAILED;
		}
		hooks.done(r, err, NULL);
	}
	return n;
}

void
nl_release_held(struct rtable *t)
{
	(void)t;
}

void
nl_route_lost(struct route *r)
{
	nl_route_forget(r);
	nl_enqueue(r);
}

const struct kmsg_nhobj *
nl_old_nh_object(uint32_t id)
{
	(void)id;
	return NULL;
}

bool
nl_claim_old_nh_object(uint32_t id)
{
	(void)id;
	return false;
}

void
nl_route_changed(struct route *r, struct rattr *now)
{
	route_set_have(r, now);
	nl_enqueue(r);
}

void
nl_route_forget(struct route *r)
{
	if (route_have(r))
		table_at(r->rt)->n_installed--;
	route_set_have(r, NULL);
}
