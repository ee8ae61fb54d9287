/*
 * watch: answers that are fed by events rather than read from the tables.
 *
 * `fibctl watch` streams route events as they happen: what clients want, what
 * the kernel acknowledged or refused, and what others changed in fibd's
 * tables. Events are formatted only while a watch is open, into a buffer of
 * WATCH_BUF_MAX per watch; a reader that falls behind loses events (counted and
 * said in the stream), never fibd's memory.
 *
 * `fibctl diff` reports, entry by entry, how a table's next validated dump
 * differs from what clients want: missing, differing, extra (fibd's protocol,
 * wanted by nobody) and failed. The sync engine calls the watch_diff_* hooks
 * while it applies a rescan.
 */
#ifndef FIBD_WATCH_H
#define FIBD_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include <proto-shim/enc.h>

#include "table.h"

#define WATCH_BUF_MAX (256u << 10) /* event text a watch holds for a slow reader */
#define DIFF_SHOW_MAX 10000        /* entries a diff lists; more are only counted */

enum watch_event {
	WE_DESIRED,    /* a client wants the route (new or changed) */
	WE_WITHDRAWN,  /* a client withdrew it */
	WE_INSTALLED,  /* the kernel acknowledged it */
	WE_REMOVED,    /* the kernel acknowledged its removal */
	WE_FAILED,     /* the kernel refused it, or its nexthop is unreachable */
	WE_KERNEL_ADD, /* someone else added or replaced a route in one of fibd's tables */
	WE_KERNEL_DEL, /* someone else deleted one */
};

/* Open watches: events cost nothing while there are none. */
extern unsigned watch_open_count;

/* watch_route - an event about one of fibd's routes; client, err and text may be 0/NULL. */
void watch_route(enum watch_event ev, const struct route *r, const char *client, int err,
    const char *text);

/* watch_kernel - a change by someone else, as the monitor saw it. */
void watch_kernel(enum watch_event ev, const struct rtable *t, const union ps_addr *prefix,
    uint8_t plen, uint8_t tos, uint32_t metric, uint8_t protocol);

enum diff_kind { DIFF_MISSING, DIFF_DIFFERS, DIFF_EXTRA, DIFF_FAILED, DIFF_KINDS };

/* watch_diff_begin - a validated rescan of t is about to be applied: diffs waiting for t collect it. */
void watch_diff_begin(struct rtable *t);
/* watch_diff - one difference the rescan found (kernel: what the dump showed, may be NULL). */
void watch_diff(struct rtable *t, enum diff_kind kind, const struct route *r,
    const struct rattr *kernel);
/*
 * watch_diff_end - the rescan of t is applied and its repair walk done; routes
 * counts its dump. unsure: an IPv6 dump taken while others changed the table
 * (sync.c), whose absences are not trusted: no missing or failed entry came.
 */
void watch_diff_end(struct rtable *t, uint64_t routes, bool unsure);

struct watch;

/* watch_open - a watch of every table of fibd's (table 0) or of table N, both families. */
struct watch *watch_open(void *session, uint32_t req, bool json, uint32_t table);

/*
 * diff_open - a diff of the tables of fibd's that `pick` selects (table 0: all),
 * each from its next validated dump (rescans are asked for here). NULL with
 * err set when there is nothing to diff.
 */
struct watch *diff_open(void *session, uint32_t req, bool json, uint32_t table, char *err,
    size_t errlen);

/* watch_more - what the stream has into out; true when it ended (w is freed then). */
bool watch_more(struct watch *w, struct ps_buf *out);

/* watch_close - the session went: forget the stream. */
void watch_close(struct watch *w);

#endif
