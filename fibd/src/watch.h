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
 * wanted by nobody) and failed, from the rescan events the sync engine
 * publishes while it applies a rescan (event.h).
 */
#ifndef FIBD_WATCH_H
#define FIBD_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include <proto-shim/enc.h>

#include "event.h"
#include "table.h"

#define WATCH_BUF_MAX (256u << 10) /* event text a watch holds for a slow reader */
#define DIFF_SHOW_MAX 10000        /* entries a diff lists; more are only counted */

/* watch_on_event - the event sink (event.h; main.c wires it). */
struct event;
void watch_on_event(const struct event *ev);

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
