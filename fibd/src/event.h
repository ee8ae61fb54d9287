/*
 * event: route events, published by the engine and the writer's outcomes,
 * for whoever listens (watch.c, through the sink main.c wires). The engine
 * layer's way up: it never calls the front. Publishing costs a branch while
 * nobody listens (event_wanted).
 *
 * Two kinds. Route events say what happened to one route: a client wants it or
 * withdrew it, the kernel installed, removed or refused it, or someone else
 * added or deleted a route in a table of fibd's. Rescan events carry a diff:
 * a validated rescan of a table that a diff waits for (t->diff_waiting)
 * begins, reports each difference it finds, and ends.
 */
#ifndef FIBD_EVENT_H
#define FIBD_EVENT_H

#include <stdbool.h>
#include <stdint.h>

#include "kmsg.h"
#include "table.h"

enum event_kind {
	EV_DESIRED,     /* a client wants the route (new or changed) */
	EV_WITHDRAWN,   /* a client withdrew it */
	EV_INSTALLED,   /* the kernel acknowledged it */
	EV_REMOVED,     /* the kernel acknowledged its removal */
	EV_FAILED,      /* the kernel refused it, or its nexthop is unreachable */
	EV_KERNEL_ADD,  /* someone else added or replaced a route in one of fibd's tables */
	EV_KERNEL_DEL,  /* someone else deleted one */
	EV_RESCAN_BEGIN, /* a validated rescan of t is about to be applied */
	EV_DIFF,        /* one difference that rescan found */
	EV_RESCAN_END,  /* it is applied and its repair walk done */
};

enum diff_kind { DIFF_MISSING, DIFF_DIFFERS, DIFF_EXTRA, DIFF_FAILED, DIFF_KINDS };

struct event {
	enum event_kind kind;
	struct rtable *t;
	const struct route *r;     /* route events (not kernel ones), EV_DIFF */
	const char *client;        /* route events: the owner's name, or NULL */
	int err;                   /* EV_FAILED */
	const char *text;          /* EV_FAILED: the kernel's text, or NULL */
	const struct kmsg_rt *kr;  /* EV_KERNEL_*: the route as the kernel said */
	enum diff_kind diff;       /* EV_DIFF */
	const struct rattr *kernel; /* EV_DIFF: what the dump showed, or NULL */
	uint64_t routes;           /* EV_RESCAN_END: routes the dump showed */
	bool unsure;               /* EV_RESCAN_END: an unsure IPv6 dump: absences not trusted */
};

typedef void (*event_sink)(const struct event *ev);

/* event_set_sink - who hears events (one listener: watch). */
void event_set_sink(event_sink sink);

/*
 * Listeners raise event_demand while they want route and kernel events (an
 * open watch); publishers skip building them otherwise. Rescan events go out
 * whenever a diff waits, demand or not.
 */
extern unsigned event_demand;

static inline bool
event_wanted(void)
{
	return event_demand != 0;
}

void event_emit(const struct event *ev);

#endif
